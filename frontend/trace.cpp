#include "frontend/trace.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <sstream>

#include "codegen/flush.h"
#include "frontend/autograd.h"

namespace kiln {
namespace {
// The tracer's flushes run through codegen's driver, installed before main. Here, in the file
// that every program making a tensor links, so that the driver is linked with it.
[[maybe_unused]] const bool g_flush_driver_installed = (codegen::install_flush_driver(), true);
}  // namespace

TensorImpl::TensorImpl() = default;  // out of line: user-provided (tensor.h)
TensorImpl::~TensorImpl() = default;

namespace detail {

ir::Operand operand(const Tensor& t) {
  const TensorImpl& impl = *t.unsafeGetTensorImpl();
  return ir::Operand{impl.storage->node, ir::View{impl.sizes, impl.strides, impl.offset}};
}

Tensor wrap(ir::NodePtr node) {
  auto impl = pool::make_shared<TensorImpl>();
  impl->sizes = node->shape;
  impl->strides = contiguous_strides(node->shape);
  impl->dtype = node->dtype;
  impl->storage = tracer::new_storage(std::move(node));
  return Tensor(std::move(impl));
}

namespace {
// Host tensors that may join tensors on a CUDA device, as libtorch lets a CPU scalar: 0-dim ones,
// kiln's scalar constants (detail::constant) broadcast to a shape, and what is computed from those
// alone (a derivative's `e - 1` of a scalar exponent). A constant fill made without a device
// (torch::zeros({2})) is a CPU tensor like any other.
bool device_neutral(const Storage& s, const Tensor& t) {
  return s.cuda_device < 0 &&
         (t.dim() == 0 || s.scalar_derived || (s.node->op == ir::Op::Const && s.node->shape.empty()));
}

[[noreturn]] void mixed_devices(ir::Op op, int first, int second) {
  std::string name = ir::op_name(op);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  throw Error(concat("Expected all tensors to be on the same device, but found at least two devices, ",
                     device_of_index(first), " and ", device_of_index(second), "! (when checking the inputs of ", name,
                     ")"));
}

// The device an op over `inputs` runs on (Storage::cuda_device), or kiln::Error if they are on
// two: the one place every op passes through, so the error comes at the user's line. `neutral`:
// whether every input is device_neutral.
int common_device(ir::Op op, const Tensors& inputs, bool& neutral) {
  int device = -1;
  bool seen = false;
  neutral = inputs.size() > 0;
  for (const auto& t : inputs) {
    const Storage& s = *t.unsafeGetTensorImpl()->storage;
    if (device_neutral(s, t)) continue;
    neutral = false;
    if (!seen) {
      device = s.cuda_device;
      seen = true;
    } else if (s.cuda_device != device) {
      mixed_devices(op, device, s.cuda_device);
    }
  }
  return device;
}
}  // namespace

Tensor record(ir::Op op, Tensors inputs, Shape shape, ScalarType dtype, Attrs attrs, bool broadcast) {
  bool neutral = false;
  const int device = common_device(op, inputs, neutral);
  ir::Node n;
  n.op = op;
  n.dtype = dtype;
  n.cuda_device = int16_t(device);
  n.shape = std::move(shape);
  n.inputs.reserve(inputs.size());
  for (const auto& t : inputs)
    n.inputs.push_back(broadcast ? ir::Operand{t.unsafeGetTensorImpl()->storage->node, expanded_view(t, n.shape)}
                                 : operand(t));
  n.ints = std::move(attrs.ints);
  n.scalar = attrs.scalar;
  Tensor out = wrap(tracer::record(std::move(n)));
  out.unsafeGetTensorImpl()->storage->cuda_device = int16_t(device);
  out.unsafeGetTensorImpl()->storage->scalar_derived = neutral;
  return out;
}

namespace {
struct ConstValue {
  double scalar;
  int64_t int_scalar;
};
ConstValue const_value(const Scalar& value, ScalarType dtype) {
  if (is_integer(dtype)) {  // wrapped to the dtype, as libtorch converts it (int8 + 1000 adds -24)
    const int64_t v = wrap_integer(value.toLong(), dtype);
    return {double(v), v};
  }
  if (dtype == kFloat && !value.isFloatingPoint()) return {double(value.toFloat()), 0};
  return {value.toDouble(), 0};
}
}  // namespace

void set_const_value(ir::Node& n, const Scalar& value) {
  const ConstValue v = const_value(value, n.dtype);
  n.scalar = v.scalar;
  n.int_scalar = v.int_scalar;
}

bool converts_without_overflow(const Scalar& value, ScalarType dtype) {
  constexpr double limit = 9223372036854775808.0;  // 2^63
  const double v = value.toDouble();
  return dtype != kLong || !value.isFloatingPoint() || (v >= -limit && v < limit);
}

const Tensor& constant(const Scalar& value, ScalarType dtype) {
  struct Recent {
    uint64_t bits = 0;
    ScalarType dtype = kFloat;
    std::unique_ptr<Tensor> t;  // never changed once made: a reference to it may be in use
    ir::NodePtr node;           // t's content when made, held so that its address is never another node's
  };
  thread_local std::array<Recent, 16> recent;  // direct-mapped by the value's bits
  // The Tensors that new constants replaced, kept for kRetiredConstants more.
  thread_local std::array<std::unique_ptr<Tensor>, kRetiredConstants> retired;
  thread_local size_t next_retired = 0;
  const ConstValue v = const_value(value, dtype);
  uint64_t bits;  // what tells the value apart: an int64's own bits (its double may be another's)
  if (is_integer(dtype))
    bits = uint64_t(v.int_scalar);
  else
    std::memcpy(&bits, &v.scalar, sizeof bits);
  Recent& slot = recent[((bits + uint64_t(dtype)) * 0x9e3779b97f4a7c15ull) >> 60];
  // Reused only as made (not written in place, not made to require grad), should an op have
  // handed it to the user. (Its node's result is not read here: a flush on another thread may be
  // setting it; a computed constant is still right, read from memory instead of folded.)
  if (slot.t && slot.bits == bits && slot.dtype == dtype && slot.t->unsafeGetTensorImpl()->storage->node == slot.node &&
      !slot.t->requires_grad())
    return *slot.t;
  ir::Node n;
  n.op = ir::Op::Const;
  n.dtype = dtype;
  n.scalar = v.scalar;
  n.int_scalar = v.int_scalar;
  auto impl = pool::make_shared<TensorImpl>();
  impl->dtype = dtype;
  impl->storage = pool::make_shared<Storage>();
  impl->storage->numel = 1;
  impl->storage->dtype = dtype;
  impl->storage->node = tracer::record(std::move(n));  // not pending: see above
  ir::NodePtr node = impl->storage->node;
  retired[next_retired++ % kRetiredConstants] = std::move(slot.t);
  slot = Recent{bits, dtype, std::make_unique<Tensor>(std::move(impl)), std::move(node)};
  return *slot.t;
}

Tensor alias(const Tensor& t, Shape sizes, Shape strides, int64_t offset) {
  auto impl = pool::make_shared<TensorImpl>();
  impl->storage = t.unsafeGetTensorImpl()->storage;
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

int64_t wrap_dim(int64_t dim, int64_t rank, const char* op) {
  const int64_t lo = -std::max<int64_t>(rank, 1), hi = std::max<int64_t>(rank, 1) - 1;
  KILN_CHECK(dim >= lo && dim <= hi, op, ": dimension out of range (expected to be in range of [", lo, ", ", hi,
             "], but got ", dim, ")");
  return dim < 0 ? dim + std::max<int64_t>(rank, 1) : dim;
}

ir::NodePtr record_input(Shape shape, ScalarType dtype, BufferPtr buffer) {
  ir::Node n;
  n.op = ir::Op::Input;
  n.dtype = dtype;
  n.shape = std::move(shape);
  n.result = std::move(buffer);
  return tracer::record(std::move(n));
}

int64_t wrap_existing_dim(const Tensor& t, int64_t dim, const char* op) {
  KILN_CHECK(t.dim() > 0, op, ": dimension specified as ", dim, " but tensor has no dimensions (input ", shape_str(t),
             ")");
  return wrap_dim(dim, t.dim(), op);
}

std::string shape_str(const Tensor& t) {
  std::ostringstream os;
  os << t.sizes().vec() << " " << dtype_name(t.dtype());
  return os.str();
}

}  // namespace detail
}  // namespace kiln
