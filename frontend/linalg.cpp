// matmul and friends, indexing ops, and cat/stack.
#include "frontend/derivatives.h"
#include "frontend/ops.h"

namespace kiln {

using detail::named;
using detail::primitive;
using detail::wrap_dim;
using ir::Op;

namespace {

// [B,M,K] x [B,K,N] -> [B,M,N], the one matmul primitive; inputs may be views (a transpose or a
// broadcast batch costs no copy).
Tensor batched(const Tensor& a, const Tensor& b) {
  return primitive(Op::Matmul, {a, b}, {a.size(0), a.size(1), b.size(2)}, a.dtype());
}

void check_matmul_dtypes(const Tensor& a, const Tensor& b, const char* op) {
  KILN_CHECK(a.dtype() == b.dtype(), op, ": expected both inputs to have the same dtype, but got ",
             detail::shape_str(a), " and ", detail::shape_str(b));
  KILN_CHECK(a.dtype() != kBool, op, ": bool inputs are not supported (", detail::shape_str(a), ")");
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.dim() == 2 && b.dim() == 2, "mm: expected 2-D tensors, got ", detail::shape_str(a), " and ",
             detail::shape_str(b));
  KILN_CHECK(a.size(1) == b.size(0), "mm: mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x", a.size(1),
             " and ", b.size(0), "x", b.size(1), ")");
  check_matmul_dtypes(a, b, "mm");
  return named(batched(a.unsqueeze(0), b.unsqueeze(0)).squeeze(0), "MmBackward0", {a, b});
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-D tensors, got ", detail::shape_str(a), " and ",
             detail::shape_str(b));
  KILN_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1), "bmm: shapes cannot be multiplied (", a.sizes().vec(),
             " and ", b.sizes().vec(), ")");
  check_matmul_dtypes(a, b, "bmm");
  return batched(a, b);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: both arguments need to be at least 1D, but they are ", a.dim(),
             "D and ", b.dim(), "D");
  check_matmul_dtypes(a, b, "matmul");
  if (a.dim() == 1 && b.dim() == 1) {
    KILN_CHECK(a.size(0) == b.size(0), "matmul: inconsistent tensor size, expected tensor [", a.size(0), "] and src [",
               b.size(0), "] to have the same number of elements");
    return named(mm(a.unsqueeze(0), b.unsqueeze(1)).reshape({}), "DotBackward0", {a, b});
  }
  if (a.dim() <= 2 && b.dim() <= 2) {
    Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a, b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
    KILN_CHECK(a2.size(1) == b2.size(0), "matmul: mat1 and mat2 shapes cannot be multiplied (", a2.size(0), "x",
               a2.size(1), " and ", b2.size(0), "x", b2.size(1), ") (shapes ", a.sizes().vec(), " and ",
               b.sizes().vec(), ")");
    Tensor r = mm(a2, b2);
    if (a.dim() == 1) r = named(r.squeeze(0), "SqueezeBackward3", {a, b});  // sic, as libtorch 1.13
    if (b.dim() == 1) r = named(r.squeeze(-1), "MvBackward0", {a, b});
    return r;
  }
  Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  const int64_t M = a2.size(-2), K = a2.size(-1), N = b2.size(-1);
  KILN_CHECK(b2.size(-2) == K, "matmul: shapes cannot be multiplied (", a.sizes().vec(), " and ", b.sizes().vec(), ")");
  Shape batch_a(a2.sizes().begin(), a2.sizes().end() - 2), batch_b(b2.sizes().begin(), b2.sizes().end() - 2);
  for (size_t i = 1; i <= std::min(batch_a.size(), batch_b.size()); ++i) {
    const int64_t sa = batch_a[batch_a.size() - i], sb = batch_b[batch_b.size() - i];
    KILN_CHECK(sa == sb || sa == 1 || sb == 1, "matmul: batch dimensions do not broadcast (shapes ", a.sizes().vec(),
               " and ", b.sizes().vec(), ")");
  }
  Shape batch = broadcast_shapes(batch_a, batch_b);
  Shape out = batch;
  if (a.dim() > 1) out.push_back(M);
  if (b.dim() > 1) out.push_back(N);
  if (b2.dim() == 2) {
    // Fold the batch into the rows of one GEMM, as libtorch does.
    return named(mm(a2.reshape({-1, K}), b2).reshape(out), "UnsafeViewBackward0", {a, b});
  }
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {M, K});
  eb.insert(eb.end(), {K, N});
  const int64_t B = numel_of(batch);
  return named(batched(a2.expand(ea).reshape({B, M, K}), b2.expand(eb).reshape({B, K, N})).reshape(out),
               "UnsafeViewBackward0", {a, b});
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  KILN_CHECK(x.dim() >= 1 && weight.dim() == 2 && x.size(-1) == weight.size(1), "linear: input ", detail::shape_str(x),
             " and weight ", detail::shape_str(weight), " cannot be multiplied");
  Tensor y = matmul(x, weight.t());
  if (!bias.defined()) return y;
  // libtorch 1.13 computes a 2-D input with addmm, a contiguous 3-D one with addmm on its rows
  // viewed as 2-D, and others with matmul and add.
  if (x.dim() == 2) return named(y + bias, "AddmmBackward0", {x, weight, bias});
  if (x.dim() == 3 && x.is_contiguous()) return named(y + bias, "ViewBackward0", {x, weight, bias});
  return y + bias;
}

namespace {
// Checks an index tensor's dtype, and its values when they are already computed (a pending index
// is checked when the flush computes it).
void check_index(const Tensor& index, int64_t size, const char* op, const Tensor& self) {
  KILN_CHECK(index.dtype() == kLong, op, ": expected an int64 index, got ", detail::shape_str(index));
  if (!index.unsafeGetTensorImpl()->storage->node->computed() || index.numel() == 0) return;
  for (int64_t i : index.to_vector<int64_t>())
    KILN_CHECK(i >= 0 && i < size, op, ": index ", i, " is out of bounds for dimension with size ", size, " (self ",
               detail::shape_str(self), ", index ", detail::shape_str(index), ")");
}
}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  KILN_CHECK(index.dim() <= 1, "index_select: index should have 1 dimension, got ", detail::shape_str(index));
  const int64_t d = wrap_dim(dim, x.dim(), "index_select");
  Tensor xs = x.dim() == 0 ? x.reshape({1}) : x;
  check_index(index, xs.size(d), "index_select", x);
  Shape s = xs.sizes().vec();
  s[d] = index.numel();
  Tensor r = primitive(Op::IndexSelect, {xs, index.reshape({-1})}, s, x.dtype(), detail::Attrs{{d}});
  return x.dim() == 0 ? r.reshape({}) : r;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_dim(dim, x.dim(), "gather");
  KILN_CHECK(index.dim() == x.dim(), "gather: index tensor must have the same number of dimensions as input (",
             detail::shape_str(x), " and index ", detail::shape_str(index), ")");
  for (int64_t i = 0; i < x.dim(); ++i)
    KILN_CHECK(i == d || index.size(i) <= x.size(i), "gather: size does not match at dimension ", i, " expected index ",
               index.sizes().vec(), " to be smaller than self ", x.sizes().vec(), " apart from dimension ", d);
  // A 0-d input gathers from its one element, as a 1-element vector.
  if (x.dim() == 0) return gather(x.reshape({1}), 0, index.reshape({1})).reshape({});
  check_index(index, x.size(d), "gather", x);
  return primitive(Op::Gather, {x, index}, index.sizes().vec(), x.dtype(), detail::Attrs{{d}});
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  KILN_CHECK(weight.dim() == 2, "embedding: weight must be 2-D, got ", detail::shape_str(weight));
  Shape s = indices.sizes().vec();
  s.push_back(weight.size(1));
  return index_select(weight, 0, indices.reshape({-1})).reshape(s);
}

Tensor one_hot(const Tensor& labels, int64_t num_classes) {
  KILN_CHECK(labels.dtype() == kLong, "one_hot: expected int64 labels, got ", detail::shape_str(labels));
  if (num_classes < 0) num_classes = labels.max().item<int64_t>() + 1;
  // A label out of range throws, as in libtorch, where it gave a row of zeros (when the labels
  // are computed already: checking pending ones would cost a flush).
  check_index(labels, num_classes, "one_hot", labels);
  return (labels.unsqueeze(-1) == arange(num_classes, TensorOptions(kLong).device(labels.device()))).to(kLong);
}

Tensor cat(const TensorList& tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "cat: expected a non-empty list of Tensors");
  // Legacy behaviour kept by PyTorch: 1-D empty tensors are skipped.
  TensorList parts;
  for (const auto& t : tensors)
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(t);
  if (parts.empty()) return tensors[0];
  const Tensor& first = parts[0];
  KILN_CHECK(first.dim() > 0, "cat: zero-dimensional tensor cannot be concatenated");
  const int64_t d = wrap_dim(dim, first.dim(), "cat");
  ScalarType t = first.dtype();
  for (const auto& p : parts) t = promote(t, p.dtype());
  Shape s = first.sizes().vec();
  s[d] = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& p = parts[i];
    KILN_CHECK(p.dim() == first.dim(), "cat: tensors must have same number of dimensions: got ", first.dim(), " and ",
               p.dim(), " (tensor ", i, " is ", detail::shape_str(p), ")");
    for (int64_t k = 0; k < p.dim(); ++k)
      KILN_CHECK(k == d || p.size(k) == first.size(k), "cat: sizes of tensors must match except in dimension ", d,
                 ". Expected size ", first.size(k), " but got size ", p.size(k), " for tensor number ", i,
                 " in the list (", detail::shape_str(p), ")");
    s[d] += p.size(d);
    parts[i] = p.to(t);
  }
  return primitive(Op::Cat, parts, s, t, detail::Attrs{{d}});
}

Tensor stack(const TensorList& tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "stack: expected a non-empty list of Tensors");
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  TensorList parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    KILN_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack: expects each tensor to be equal size, but got ",
               tensors[0].sizes().vec(), " at entry 0 and ", tensors[i].sizes().vec(), " at entry ", i);
    parts.push_back(tensors[i].unsqueeze(d));
  }
  return named(cat(parts, d), "StackBackward0", tensors);
}

Tensor Tensor::matmul(const Tensor& o) const { return kiln::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return kiln::mm(*this, o); }
Tensor Tensor::bmm(const Tensor& o) const { return kiln::bmm(*this, o); }
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return kiln::index_select(*this, dim, index); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return kiln::gather(*this, dim, index); }

}  // namespace kiln
