// Tensor metadata, reading values, autograd accessors, conversions and the in-place path.
#include "frontend/tensor.h"

#include <algorithm>
#include <cstring>

#include "codegen/cuda/launcher.h"
#include "frontend/autograd.h"
#include "frontend/derivatives.h"
#include "frontend/ops.h"
#include "frontend/trace.h"
#include "tracer/view_attr.h"

namespace kiln {

using detail::wrap_existing_dim;

int64_t Tensor::size(int64_t d) const { return impl().sizes[wrap_existing_dim(*this, d, "size")]; }
int64_t Tensor::stride(int64_t d) const { return impl().strides[wrap_existing_dim(*this, d, "stride")]; }

bool Tensor::is_contiguous() const {
  const auto& s = impl().sizes;
  const auto& st = impl().strides;
  int64_t expected = 1;
  for (int i = int(s.size()) - 1; i >= 0; --i) {
    if (s[i] == 1) continue;
    if (st[i] != expected) return false;
    expected *= s[i];
  }
  return true;
}

bool Tensor::is_alias_of(const Tensor& o) const { return impl().storage == o.impl().storage; }

// As libtorch: "CPUFloatType", "CUDAFloatType".
std::string Tensor::toString() const {
  const std::string cpu = torch_type_name(dtype());
  return impl().storage->cuda_device < 0 ? cpu : "CUDA" + cpu.substr(3);
}

// --- reading values ---

namespace {
// Where the tensor's first element is. Read on the host (`host` given), a value in device memory
// is a host copy that `host` holds of the elements the view reaches, made once the device has
// computed it: the host waits here.
const char* element_base(const TensorImpl& impl, BufferPtr* host = nullptr) {
  const BufferPtr& buf = tracer::materialize(*impl.storage);
  const size_t size = element_size(impl.dtype);
  if (host && buf->cuda_device() >= 0) {
    int64_t last = 0;  // the view's last element, from its first
    bool reaches_back = false;
    for (size_t d = 0; d < impl.sizes.size(); ++d) {
      last += std::max<int64_t>(impl.sizes[d] - 1, 0) * impl.strides[d];
      reaches_back |= impl.strides[d] < 0;
    }
    if (reaches_back) {
      *host = codegen::cuda::to_host(buf);
      return static_cast<const char*>((*host)->data()) + impl.offset * size;
    }
    *host = codegen::cuda::to_host(buf, size_t(impl.offset) * size, size_t(last + 1) * size);
    return static_cast<const char*>((*host)->data());
  }
  return static_cast<const char*>(buf->data()) + impl.offset * size;
}

template <typename T>
T convert(const char* p, ScalarType t) {
  return read_element<T>(p, t, 0);
}
}  // namespace

template <typename T>
T Tensor::item() const {
  KILN_CHECK(numel() == 1, "item: a Tensor with ", numel(), " elements cannot be converted to Scalar");
  BufferPtr host;
  return convert<T>(element_base(impl(), &host), dtype());
}

Scalar Tensor::item() const {
  switch (dtype()) {
    case kBool: return Scalar(item<bool>());
    case kLong:
    case kByte:
    case kChar:
    case kShort:
    case kInt: return Scalar(item<int64_t>());
    case kFloat:
    case kDouble:
    case kHalf:
    case kBFloat16: return Scalar(item<double>());
  }
  return Scalar();
}

// data_ptr hands out memory the user may write: what was recorded before runs first (as libtorch
// would have run it), and the storage's value becomes that memory, an Input node of its own, so
// that later ops read the writes instead of folding the constant or the expression it was made by
// (`zeros({2})` filled through the pointer stayed zeros). Not an in-place op: no version bump.
// Ops recorded later read the writes; so does one recorded between taking the pointer and
// writing through it, when it runs (in libtorch it had run before the write).
void* Tensor::data_ptr() const {
  tracer::flush();
  Storage& s = *impl().storage;
  BufferPtr buffer = tracer::materialize(s);
  // Over the caller's memory (from_blob): that memory, as in libtorch; the flush wrote it.
  if (s.memory && s.node == s.memory) return static_cast<char*>(buffer->data()) + impl().offset * element_size(dtype());
  // Another storage (copy_ shares the source's node), the constant cache or a saved value may
  // hold this node or its buffer: the writes are this storage's alone, so it takes a copy then.
  // On a CUDA device (as libtorch's) the pointer is device memory, its value computed when the
  // host gets it (the device's stream has run the work before), and the copy is made there.
  if (s.node.use_count() > 1 || buffer.use_count() > 2) {
    if (buffer->cuda_device() >= 0) {
      buffer = codegen::cuda::device_copy(buffer);
    } else {
      const size_t bytes = size_t(s.numel) * element_size(s.dtype);
      BufferPtr own = make_buffer(bytes);
      if (bytes > 0) std::memcpy(own->data(), buffer->data(), bytes);
      buffer = std::move(own);
    }
  }
  if (s.node->op != ir::Op::Input || s.node->result != buffer) {
    s.node = detail::record_input(s.node->shape, s.node->dtype, buffer);
    s.node->cuda_device = s.cuda_device;
  }
  codegen::cuda::wait_for(*buffer);
  return static_cast<char*>(buffer->data()) + impl().offset * element_size(dtype());
}
const void* Tensor::const_data_ptr() const {
  const char* base = element_base(impl());
  codegen::cuda::wait_for(*impl().storage->node->result);
  return base;
}
template <typename T>
T* Tensor::data_ptr() const {
  KILN_CHECK(dtype() == dtype_of<T>(), "data_ptr: expected scalar type ", dtype_of<T>(), " but found ", dtype());
  return static_cast<T*>(data_ptr());
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  std::vector<T> out;
  out.reserve(numel());
  if (numel() == 0) return out;
  BufferPtr host;
  const char* base = element_base(impl(), &host);
  const size_t es = element_size(dtype());
  const auto& s = impl().sizes;
  const auto& st = impl().strides;
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t n = 0; n < numel(); ++n) {
    int64_t off = 0;
    for (size_t d = 0; d < s.size(); ++d) off += idx[d] * st[d];
    out.push_back(convert<T>(base + off * es, dtype()));
    for (int d = int(s.size()) - 1; d >= 0 && ++idx[d] == s[d]; --d) idx[d] = 0;
  }
  return out;
}

#define KILN_INSTANTIATE(T)           \
  template T Tensor::item<T>() const; \
  template std::vector<T> Tensor::to_vector<T>() const;
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
KILN_INSTANTIATE(int64_t)
KILN_INSTANTIATE(int)
KILN_INSTANTIATE(bool)
KILN_INSTANTIATE(uint8_t)
KILN_INSTANTIATE(int8_t)
KILN_INSTANTIATE(int16_t)
KILN_INSTANTIATE(Half)
KILN_INSTANTIATE(BFloat16)
#undef KILN_INSTANTIATE
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template bool* Tensor::data_ptr<bool>() const;
template uint8_t* Tensor::data_ptr<uint8_t>() const;
template int8_t* Tensor::data_ptr<int8_t>() const;
template int16_t* Tensor::data_ptr<int16_t>() const;
template int32_t* Tensor::data_ptr<int32_t>() const;
template Half* Tensor::data_ptr<Half>() const;
template BFloat16* Tensor::data_ptr<BFloat16>() const;

void sync() { tracer::flush(); }

// --- autograd accessors ---

namespace {
autograd::AutogradMeta& meta(TensorImpl& impl) {
  if (!impl.autograd) impl.autograd = std::make_unique<autograd::AutogradMeta>();
  return *impl.autograd;
}
}  // namespace

bool Tensor::requires_grad() const { return impl().autograd && impl().autograd->requires_grad; }

Tensor& Tensor::requires_grad_(bool r) const {
  KILN_CHECK(is_leaf() || r,
             "requires_grad_: you can only change requires_grad flags of leaf "
             "variables. If you want to use a computed variable in a subgraph that doesn't require "
             "differentiation use var_no_grad = var.detach().");
  KILN_CHECK(!r || is_floating_point(),
             "requires_grad_: only Tensors of floating point dtype can "
             "require gradients (got ",
             dtype(), ")");
  meta(impl()).requires_grad = r;
  return const_cast<Tensor&>(*this);
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  return impl().autograd ? impl().autograd->grad : undefined;
}
Tensor& Tensor::mutable_grad() const { return meta(impl()).grad; }

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  TensorImpl& self = impl();
  if (!self.autograd) return nullptr;
  auto& meta = *self.autograd;
  // A view whose storage was written since its history was made (through its base or another
  // view) takes its history afresh from its base, as PyTorch regenerates a view's grad_fn.
  if (self.view_base && meta.grad_fn && meta.version != self.storage->version) {
    Tensor base(self.view_base);
    const int64_t n = self.storage->numel;
    if (base.storage_offset() == 0 && base.is_contiguous() && base.numel() == n) {
      autograd::AutoGradMode enable(true);
      Tensor fresh = detail::as_strided(base.reshape({n}), ir::View{self.sizes, self.strides, self.offset});
      meta.grad_fn = fresh.grad_fn();
      meta.output_nr = 0;
      meta.requires_grad = fresh.requires_grad();
    }
    meta.version = self.storage->version;
  }
  return meta.grad_fn;
}
bool Tensor::is_leaf() const { return !impl().autograd || !impl().autograd->grad_fn; }
int64_t Tensor::output_nr() const { return impl().autograd ? impl().autograd->output_nr : 0; }
int64_t Tensor::_version() const { return impl().storage->version; }

void Tensor::retain_grad() {
  KILN_CHECK(requires_grad(), "retain_grad: can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf() || retains_grad()) return;
  auto& m = meta(impl());
  m.retains_grad = true;
  m.retain_grad_position = m.next_hook;
  autograd::internal::remember_hooked(*this);
}
bool Tensor::retains_grad() const { return impl().autograd && impl().autograd->retains_grad; }

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      std::optional<TensorList> inputs) const {
  KILN_CHECK(!inputs || !inputs->empty(), "backward: 'inputs' argument to backward cannot be empty");
  autograd::backward({*this}, gradient.defined() ? TensorList{gradient} : TensorList{}, retain_graph, create_graph,
                     inputs.value_or(TensorList{}));
}

Tensor Tensor::detach() const { return detail::alias(*this, impl().sizes, impl().strides, impl().offset); }

Tensor& Tensor::detach_() const {
  impl().autograd.reset();
  return const_cast<Tensor&>(*this);
}

unsigned Tensor::register_hook(std::function<Tensor(Tensor)> hook) const {
  KILN_CHECK(requires_grad(), "register_hook: cannot register a hook on a tensor that doesn't require gradient");
  auto& m = meta(const_cast<TensorImpl&>(impl()));
  m.hooks.emplace_back(m.next_hook, std::move(hook));
  if (m.grad_fn) m.hook_nodes[m.next_hook] = {m.grad_fn, m.output_nr};
  autograd::internal::remember_hooked(*this);
  return m.next_hook++;
}
unsigned Tensor::register_hook(std::function<void(Tensor)> hook) const {
  return register_hook(std::function<Tensor(Tensor)>([hook](Tensor g) {
    hook(g);
    return Tensor();
  }));
}
void Tensor::remove_hook(unsigned handle) const {
  if (!impl().autograd) return;
  auto& hooks = impl().autograd->hooks;
  for (auto it = hooks.begin(); it != hooks.end(); ++it)
    if (it->first == handle) {
      hooks.erase(it);
      impl().autograd->hook_nodes.erase(handle);
      return;
    }
}

// --- conversions and copies ---

Tensor Tensor::to(ScalarType t, bool, bool copy, std::optional<MemoryFormat> memory_format) const {
  const bool relayout = memory_format && *memory_format != MemoryFormat::Preserve;
  if (t == dtype()) {
    if (relayout) return copy ? clone(memory_format) : contiguous(*memory_format);
    return copy ? clone() : *this;
  }
  Tensor cast = detail::primitive(ir::Op::Cast, {*this}, impl().sizes, t);
  return relayout ? cast.contiguous(*memory_format) : cast;
}
namespace {
// A copy of x in the memory of CUDA device `cuda_device` (-1: the host). Differentiable: the
// gradient goes back to x's device, as libtorch's `to`.
struct ToDevice : autograd::Function<ToDevice> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, int64_t cuda_device) {
    ctx->saved_data["from"] = int64_t(x.unsafeGetTensorImpl()->storage->cuda_device);
    Tensor out = detail::record(ir::Op::Copy, {x}, x.sizes().vec(), x.dtype());
    out.unsafeGetTensorImpl()->storage->cuda_device = int16_t(cuda_device);
    out.unsafeGetTensorImpl()->storage->node->cuda_device = int16_t(cuda_device);  // computed there
    return out;
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    return {apply(grads[0], ctx->saved_data["from"].toInt()), Tensor()};
  }
};

Tensor to_device(const Tensor& t, const Device& device) {
  const int64_t target = device.is_cpu() ? -1 : std::max<int64_t>(device.index(), 0);  // cuda: the current, 0
  if (target == t.unsafeGetTensorImpl()->storage->cuda_device) return t;
  return ToDevice::apply(t, target);
}
}  // namespace

Device Tensor::device() const { return detail::device_of_index(impl().storage->cuda_device); }
Tensor Tensor::cpu() const { return to_device(*this, Device(kCPU)); }
Tensor Tensor::cuda() const { return to(Device(kCUDA, 0), dtype()); }
Tensor Tensor::to(Device device, ScalarType t, bool non_blocking, bool copy,
                  std::optional<MemoryFormat> memory_format) const {
  detail::require_device(device.type(), device.index(), "to");
  const Tensor moved = to_device(*this, device);
  return moved.to(t, non_blocking, copy && moved.is_same(*this), memory_format);
}
Tensor Tensor::to(const TensorOptions& o, bool nb, bool copy, std::optional<MemoryFormat> memory_format) const {
  const Tensor moved = o.has_device() ? to_device(*this, o.device()) : *this;
  return moved.to(o.has_dtype() ? o.dtype() : dtype(), nb, copy && moved.is_same(*this), memory_format);
}

namespace {
// libtorch's is_non_overlapping_and_dense: some order of the dims of size above 1 makes the
// strides contiguous.
bool non_overlapping_and_dense(const Shape& sizes, const Shape& strides) {
  std::vector<size_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] >= 2) dims.push_back(d);
  std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (size_t d : dims) {
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// libtorch's infer_dense_strides: dense strides that order the dims as `strides` does (stride 0,
// a broadcast, keeps a dim where it is; equal strides put the smaller size inside).
Shape dense_strides_in_the_order_of(const Shape& sizes, const Shape& strides) {
  const size_t rank = sizes.size();
  std::vector<size_t> perm(rank);  // innermost first
  for (size_t i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
  auto should_swap = [&](size_t a, size_t b) {  // 1: a goes outside b; -1: inside; 0: either
    if (strides[a] == 0 || strides[b] == 0) return 0;
    if (strides[a] != strides[b]) return strides[a] < strides[b] ? -1 : 1;
    return sizes[a] > sizes[b] ? 1 : 0;
  };
  for (size_t i = 1; i < rank; ++i) {  // an insertion sort, stable, as libtorch's
    size_t moving = i;
    for (size_t j = 1; j <= i; ++j) {
      const int comparison = should_swap(perm[i - j], perm[moving]);
      if (comparison > 0) {
        std::swap(perm[i - j], perm[moving]);
        moving = i - j;
      } else if (comparison < 0) {
        break;
      }
    }
  }
  Shape out(rank);
  int64_t stride = 1;
  for (size_t d : perm) {
    out[d] = stride;
    if (sizes[d] > 1) stride *= sizes[d];
  }
  return out;
}

// The strides of a copy of `t` in `format` (for `op`: clone or contiguous).
Shape strides_in_format(const Tensor& t, MemoryFormat format, const char* op) {
  const Shape s = t.sizes(), strides = t.strides();
  switch (format) {
    case MemoryFormat::Contiguous: return contiguous_strides(s);
    case MemoryFormat::Preserve:
      return non_overlapping_and_dense(s, strides) ? strides : dense_strides_in_the_order_of(s, strides);
    case MemoryFormat::ChannelsLast:
      KILN_CHECK(s.size() == 4, op, ": required rank 4 tensor to use channels_last format (got ", detail::shape_str(t),
                 ")");
      return {s[2] * s[3] * s[1], 1, s[3] * s[1], s[1]};
    case MemoryFormat::ChannelsLast3d:
      KILN_CHECK(s.size() == 5, op, ": required rank 5 tensor to use channels_last_3d format (got ",
                 detail::shape_str(t), ")");
      return {s[2] * s[3] * s[4] * s[1], 1, s[3] * s[4] * s[1], s[4] * s[1], s[1]};
  }
  return contiguous_strides(s);
}
}  // namespace

// As libtorch's: by default (Preserve) the copy keeps the layout of a dense input, transposed or
// permuted; other inputs' copies are dense with their dims in the same order.
Tensor Tensor::clone(std::optional<MemoryFormat> memory_format) const {
  const Shape strides = strides_in_format(*this, memory_format.value_or(MemoryFormat::Preserve), "clone");
  if (strides == contiguous_strides(impl().sizes))
    return detail::primitive(ir::Op::Copy, {*this}, impl().sizes, dtype());
  return detail::copy_with_strides(*this, strides);
}
Tensor Tensor::contiguous(MemoryFormat memory_format) const {
  KILN_CHECK(memory_format != MemoryFormat::Preserve,
             "contiguous: preserve memory format is unsupported by the contiguous operator (input ",
             detail::shape_str(*this), ")");
  if (memory_format == MemoryFormat::Contiguous) return is_contiguous() ? *this : clone(memory_format);
  const Shape strides = strides_in_format(*this, memory_format, "contiguous");
  return strides == impl().strides ? *this : clone(memory_format);
}

Tensor& Tensor::copy_(const Tensor& src, bool) const {
  // A leaf source is copied through a node of its own, so that gradients reach it (CopyBackwards).
  const bool leaf_source = autograd::GradMode::is_enabled() && src.requires_grad() && src.is_leaf();
  return assign_(leaf_source ? src.clone(MemoryFormat::Contiguous) : src);
}

// Writing a value with history into a view (PyTorch's CopySlices): the base gets the new content
// through a WriteView primitive, whose backward sends the window's gradient to the value and the
// rest to the base's old history; this view becomes a view of the rewritten base.
Tensor& Tensor::assign_view_with_history(const Tensor& value) const {
  TensorImpl& self = impl();
  Tensor base(self.view_base);
  KILN_CHECK(base.storage_offset() == 0 && base.is_contiguous() && base.numel() == self.storage->numel,
             "in-place op: writing a value that requires grad into a view (", detail::shape_str(*this),
             ") of a tensor that does not own its storage is not supported");
  KILN_CHECK(!(base.requires_grad() && base.is_leaf()),
             "in-place op: a view of a leaf Variable that requires "
             "grad is being used in an in-place operation (view ",
             detail::shape_str(*this), ")");
  const ir::View window{self.sizes, self.strides, self.offset};
  const int64_t n = self.storage->numel;
  Tensor written = detail::primitive(ir::Op::WriteView, {base.reshape({n}), value}, {n}, dtype(),
                                     detail::Attrs{ir::pack_view(window)});
  base.assign_(written.view(base.sizes()));
  Tensor fresh = detail::as_strided(base.reshape({n}), window);
  self.autograd = std::move(fresh.unsafeGetTensorImpl()->autograd);
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::assign_(const Tensor& value_in) const {
  TensorImpl& self = impl();
  const bool grad_mode = autograd::GradMode::is_enabled();
  KILN_CHECK(!(grad_mode && requires_grad() && is_leaf()),
             "in-place op: a leaf Variable that requires grad is being used in an in-place operation.");
  for (int64_t d = 0; d < dim(); ++d)
    KILN_CHECK(self.strides[size_t(d)] != 0 || self.sizes[size_t(d)] <= 1,
               "in-place op: unsupported operation: more than one element of the written-to tensor refers to a "
               "single memory location (",
               detail::shape_str(*this), ", strides ", strides().vec(),
               "). Please clone() the tensor before performing the operation.");
  Tensor value = value_in.to(dtype());
  if (value.sizes() != sizes()) {
    KILN_CHECK(value.dim() <= dim(), "in-place op: output with shape ", sizes().vec(),
               " doesn't match the broadcast shape ", value.sizes().vec());
    value = value.expand(sizes());
  }
  const bool history = grad_mode && value.requires_grad();
  const bool covers_storage = self.offset == 0 && is_contiguous() && numel() == self.storage->numel;
  // Under autograd a write into a view goes through its base (PyTorch's CopySlices), so that the
  // base and its other views see the write in their history too.
  if (grad_mode && self.view_base && (history || Tensor(self.view_base).requires_grad()))
    return assign_view_with_history(value);
  KILN_CHECK(!(history && !covers_storage), "in-place op: writing a value that requires grad into ",
             detail::shape_str(*this), ", which shares its storage without being a view of it, is not supported");
  ir::NodePtr content;
  if (covers_storage && value.is_contiguous() && value.storage_offset() == 0 &&
      value.numel() == value.impl().storage->numel) {
    content = value.impl().storage->node;  // the value's node is exactly the new content
  } else if (covers_storage) {
    ir::Node n;  // the whole storage is overwritten: a copy, no need to read the old content
    n.op = ir::Op::Copy;
    n.dtype = dtype();
    n.shape = self.sizes;
    n.inputs = {detail::operand(value)};
    content = tracer::record(std::move(n));
  } else {
    ir::Node n;
    n.op = ir::Op::WriteView;
    n.dtype = dtype();
    n.shape = {self.storage->numel};
    n.inputs = {ir::Operand{self.storage->node, ir::View{{self.storage->numel}, {1}, 0}}, detail::operand(value)};
    n.ints = ir::pack_view(ir::View{self.sizes, self.strides, self.offset});
    content = tracer::record(std::move(n));
  }
  tracer::set_content(self.storage, std::move(content));
  if (history) {
    detail::set_history(const_cast<Tensor&>(*this), value.grad_fn(), uint32_t(value.output_nr()));
  } else if (grad_mode && requires_grad() && covers_storage) {
    // Overwritten by a value without history: gradients stop here, as they would in PyTorch.
    impl().autograd->grad_fn.reset();
    impl().autograd->requires_grad = false;
  }
  return const_cast<Tensor&>(*this);
}

}  // namespace kiln
