// libtorch's everyday tensor methods that are compositions of kiln's ops (tensor_api.h): each
// records traced ops, so that it fuses with its neighbours and differentiates through them.
#include "frontend/tensor_api.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "frontend/derivatives.h"
#include "frontend/ops.h"
#include "tracer/view_attr.h"

namespace kiln {

using detail::named;
using detail::shape_str;

// --- comparisons with tolerances ---

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  KILN_CHECK(a.dtype() == b.dtype(), "isclose: ", a.dtype(), " did not match ", b.dtype(), " (", shape_str(a), " and ",
             shape_str(b), ")");
  KILN_CHECK(rtol >= 0, "isclose: rtol must be greater than or equal to zero, but got ", rtol);
  KILN_CHECK(atol >= 0, "isclose: atol must be greater than or equal to zero, but got ", atol);
  if (a.dtype() == kBool) return a == b;
  // Integers are compared in the default dtype, as libtorch does.
  const ScalarType t = a.is_floating_point() ? a.dtype() : get_default_dtype_as_scalartype();
  const Tensor x = a.to(t), y = b.to(t);
  Tensor close = x == y;  // equal infinities
  if (equal_nan) close = close || ((x != x) && (y != y));
  const Tensor error = (x - y).abs();
  const Tensor allowed = y.abs() * rtol + atol;
  return close || ((error <= allowed) && (error < std::numeric_limits<double>::infinity()));
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  // In float64, so that kiln compares tensors of different dtypes too (libtorch refuses them).
  return isclose(a.to(kDouble), b.to(kDouble), rtol, atol, equal_nan).all().item<bool>();
}

bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return kiln::allclose(*this, other, rtol, atol, equal_nan);
}
bool Tensor::equal(const Tensor& other) const { return kiln::equal(*this, other); }
Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return kiln::isclose(*this, other, rtol, atol, equal_nan);
}

Tensor Tensor::to(const Tensor& other, bool non_blocking, bool copy, std::optional<MemoryFormat> memory_format) const {
  return to(other.options(), non_blocking, copy, memory_format);
}

// --- resize_ ---

const Tensor& Tensor::resize_(IntArrayRef sizes, std::optional<MemoryFormat>) const {
  KILN_CHECK(!requires_grad(), "resize_: cannot resize variables that require grad (", shape_str(*this), ")");
  KILN_CHECK(int(sizes.size()) <= kMaxDims, "resize_: at most ", kMaxDims, " dimensions are supported, got ",
             sizes.vec());
  for (int64_t s : sizes)
    KILN_CHECK(s >= 0, "resize_: Trying to create tensor with negative dimension ", s, ": ", sizes.vec());
  if (sizes == this->sizes()) return *this;
  // As libtorch: the new sizes view the storage contiguously from the tensor's offset, and the
  // storage grows (here with zeros) when it is too small.
  TensorImpl& self = *unsafeGetTensorImpl();
  const int64_t needed = storage_offset() + numel_of(Shape(sizes));
  const int64_t have = self.storage->numel;
  if (needed > have) {
    Tensor old = detail::alias(*this, Shape{have}, Shape{1}, 0);
    Tensor grown = cat({old, zeros({needed - have}, options())});
    self.storage = grown.unsafeGetTensorImpl()->storage;
    self.view_base.reset();
  }
  self.sizes = Shape(sizes);
  self.strides = contiguous_strides(self.sizes);
  return *this;
}

// --- clamp and where ---

Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  KILN_CHECK((min && min->defined()) || (max && max->defined()),
             "clamp: at least one of 'min' or 'max' must not be None (input ", shape_str(x), ")");
  // A NaN bound gives NaN, as libtorch's; x at a bound keeps its gradient.
  Tensor out = x;
  if (min && min->defined()) out = where((out < *min) || (*min != *min), *min, out);
  if (max && max->defined()) out = where((out > *max) || (*max != *max), *max, out);
  return named(out, "ClampBackward0", {x});
}
Tensor clamp_min(const Tensor& x, const Tensor& min) {
  return named(clamp(x, min, std::nullopt), "ClampMinBackward1", {x});
}
Tensor clamp_max(const Tensor& x, const Tensor& max) {
  return named(clamp(x, std::nullopt, max), "ClampMaxBackward1", {x});
}
Tensor Tensor::clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  return kiln::clamp(*this, min, max);
}
Tensor Tensor::clamp_min(const Tensor& min) const { return kiln::clamp_min(*this, min); }
Tensor Tensor::clamp_max(const Tensor& max) const { return kiln::clamp_max(*this, max); }

Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b) {
  const ScalarType widest = dtype_category(a.type()) >= dtype_category(b.type()) ? a.type() : b.type();
  const ScalarType t = widest == kDouble ? get_default_dtype_as_scalartype() : widest;
  return where(cond, full({}, a, t), full({}, b, t));
}
Tensor Tensor::where(const Tensor& cond, const Scalar& other) const { return kiln::where(cond, *this, other); }

// --- rearrangements ---

Tensor repeat(const Tensor& x, IntArrayRef repeats) {
  KILN_CHECK(int64_t(repeats.size()) >= x.dim(),
             "repeat: Number of dimensions of repeat dims can not be smaller than "
             "number of dimensions of tensor (repeats ",
             repeats.vec(), ", tensor ", shape_str(x), ")");
  for (int64_t r : repeats)
    KILN_CHECK(r >= 0, "repeat: Trying to create tensor with negative dimension ", r, ": ", repeats.vec());
  const size_t lead = repeats.size() - size_t(x.dim());
  // Each dim d becomes [repeats[d], size d], expanded from [1, size d], then merged.
  Shape spread, expanded, out;
  for (size_t d = 0; d < repeats.size(); ++d) {
    const int64_t s = d < lead ? 1 : x.size(int64_t(d - lead));
    spread.insert(spread.end(), {1, s});
    expanded.insert(expanded.end(), {repeats[d], s});
    out.push_back(repeats[d] * s);
  }
  KILN_CHECK(int(spread.size()) <= kMaxDims, "repeat: at most ", kMaxDims / 2, " dims are supported, got repeats ",
             repeats.vec());
  return named(x.reshape(spread).expand(expanded).reshape(out), "RepeatBackward0", {x});
}
Tensor tile(const Tensor& x, IntArrayRef dims) {
  std::vector<int64_t> r(size_t(std::max<int64_t>(x.dim() - int64_t(dims.size()), 0)), 1);
  r.insert(r.end(), dims.begin(), dims.end());
  return repeat(x, r);
}

Tensor flip(const Tensor& x, IntArrayRef dims) {
  std::vector<bool> seen(size_t(std::max<int64_t>(x.dim(), 1)), false);
  Tensor out = x;
  for (int64_t d : dims) {
    d = detail::wrap_dim(d, x.dim(), "flip");
    KILN_CHECK(!seen[size_t(d)], "flip: dim ", d, " appears multiple times in the list of dims (dims ", dims.vec(),
               ")");
    seen[size_t(d)] = true;
    if (x.dim() == 0) continue;
    const int64_t n = x.size(d);
    out = out.index_select(d, arange(n - 1, -1, -1).to(x.device()));
  }
  return named(out, "FlipBackward0", {x});
}

Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims) {
  if (dims.size() == 0) {
    KILN_CHECK(shifts.size() == 1, "roll: shifts and dimensions must align. shifts: ", shifts.size(), ", dims:0");
    return named(roll(x.flatten(), shifts, {0}).view(x.sizes()), "RollBackward0", {x});
  }
  KILN_CHECK(shifts.size() == dims.size(), "roll: shifts and dimensions must align. shifts: ", shifts.size(),
             ", dims:", dims.size());
  Tensor out = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = detail::wrap_existing_dim(x, dims[i], "roll");
    const int64_t n = x.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    out = cat({out.narrow(d, n - s, s), out.narrow(d, 0, n - s)}, d);
  }
  return named(out, "RollBackward0", {x});
}

namespace {
// Elements with column - row <= diagonal (lower) or >= diagonal (upper) in the last two dims.
Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, const char* op) {
  KILN_CHECK(x.dim() >= 2, op, ": input tensor must have at least 2 dimensions (got ", shape_str(x), ")");
  const TensorOptions on_x = TensorOptions(kLong).device(x.device());
  const Tensor offset = arange(x.size(-1), on_x).unsqueeze(0) - arange(x.size(-2), on_x).unsqueeze(1);
  const Tensor keep = lower ? offset <= diagonal : offset >= diagonal;
  return where(keep, x, zeros({}, x.dtype()));
}
}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) {
  return named(triangle(x, diagonal, true, "tril"), "TrilBackward0", {x});
}
Tensor triu(const Tensor& x, int64_t diagonal) {
  return named(triangle(x, diagonal, false, "triu"), "TriuBackward0", {x});
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t d1 = detail::wrap_dim(dim1, x.dim(), "diagonal"), d2 = detail::wrap_dim(dim2, x.dim(), "diagonal");
  KILN_CHECK(d1 != d2, "diagonal: diagonal dimensions cannot be identical ", dim1, ", ", dim2, " (input ", shape_str(x),
             ")");
  const Shape rel = contiguous_strides(x.sizes().vec());
  int64_t length = offset >= 0 ? std::min(x.size(d1), x.size(d2) - offset) : std::min(x.size(d1) + offset, x.size(d2));
  length = std::max<int64_t>(length, 0);
  const int64_t start1 = offset >= 0 ? 0 : -offset, start2 = offset >= 0 ? offset : 0;
  int64_t off = x.storage_offset(), rel_off = 0;
  if (length > 0) {
    off += start1 * x.stride(d1) + start2 * x.stride(d2);
    rel_off = start1 * rel[d1] + start2 * rel[d2];
  }
  Shape sizes, strides, rel_strides;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != d1 && d != d2) {
      sizes.push_back(x.size(d));
      strides.push_back(x.stride(d));
      rel_strides.push_back(rel[d]);
    }
  sizes.push_back(length);
  strides.push_back(x.stride(d1) + x.stride(d2));
  rel_strides.push_back(rel[d1] + rel[d2]);
  return named(detail::view(x, detail::ViewKind::Strided, sizes, strides, off,
                            detail::Attrs{ir::pack_view(ir::View{sizes, rel_strides, rel_off})}),
               "DiagonalBackward0", {x});
}

Tensor diag(const Tensor& x, int64_t k) {
  KILN_CHECK(x.dim() == 1 || x.dim() == 2, "diag: matrix or a vector expected, got ", shape_str(x));
  if (x.dim() == 2) return named(diagonal(x, k).clone(MemoryFormat::Contiguous), "DiagBackward0", {x});
  const int64_t n = x.size(0) + std::abs(k);
  // x written into the k-th diagonal of an n x n zero matrix.
  const ir::View diagonal_window{{x.size(0)}, {n + 1}, k >= 0 ? k : -k * n};
  return named(detail::embed(x.contiguous(), {n, n}, diagonal_window), "DiagBackward0", {x});
}

Tensor trace(const Tensor& x) {
  KILN_CHECK(x.dim() == 2, "trace: expected a matrix, but got tensor with dim ", x.dim(), " (", shape_str(x), ")");
  return named(diagonal(x).sum(), "TraceBackward0", {x});
}

std::vector<Tensor> split_with_sizes(const Tensor& x, IntArrayRef split_sizes, int64_t dim) {
  const int64_t d = detail::wrap_existing_dim(x, dim, "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    KILN_CHECK(s >= 0, "split_with_sizes: split_sizes must be non-negative, but got split_sizes=", split_sizes.vec());
    total += s;
  }
  KILN_CHECK(total == x.size(d), "split_with_sizes expects split_sizes to sum exactly to ", x.size(d),
             " (input tensor's size at dimension ", d, "), but got split_sizes=", split_sizes.vec());
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(x.narrow(d, start, s));
    start += s;
  }
  return out;
}
std::vector<Tensor> split(const Tensor& x, IntArrayRef split_sizes, int64_t dim) {
  return split_with_sizes(x, split_sizes, dim);
}
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) { return x.split(split_size, dim); }
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) { return x.chunk(chunks, dim); }

Tensor Tensor::repeat(IntArrayRef repeats) const { return kiln::repeat(*this, repeats); }
Tensor Tensor::tile(IntArrayRef dims) const { return kiln::tile(*this, dims); }
Tensor Tensor::flip(IntArrayRef dims) const { return kiln::flip(*this, dims); }
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const { return kiln::roll(*this, shifts, dims); }
Tensor Tensor::tril(int64_t diagonal) const { return kiln::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return kiln::triu(*this, diagonal); }
Tensor& Tensor::tril_(int64_t diagonal) const { return assign_(kiln::tril(*this, diagonal)); }
Tensor& Tensor::triu_(int64_t diagonal) const { return assign_(kiln::triu(*this, diagonal)); }
Tensor Tensor::diag(int64_t diagonal) const { return kiln::diag(*this, diagonal); }
Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  return kiln::diagonal(*this, offset, dim1, dim2);
}
Tensor Tensor::trace() const { return kiln::trace(*this); }
std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef split_sizes, int64_t dim) const {
  return kiln::split_with_sizes(*this, split_sizes, dim);
}
std::vector<Tensor> Tensor::split(IntArrayRef split_sizes, int64_t dim) const {
  return kiln::split_with_sizes(*this, split_sizes, dim);
}

}  // namespace kiln
