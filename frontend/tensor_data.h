// torch::tensor from values: numbers, std::vectors and nested brace lists of any depth
// (`torch::tensor({{1, 2}, {3, 4}})`), with libtorch's dtype inference: integers give int64,
// floating numbers the default dtype, bools bool. Also the default dtype itself
// (get_default_dtype / set_default_dtype, as caffe2::TypeMeta) and the tensor layout (kStrided).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <vector>

#include "frontend/tensor.h"

namespace kiln {

// libtorch's dtype object (caffe2::TypeMeta), for the APIs that take or return one; kiln's
// tensors answer dtype() with a ScalarType, which converts to and from it.
class TypeMeta {
 public:
  constexpr TypeMeta(ScalarType t = kFloat) : type_(t) {}
  constexpr ScalarType toScalarType() const { return type_; }
  constexpr operator ScalarType() const { return type_; }
  size_t itemsize() const { return element_size(type_); }
  const char* name() const { return dtype_name(type_); }
  template <typename T>
  static constexpr TypeMeta Make() {
    return TypeMeta(dtype_of<T>());
  }

 private:
  ScalarType type_;
};
inline bool operator==(TypeMeta a, TypeMeta b) { return a.toScalarType() == b.toScalarType(); }
inline bool operator!=(TypeMeta a, TypeMeta b) { return !(a == b); }
inline bool operator==(TypeMeta a, ScalarType b) { return a.toScalarType() == b; }
inline bool operator!=(TypeMeta a, ScalarType b) { return !(a == b); }
inline bool operator==(ScalarType a, TypeMeta b) { return a == b.toScalarType(); }
inline bool operator!=(ScalarType a, TypeMeta b) { return !(a == b); }
inline std::ostream& operator<<(std::ostream& os, TypeMeta t) { return os << t.toScalarType(); }
inline constexpr TypeMeta scalarTypeToTypeMeta(ScalarType t) { return TypeMeta(t); }
inline constexpr ScalarType typeMetaToScalarType(TypeMeta t) { return t.toScalarType(); }

// The dtype of floating tensors made without one (tensor(1.5), zeros, rand, arange(0.5, 2)...):
// float32 until set_default_dtype changes it, for the whole process. Only float32 and float64
// can be the default, as in libtorch.
TypeMeta get_default_dtype();
ScalarType get_default_dtype_as_scalartype();
void set_default_dtype(TypeMeta dtype);

namespace detail {

// What one braced value or list is: a number, a list of them, or a std::vector already copied.
// The number kinds are kept apart as libtorch keeps them (an int and an int64_t in one list throw
// there, as a float and a double do); integers all become int64 in the end.
enum class DataKind : uint8_t { Bool, Int, Long, Float, Double };

// torch::detail::TensorDataContainer: the argument of torch::tensor, a scalar or a braced list of
// containers, checked at construction to be rectangular and of one kind.
class TensorDataContainer {
 public:
  TensorDataContainer();  // `{}`: a 1-D tensor with no elements, of the default dtype
  TensorDataContainer(bool v) : scalar_(v), kind_(DataKind::Bool), form_(Form::Scalar) {}
  TensorDataContainer(int v) : scalar_(v), kind_(DataKind::Int), form_(Form::Scalar) {}
  TensorDataContainer(int64_t v) : scalar_(v), kind_(DataKind::Long), form_(Form::Scalar) {}
  TensorDataContainer(float v) : scalar_(v), kind_(DataKind::Float), form_(Form::Scalar) {}
  TensorDataContainer(double v) : scalar_(v), kind_(DataKind::Double), form_(Form::Scalar) {}
  TensorDataContainer(std::initializer_list<TensorDataContainer> list);
  TensorDataContainer(const std::vector<bool>& values);
  TensorDataContainer(const std::vector<int>& values);
  TensorDataContainer(const std::vector<int64_t>& values);
  TensorDataContainer(const std::vector<float>& values);
  TensorDataContainer(const std::vector<double>& values);

  const std::vector<int64_t>& sizes() const { return sizes_; }
  DataKind kind() const { return kind_; }
  bool is_scalar() const { return form_ == Form::Scalar; }
  bool is_init_list() const { return form_ == Form::List; }
  bool is_tensor() const { return form_ == Form::Tensor; }
  // The tensor these values make: `options`' dtype, else the one the values' kind infers.
  Tensor convert_to_tensor(const TensorOptions& options) const;
  void print(std::ostream& os) const;  // as written: {{1, 2}, {3, 4}}

 private:
  enum class Form : uint8_t { Scalar, List, Tensor };
  void fill(void* dst, ScalarType dtype, int64_t& at) const;

  std::vector<int64_t> sizes_;
  Scalar scalar_;
  std::initializer_list<TensorDataContainer> list_;
  Tensor values_;  // a std::vector's copy, in its own dtype
  DataKind kind_;
  Form form_;
};
std::ostream& operator<<(std::ostream& os, const TensorDataContainer& data);

}  // namespace detail

Tensor tensor(detail::TensorDataContainer data, const TensorOptions& options = {});

}  // namespace kiln
