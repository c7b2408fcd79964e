// torch::tensor from numbers, vectors and nested brace lists; the default dtype.
#include "frontend/tensor_data.h"

#include <atomic>
#include <cstring>
#include <ostream>
#include <sstream>

#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln {

namespace {
std::atomic<ScalarType> default_dtype{kFloat};

const char* kind_name(detail::DataKind k) {
  switch (k) {
    case detail::DataKind::Bool: return "Bool";
    case detail::DataKind::Int: return "Int";
    case detail::DataKind::Long: return "Long";
    case detail::DataKind::Float: return "Float";
    case detail::DataKind::Double: return "Double";
  }
  return "";
}

// As libtorch's compute_desired_dtype: integers are int64, floating numbers the default dtype.
ScalarType inferred_dtype(detail::DataKind k) {
  switch (k) {
    case detail::DataKind::Bool: return kBool;
    case detail::DataKind::Int:
    case detail::DataKind::Long: return kLong;
    case detail::DataKind::Float:
    case detail::DataKind::Double: return get_default_dtype_as_scalartype();
  }
  return kFloat;
}

// As libtorch prints them in its messages: "2 3".
std::string sizes_str(const std::vector<int64_t>& s) {
  std::ostringstream os;
  for (size_t i = 0; i < s.size(); ++i) os << (i ? " " : "") << s[i];
  return os.str();
}

// Integers exactly (wrapped to a narrow dtype), floating numbers rounded once.
void store(void* dst, int64_t i, ScalarType t, const Scalar& v) {
  if (v.isFloatingPoint())
    write_element(dst, t, i, v.toDouble());
  else
    write_integer_element(dst, t, i, v.toLong());
}
}  // namespace

TypeMeta get_default_dtype() { return TypeMeta(default_dtype.load(std::memory_order_relaxed)); }
ScalarType get_default_dtype_as_scalartype() { return default_dtype.load(std::memory_order_relaxed); }
void set_default_dtype(TypeMeta dtype) {
  KILN_CHECK(is_floating(dtype.toScalarType()),
             "set_default_dtype: only floating-point types are supported as the default type, got ",
             dtype.toScalarType());
  default_dtype.store(dtype.toScalarType(), std::memory_order_relaxed);
}

namespace detail {

TensorDataContainer::TensorDataContainer() : sizes_{0}, kind_(DataKind::Float), form_(Form::List) {}

TensorDataContainer::TensorDataContainer(std::initializer_list<TensorDataContainer> list)
    : list_(list), kind_(list.size() ? list.begin()->kind() : DataKind::Float), form_(Form::List) {
  if (list.size() == 0) {
    sizes_ = {0};
    return;
  }
  const TensorDataContainer& first = *list.begin();
  for (const auto& e : list) {
    KILN_CHECK(e.sizes() == first.sizes(), "tensor: Expected all sub-lists to have sizes: ", sizes_str(first.sizes()),
               " (e.g. ", first, "), but got sub-list ", e, " with sizes: ", sizes_str(e.sizes()));
    KILN_CHECK(e.kind() == first.kind(),
               "tensor: Expected all elements of the tensor to have the same scalar type: ", kind_name(first.kind()),
               ", but got element of scalar type: ", kind_name(e.kind()));
  }
  sizes_.push_back(int64_t(list.size()));
  sizes_.insert(sizes_.end(), first.sizes().begin(), first.sizes().end());
}

TensorDataContainer::TensorDataContainer(const std::vector<bool>& values)
    : sizes_{int64_t(values.size())}, kind_(DataKind::Bool), form_(Form::Tensor) {
  std::vector<uint8_t> bytes(values.begin(), values.end());
  values_ = copy_of_host_data(bytes.data(), sizes_, kBool);
}
TensorDataContainer::TensorDataContainer(const std::vector<int>& values)
    : sizes_{int64_t(values.size())}, kind_(DataKind::Int), form_(Form::Tensor) {
  std::vector<int64_t> wide(values.begin(), values.end());
  values_ = copy_of_host_data(wide.data(), sizes_, kLong);
}
TensorDataContainer::TensorDataContainer(const std::vector<int64_t>& values)
    : sizes_{int64_t(values.size())}, kind_(DataKind::Long), form_(Form::Tensor) {
  values_ = copy_of_host_data(values.data(), sizes_, kLong);
}
TensorDataContainer::TensorDataContainer(const std::vector<float>& values)
    : sizes_{int64_t(values.size())}, kind_(DataKind::Float), form_(Form::Tensor) {
  values_ = copy_of_host_data(values.data(), sizes_, kFloat);
}
TensorDataContainer::TensorDataContainer(const std::vector<double>& values)
    : sizes_{int64_t(values.size())}, kind_(DataKind::Double), form_(Form::Tensor) {
  values_ = copy_of_host_data(values.data(), sizes_, kDouble);
}

void TensorDataContainer::fill(void* dst, ScalarType dtype, int64_t& at) const {
  switch (form_) {
    case Form::Scalar: store(dst, at++, dtype, scalar_); return;
    case Form::List:
      for (const auto& e : list_) e.fill(dst, dtype, at);
      return;
    case Form::Tensor:
      // As libtorch, which fills lists element by element and cannot fill one from a tensor.
      throw Error(concat("tensor: a std::vector cannot be an element of a braced list (got ", *this, ")"));
  }
}

Tensor TensorDataContainer::convert_to_tensor(const TensorOptions& options) const {
  const ScalarType dtype = options.has_dtype() ? options.dtype() : inferred_dtype(kind_);
  Tensor out;
  if (form_ == Form::Tensor) {
    out = values_.to(dtype);
  } else {
    std::vector<uint8_t> host(size_t(numel_of(Shape(sizes_))) * element_size(dtype));
    int64_t at = 0;
    fill(host.data(), dtype, at);
    out = copy_of_host_data(host.data(), sizes_, dtype);
  }
  if (options.requires_grad()) out.requires_grad_(true);
  return out;
}

void TensorDataContainer::print(std::ostream& os) const {
  switch (form_) {
    case Form::Scalar:
      if (kind_ == DataKind::Bool)
        os << (scalar_.toBool() ? "true" : "false");
      else if (scalar_.isFloatingPoint())
        os << scalar_.toDouble();
      else
        os << scalar_.toLong();
      return;
    case Form::List: {
      os << '{';
      bool first = true;
      for (const auto& e : list_) {
        os << (first ? "" : ", ") << e;
        first = false;
      }
      os << '}';
      return;
    }
    case Form::Tensor: os << "{std::vector of " << sizes_[0] << " elements}"; return;
  }
}

std::ostream& operator<<(std::ostream& os, const TensorDataContainer& data) { return data.print(os), os; }

}  // namespace detail

Tensor tensor(detail::TensorDataContainer data, const TensorOptions& options) {
  return data.convert_to_tensor(options);
}

}  // namespace kiln
