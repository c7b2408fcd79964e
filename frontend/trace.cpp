#include "frontend/trace.h"

#include <sstream>

#include "frontend/autograd.h"

namespace kiln {

TensorImpl::~TensorImpl() = default;

namespace detail {

ir::Operand operand(const Tensor& t) {
  const TensorImpl& impl = *t.unsafeGetTensorImpl();
  return ir::Operand{impl.storage->node, ir::View{impl.sizes, impl.strides, impl.offset}};
}

Tensor wrap(ir::NodePtr node) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = node->shape;
  impl->strides = contiguous_strides(node->shape);
  impl->dtype = node->dtype;
  impl->storage = tracer::new_storage(std::move(node));
  return Tensor(std::move(impl));
}

Tensor record(ir::Op op, const TensorList& inputs, Shape shape, ScalarType dtype, Attrs attrs) {
  ir::Node n;
  n.op = op;
  n.dtype = dtype;
  n.shape = std::move(shape);
  n.inputs.reserve(inputs.size());
  for (const auto& t : inputs) n.inputs.push_back(operand(t));
  n.ints = std::move(attrs.ints);
  n.scalar = attrs.scalar;
  return wrap(tracer::record(std::move(n)));
}

Tensor alias(const Tensor& t, Shape sizes, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.unsafeGetTensorImpl()->storage;
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

int64_t wrap_dim(int64_t dim, int64_t rank, const char* op) {
  const int64_t lo = -std::max<int64_t>(rank, 1), hi = std::max<int64_t>(rank, 1) - 1;
  KILN_CHECK(dim >= lo && dim <= hi, op, ": dimension out of range (expected to be in range of [", lo,
             ", ", hi, "], but got ", dim, ")");
  return dim < 0 ? dim + std::max<int64_t>(rank, 1) : dim;
}

std::string shape_str(const Tensor& t) {
  std::ostringstream os;
  os << t.sizes().vec() << " " << dtype_name(t.dtype());
  return os.str();
}

}  // namespace detail
}  // namespace kiln
