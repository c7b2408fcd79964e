// kiln::Tensor: a handle to a strided view of a lazily computed storage, with autograd metadata.
// Every op records IR and returns at once; values are computed when something reads them.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "frontend/accessor.h"
#include "frontend/device.h"
#include "frontend/scalar.h"
#include "runtime/error.h"
#include "runtime/shape.h"

namespace kiln {

struct Storage;
class Tensor;
using TensorList = std::vector<Tensor>;
namespace autograd {
class Node;
struct AutogradMeta;
}  // namespace autograd
namespace indexing {
class TensorIndex;  // indexing.h
}  // namespace indexing

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape sizes, strides;
  int64_t offset = 0;
  ScalarType dtype = kFloat;
  std::unique_ptr<autograd::AutogradMeta> autograd;  // null until autograd needs it
  std::shared_ptr<TensorImpl> view_base;  // for views: the tensor viewed (in-place writes update its history)
  // User-provided (trace.cpp), so that make_shared's value-initialization does not first zero
  // the whole impl (the shapes' unused dimensions too: a `rep stos`, half of making a tensor).
  TensorImpl();
  ~TensorImpl();
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // --- metadata ---
  bool defined() const { return impl_ != nullptr; }
  IntArrayRef sizes() const { return impl().sizes; }
  IntArrayRef strides() const { return impl().strides; }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return int64_t(impl().sizes.size()); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return numel_of(impl().sizes); }
  ScalarType dtype() const { return impl().dtype; }
  ScalarType scalar_type() const { return impl().dtype; }
  int64_t storage_offset() const { return impl().offset; }
  bool is_contiguous() const;
  bool is_floating_point() const { return is_floating(dtype()); }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  bool is_alias_of(const Tensor& o) const;
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  std::string toString() const;
  TensorImpl* unsafeGetTensorImpl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // --- reading values (these flush) ---
  template <typename T>
  T item() const;
  Scalar item() const;
  template <typename T>
  T* data_ptr() const;
  void* data_ptr() const;              // for writing too: later ops read the memory (tensor.cpp)
  const void* const_data_ptr() const;  // for reading only (as libtorch 2's)
  // a[i][j] over data_ptr<T>()'s memory (frontend/accessor.h), T and N checked as libtorch does;
  // not on a temporary, whose sizes the accessor would outlive.
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() const& {
    static_assert(N > 0, "accessor is used for indexing tensor, for scalars use *data_ptr<T>()");
    KILN_CHECK(dim() == int64_t(N), "TensorAccessor expected ", N, " dims but tensor has ", dim());
    return TensorAccessor<T, N>(data_ptr<T>(), sizes().data(), strides().data());
  }
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() && = delete;
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
  GenericPackedTensorAccessor<T, N, PtrTraits, index_t> generic_packed_accessor() const& {
    static_assert(N > 0, "accessor is used for indexing tensor, for scalars use *data_ptr<T>()");
    KILN_CHECK(dim() == int64_t(N), "TensorAccessor expected ", N, " dims but tensor has ", dim());
    return GenericPackedTensorAccessor<T, N, PtrTraits, index_t>(data_ptr<T>(), sizes().data(), strides().data());
  }
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor32<T, N, PtrTraits> packed_accessor32() const& {
    KILN_CHECK(numel() <= int64_t(INT32_MAX),
               "numel needs to be smaller than int32_t max; otherwise, please use packed_accessor64");
    return generic_packed_accessor<T, N, PtrTraits, int32_t>();
  }
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor64<T, N, PtrTraits> packed_accessor64() const& {
    return generic_packed_accessor<T, N, PtrTraits, int64_t>();
  }
  template <typename T>
  std::vector<T> to_vector() const;  // contiguous copy of the values

  // --- autograd ---
  bool requires_grad() const;
  Tensor& requires_grad_(bool r = true) const;
  Tensor& set_requires_grad(bool r) const { return requires_grad_(r); }
  const Tensor& grad() const;
  Tensor& mutable_grad() const;
  std::shared_ptr<autograd::Node> grad_fn() const;
  bool is_leaf() const;
  int64_t output_nr() const;
  int64_t _version() const;
  void retain_grad();
  bool retains_grad() const;
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                std::optional<TensorList> inputs = std::nullopt) const;
  Tensor detach() const;
  Tensor& detach_() const;
  // Hooks see the gradient of this tensor; one returning a tensor replaces the gradient.
  unsigned register_hook(std::function<Tensor(Tensor)> hook) const;
  unsigned register_hook(std::function<void(Tensor)> hook) const;
  template <typename F>
  unsigned register_hook(F&& f) const {
    if constexpr (std::is_same_v<std::invoke_result_t<F, Tensor>, void>)
      return register_hook(std::function<void(Tensor)>(std::forward<F>(f)));
    else
      return register_hook(std::function<Tensor(Tensor)>(std::forward<F>(f)));
  }
  void remove_hook(unsigned handle) const;

  // --- conversion and copies ---
  // A memory format other than Preserve lays the result out so (a copy where it differs).
  Tensor to(ScalarType t, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor to(const TensorOptions& o = {}, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor toType(ScalarType t) const { return to(t); }
  Tensor type_as(const Tensor& o) const { return to(o.dtype()); }
  Tensor clone(std::optional<MemoryFormat> memory_format = std::nullopt) const;  // nullopt: Preserve
  Tensor contiguous(MemoryFormat memory_format = MemoryFormat::Contiguous) const;
  Tensor cpu() const;
  Tensor cuda() const;  // to the current CUDA device (cuda:0)
  Tensor to(Device device, ScalarType t, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Device device() const;
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  int64_t get_device() const { return device().is_cuda() ? device().index() : -1; }
  Tensor& copy_(const Tensor& src, bool non_blocking = false) const;

  // --- views (share storage) ---
  Tensor view(IntArrayRef shape) const;
  Tensor reshape(IntArrayRef shape) const;
  Tensor view_as(const Tensor& o) const { return view(o.sizes()); }
  Tensor reshape_as(const Tensor& o) const { return reshape(o.sizes()); }
  Tensor t() const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor expand(IntArrayRef sizes, bool implicit = false) const;
  Tensor expand_as(const Tensor& o) const { return expand(o.sizes()); }
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;

  // --- elementwise ---
  // x.name() and x.name_() of each op in frontend/elementwise_ops.def.
#define KILN_UNARY(name) \
  Tensor name() const;   \
  Tensor& name##_() const;
#define KILN_BINARY(name)                     \
  Tensor name(const Tensor& other) const;     \
  Tensor name(const Scalar& other) const;     \
  Tensor& name##_(const Tensor& other) const; \
  Tensor& name##_(const Scalar& other) const;
#include "frontend/elementwise_ops.def"
  // frontend/math_ops.h's
  Tensor lerp(const Tensor& end, const Scalar& weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor logit(std::optional<double> eps = std::nullopt) const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor nan_to_num(std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  Tensor gelu(const std::string& approximate = "none") const;
  Tensor pow(const Tensor& e) const;
  Tensor pow(const Scalar& e) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp_min(const Scalar& min) const { return clamp(min, std::nullopt); }
  Tensor clamp_max(const Scalar& max) const { return clamp(std::nullopt, max); }
  Tensor add(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& o) const;
  Tensor mul(const Scalar& o) const;
  Tensor div(const Tensor& o) const;
  Tensor div(const Scalar& o) const;
  Tensor div(const Tensor& o, std::optional<std::string_view> rounding_mode) const;
  Tensor div(const Scalar& o, std::optional<std::string_view> rounding_mode) const;
  Tensor floor_divide(const Tensor& o) const;
  Tensor floor_divide(const Scalar& o) const;
  // frontend/integer_ops.def's bitwise ops, and libtorch's names of their operators.
#define KILN_INTEGER_BINARY(name, op)         \
  Tensor name(const Tensor& other) const;     \
  Tensor name(const Scalar& other) const;     \
  Tensor& name##_(const Tensor& other) const; \
  Tensor& name##_(const Scalar& other) const;
#define KILN_INTEGER_UNARY(name, op) \
  Tensor name() const;               \
  Tensor& name##_() const;
#define KILN_INTEGER_OPERATOR(dunder, name)       \
  Tensor __##dunder##__(const Tensor& o) const;   \
  Tensor __##dunder##__(const Scalar& o) const;   \
  Tensor& __i##dunder##__(const Tensor& o) const; \
  Tensor& __i##dunder##__(const Scalar& o) const;
#include "frontend/integer_ops.def"
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor eq(const Tensor& o) const;
  Tensor eq(const Scalar& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor ne(const Scalar& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor lt(const Scalar& o) const;
  Tensor le(const Tensor& o) const;
  Tensor le(const Scalar& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor gt(const Scalar& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor ge(const Scalar& o) const;
  Tensor logical_not() const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
  Tensor where(const Tensor& cond, const Tensor& other) const;  // cond ? self : other

  // --- reductions ---
  Tensor sum(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  // var(false) takes the flag and var(1) or var({1}) a dim, as in libtorch: a plain bool overload
  // would take an integer before IntArrayRef does (var(1) reduced every dim, unbiased).
  Tensor var() const { return var(IntArrayRef{}); }
  template <typename Bool, typename = std::enable_if_t<std::is_same_v<Bool, bool>>>
  Tensor var(Bool unbiased) const {
    return var(IntArrayRef{}, unbiased);
  }
  Tensor var(IntArrayRef dims, bool unbiased = true, bool keepdim = false) const;
  Tensor std() const { return std(IntArrayRef{}); }
  template <typename Bool, typename = std::enable_if_t<std::is_same_v<Bool, bool>>>
  Tensor std(Bool unbiased) const {
    return std(IntArrayRef{}, unbiased);
  }
  Tensor std(IntArrayRef dims, bool unbiased = true, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2) const;
  Tensor norm(const Scalar& p, IntArrayRef dims, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dims, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;

  // --- scans and orderings along a dim (scan_sort.h) ---
  Tensor cumsum(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor& cumsum_(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor& cumprod_(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor logcumsumexp(int64_t dim) const;
  std::tuple<Tensor, Tensor> cummax(int64_t dim) const;
  std::tuple<Tensor, Tensor> cummin(int64_t dim) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> sort(std::optional<bool> stable, int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(bool stable, int64_t dim = -1, bool descending = false) const;
  // argsort(1): a dim (an int converts as well to bool as to int64_t, ambiguous in libtorch).
  template <typename Int, typename = std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>>>
  Tensor argsort(Int dim, bool descending = false) const {
    return argsort(int64_t(dim), descending);
  }
  Tensor msort() const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  std::tuple<Tensor, Tensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;
  Tensor median() const;
  std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false) const;
  Tensor nanmedian() const;
  std::tuple<Tensor, Tensor> nanmedian(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> mode(int64_t dim = -1, bool keepdim = false) const;

  // --- linear algebra and indexing ---
  Tensor matmul(const Tensor& o) const;
  Tensor mm(const Tensor& o) const;
  Tensor bmm(const Tensor& o) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;

  // --- in place (bump the version counter) ---
  // const, as libtorch's: a Tensor is a handle, so `w.grad().zero_()` writes through a const one.
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor& add_(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor& sub_(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor& mul_(const Tensor& o) const;
  Tensor& mul_(const Scalar& o) const;
  Tensor& div_(const Tensor& o) const;
  Tensor& div_(const Scalar& o) const;
  Tensor& div_(const Tensor& o, std::optional<std::string_view> rounding_mode) const;
  Tensor& div_(const Scalar& o, std::optional<std::string_view> rounding_mode) const;
  Tensor& floor_divide_(const Tensor& o) const;
  Tensor& floor_divide_(const Scalar& o) const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor& zero_() const;
  Tensor& fill_(const Scalar& v) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;
  Tensor& addcmul_(const Tensor& a, const Tensor& b, const Scalar& value = 1) const;
  Tensor& addcdiv_(const Tensor& a, const Tensor& b, const Scalar& value = 1) const;
  Tensor& lerp_(const Tensor& end, const Scalar& weight) const;
  Tensor& lerp_(const Tensor& end, const Tensor& weight) const;
  Tensor& logit_(std::optional<double> eps = std::nullopt) const;
  Tensor& nan_to_num_(std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                      std::optional<double> neginf = std::nullopt) const;
  Tensor& pow_(const Tensor& exponent) const;
  Tensor& pow_(const Scalar& exponent) const;
  Tensor& clamp_min_(const Scalar& min) const { return clamp_(min, std::nullopt); }
  Tensor& clamp_max_(const Scalar& max) const { return clamp_(std::nullopt, max); }
  // Random fills from kiln's generator, which draws libtorch's CPU stream (same seed, same values).
  Tensor& uniform_(double from = 0, double to = 1) const;
  Tensor& normal_(double mean = 0, double std = 1) const;
  Tensor& bernoulli_(double p = 0.5) const;  // 1 with probability p, else 0
  Tensor& operator+=(const Tensor& o) { return add_(o); }
  Tensor& operator+=(const Scalar& o) { return add_(o); }
  Tensor& operator-=(const Tensor& o) { return sub_(o); }
  Tensor& operator-=(const Scalar& o) { return sub_(o); }
  Tensor& operator*=(const Tensor& o) { return mul_(o); }
  Tensor& operator*=(const Scalar& o) { return mul_(o); }
  Tensor& operator/=(const Tensor& o) { return div_(o); }
  Tensor& operator/=(const Scalar& o) { return div_(o); }
  Tensor operator-() const { return neg(); }
  Tensor operator~() const;  // bitwise_not

  // Replaces this tensor's values (and, under autograd, its history) with `value` computed out
  // of place: the one path every in-place op takes.
  Tensor& assign_(const Tensor& value) const;
  Tensor& assign_view_with_history(const Tensor& value) const;

  // --- libtorch's everyday API, in breadth (tensor_api.h, indexing.h, tensor_api.cpp) ---
  // Gives the tensor `sizes`, keeping its first elements in order; new ones are zero (libtorch
  // leaves them uninitialized). Not for tensors that require grad.
  const Tensor& resize_(IntArrayRef sizes, std::optional<MemoryFormat> memory_format = std::nullopt) const;
  bool allclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false) const;
  bool equal(const Tensor& other) const;
  Tensor isclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false) const;
  size_t nbytes() const { return size_t(numel()) * kiln::element_size(dtype()); }
  int64_t element_size() const { return int64_t(kiln::element_size(dtype())); }
  static size_t element_size(ScalarType t) { return kiln::element_size(t); }  // unhidden for members
  int64_t itemsize() const { return element_size(); }
  Layout layout() const { return kStrided; }
  bool is_sparse() const { return false; }
  Tensor to(const Tensor& other, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  // x.index({Slice(1, None), 0, "...", mask}): libtorch's indexing (indexing.h), and its writes.
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& rhs) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& v) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& rhs) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& v) const;
  // accumulate: adds rhs at the positions, repeated positions summed (libtorch's accumulate=true).
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& rhs, bool accumulate) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& rhs, bool accumulate) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor nonzero() const;
  Tensor repeat(IntArrayRef repeats) const;
  Tensor tile(IntArrayRef dims) const;
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor& tril_(int64_t diagonal = 0) const;
  Tensor& triu_(int64_t diagonal = 0) const;
  Tensor diag(int64_t diagonal = 0) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor trace() const;
  std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> split(IntArrayRef split_sizes, int64_t dim = 0) const;
  Tensor clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt) const;
  Tensor clamp_min(const Tensor& min) const;
  Tensor clamp_max(const Tensor& max) const;
  Tensor where(const Tensor& cond, const Scalar& other) const;

 private:
  TensorImpl& impl() const {
    KILN_CHECK(impl_, "tensor: operation on an undefined tensor");
    return *impl_;
  }
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Binary operators with tensors or numbers on either side.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator&&(const Tensor& a, const Tensor& b);
Tensor operator||(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, const Scalar& b);
Tensor operator|(const Tensor& a, const Scalar& b);
Tensor operator^(const Tensor& a, const Scalar& b);
Tensor operator&(const Scalar& a, const Tensor& b);
Tensor operator|(const Scalar& a, const Tensor& b);
Tensor operator^(const Scalar& a, const Tensor& b);

// Forces every pending value of this thread's segment to be computed.
void sync();

}  // namespace kiln
