// Scans and orderings along a dim, with libtorch's names and signatures: cumulative sums,
// products, extremes and logsumexp; sort, topk, kthvalue, median and mode; binary search into
// sorted rows; unique values. The scans and the orderings are library ops of the op table
// (tracer/ops.def, kinds Scan and Sort); an ordering gives positions, and its values are gathered
// at them, so their gradient goes to the positions picked. NaN sorts above every number, and sort
// is stable, as libtorch's CPU sort.
#pragma once
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "frontend/tensor.h"

namespace kiln {

// Integer and bool inputs accumulate in int64, unless `dtype` says otherwise.
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
// The running maximum (minimum) and where it was found: a NaN takes over until the next NaN, and
// among equal values the latest.
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);
Tensor logcumsumexp(const Tensor& x, int64_t dim);

// Values and their positions in x; `stable` is accepted for libtorch's signature (every sort here
// is stable).
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
std::tuple<Tensor, Tensor> sort(const Tensor& x, std::optional<bool> stable, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, bool stable, int64_t dim = -1, bool descending = false);
// argsort(x, 1): a dim (an int converts as well to bool as to int64_t, ambiguous in libtorch).
template <typename Int, typename = std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>>>
Tensor argsort(const Tensor& x, Int dim, bool descending = false) {
  return argsort(x, int64_t(dim), descending);
}
Tensor msort(const Tensor& x);  // sorted along dim 0
// The k largest (smallest) along dim; with sorted=false in libtorch's order, which is not sorted.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
// The k-th smallest (k from 1) along dim.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim = -1, bool keepdim = false);
// The lower median (NaN if there is a NaN); nanmedian leaves NaNs out. Of the whole tensor, the
// gradient is shared among the entries equal to the median, as libtorch's.
Tensor median(const Tensor& x);
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor nanmedian(const Tensor& x);
std::tuple<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim = false);
// The most frequent value (the smallest of those) and the position of its last occurrence.
std::tuple<Tensor, Tensor> mode(const Tensor& x, int64_t dim = -1, bool keepdim = false);

// Where each value would be inserted into the innermost rows of sorted_sequence (1-D, or with the
// values' leading dims) to keep them sorted: before equal entries, or after them with right=true
// or side="right". `sorter` sorts an unsorted sequence (argsort's result). int64 positions:
// out_int32 is not supported (kiln has no int32 tensors).
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false, bool right = false,
                    std::optional<std::string_view> side = std::nullopt,
                    const std::optional<Tensor>& sorter = std::nullopt);
Tensor searchsorted(const Tensor& sorted_sequence, const Scalar& value, bool out_int32 = false, bool right = false,
                    std::optional<std::string_view> side = std::nullopt,
                    const std::optional<Tensor>& sorter = std::nullopt);
// The bucket of each value among 1-D boundaries: searchsorted(boundaries, x, out_int32, right).
Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool out_int32 = false, bool right = false);
Tensor bucketize(const Scalar& x, const Tensor& boundaries, bool out_int32 = false, bool right = false);

// Unique values (ATen's functions behind torch.unique), always sorted; each NaN is a value of its
// own. The inverse (shaped as x) and the counts are empty unless asked for. These read the values
// (a flush), since the result's size depends on them, and have no gradient, as in libtorch.
std::tuple<Tensor, Tensor> _unique(const Tensor& x, bool sorted = true, bool return_inverse = false);
std::tuple<Tensor, Tensor, Tensor> _unique2(const Tensor& x, bool sorted = true, bool return_inverse = false,
                                            bool return_counts = false);
// Unique slices along dim, sorted lexicographically.
std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& x, int64_t dim, bool sorted = true,
                                              bool return_inverse = false, bool return_counts = false);
// Runs of equal values (or, with dim, of equal slices along it) collapsed to one.
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& x, bool return_inverse = false,
                                                      bool return_counts = false,
                                                      std::optional<int64_t> dim = std::nullopt);

}  // namespace kiln
