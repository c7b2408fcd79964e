// Views: new sizes and strides over the same storage. Nothing is recorded in the IR; consumers
// read through the view. Each has a backward row (derivatives.cpp).
#include <numeric>

#include "frontend/derivatives.h"
#include "frontend/ops.h"
#include "tracer/view_attr.h"

namespace kiln {

using detail::named;
using detail::ViewKind;
using detail::wrap_dim;
using detail::wrap_existing_dim;

namespace {

// Resolves one -1 in `shape` against `numel`, checking that the product matches.
Shape infer_shape(IntArrayRef shape, int64_t numel, const char* op, const Tensor& self) {
  KILN_CHECK(int(shape.size()) <= kMaxDims, op, ": at most ", kMaxDims, " dimensions are supported, got ", shape.vec(),
             " (input ", detail::shape_str(self), ")");
  Shape out = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      KILN_CHECK(infer < 0, op, ": only one dimension can be inferred (shape ", out, ")");
      infer = int64_t(i);
    } else {
      KILN_CHECK(out[i] >= 0, op, ": invalid shape dimension ", out[i], " in ", out);
      known *= out[i];
    }
  }
  if (infer >= 0) {
    KILN_CHECK(known != 0 && numel % known == 0, op, ": shape '", shape.vec(), "' is invalid for input of size ", numel,
               " (input ", detail::shape_str(self), ")");
    out[infer] = numel / known;
  }
  KILN_CHECK(numel_of(out) == numel, op, ": shape '", shape.vec(), "' is invalid for input of size ", numel, " (input ",
             detail::shape_str(self), ")");
  return out;
}

// Strides for viewing (sizes, strides) as `shape` without copying, if possible (PyTorch's
// computeStride): dimensions may merge or split only where memory is contiguous between them.
std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& shape) {
  if (numel_of(sizes) == 0 || sizes.empty()) return contiguous_strides(shape);
  Shape out(shape.size());
  int64_t view_d = int64_t(shape.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

Tensor Tensor::view(IntArrayRef shape) const {
  Shape s = infer_shape(shape, numel(), "view", *this);
  auto st = view_strides(sizes().vec(), strides().vec(), s);
  KILN_CHECK(st,
             "view: view size is not compatible with input tensor's size and stride (at least one "
             "dimension spans across two contiguous subspaces). Use .reshape(...) instead. (input ",
             detail::shape_str(*this), ", shape ", s, ")");
  return detail::view(*this, ViewKind::Reshape, s, *st, storage_offset());
}

Tensor Tensor::reshape(IntArrayRef shape) const {
  Shape s = infer_shape(shape, numel(), "reshape", *this);
  if (auto st = view_strides(sizes().vec(), strides().vec(), s))
    return named(detail::view(*this, ViewKind::Reshape, s, *st, storage_offset()), "ReshapeAliasBackward0", {*this});
  return named(clone(MemoryFormat::Contiguous).view(s), "UnsafeViewBackward0", {*this});
}

Tensor Tensor::t() const {
  KILN_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dimensions, but self is ", dim(), "D (",
             detail::shape_str(*this), ")");
  return dim() < 2 ? *this : named(transpose(0, 1), "TBackward0", {*this});
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  std::vector<int64_t> dims(std::max<int64_t>(dim(), 0));
  std::iota(dims.begin(), dims.end(), 0);
  if (dim() == 0) {
    wrap_dim(d0, 0, "transpose");
    wrap_dim(d1, 0, "transpose");
    return *this;
  }
  std::swap(dims[wrap_dim(d0, dim(), "transpose")], dims[wrap_dim(d1, dim(), "transpose")]);
  return named(permute(dims), "TransposeBackward0", {*this});
}

Tensor Tensor::permute(IntArrayRef dims) const {
  KILN_CHECK(int64_t(dims.size()) == dim(), "permute: number of dims don't match in permute (input ",
             detail::shape_str(*this), ", dims ", dims.vec(), ")");
  Shape s(dim()), st(dim());
  std::vector<int64_t> norm(dim());
  std::vector<bool> used(dim(), false);
  for (int64_t i = 0; i < dim(); ++i) {
    int64_t d = wrap_dim(dims[i], dim(), "permute");
    KILN_CHECK(!used[d], "permute: repeated dim in permute (dims ", dims.vec(), ")");
    used[d] = true;
    norm[i] = d;
    s[i] = sizes()[d];
    st[i] = strides()[d];
  }
  return detail::view(*this, ViewKind::Permute, s, st, storage_offset(), detail::Attrs{norm});
}

// narrow, slice and select: a strided window; the backward row needs its geometry relative to a
// contiguous layout of the input.
static Tensor window(const Tensor& self, int64_t dim, int64_t start, int64_t length, int64_t step, bool drop) {
  Shape s = self.sizes().vec(), st = self.strides().vec();
  Shape rel = contiguous_strides(s);
  int64_t offset = self.storage_offset() + start * st[dim];
  int64_t rel_offset = start * rel[dim];
  s[dim] = length;
  st[dim] *= step;
  rel[dim] *= step;
  if (drop) {
    s.erase(s.begin() + dim);
    st.erase(st.begin() + dim);
    rel.erase(rel.begin() + dim);
  }
  return detail::view(self, ViewKind::Strided, s, st, offset,
                      detail::Attrs{ir::pack_view(ir::View{s, rel, rel_offset})});
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  KILN_CHECK(dim() > 0, "narrow: cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  const int64_t n = size(d);
  if (start < 0) start += n;
  KILN_CHECK(start >= 0 && length >= 0 && start + length <= n, "narrow: start (", start, ") + length (", length,
             ") exceeds dimension size (", n, ") of ", detail::shape_str(*this));
  return named(window(*this, d, start, length, 1, false), "SliceBackward0", {*this});
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_existing_dim(*this, d, "slice");
  KILN_CHECK(step > 0, "slice: step must be positive, got ", step);
  const int64_t n = size(d);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  return named(window(*this, d, start, (end - start + step - 1) / step, step, false), "SliceBackward0", {*this});
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  KILN_CHECK(dim() > 0, "select: cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  const int64_t n = size(d);
  KILN_CHECK(index >= -n && index < n, "select: index ", index, " out of range for tensor of size ", sizes().vec(),
             " at dimension ", d);
  return named(window(*this, d, index < 0 ? index + n : index, 1, 1, true), "SelectBackward0", {*this});
}

ir::View detail::expanded_view(const Tensor& t, IntArrayRef target) {
  KILN_CHECK(int(target.size()) <= kMaxDims, "expand: at most ", kMaxDims, " dimensions are supported, got ",
             target.vec(), " (input ", detail::shape_str(t), ")");
  KILN_CHECK(int64_t(target.size()) >= t.dim(), "expand: the number of sizes provided (", target.size(),
             ") must be greater or equal to the number of dimensions in the tensor (", detail::shape_str(t), ")");
  const int64_t lead = int64_t(target.size()) - t.dim();
  ir::View v{Shape(target.size()), Shape(target.size()), t.storage_offset()};
  for (int64_t i = 0; i < int64_t(target.size()); ++i) {
    if (i < lead) {
      KILN_CHECK(target[i] >= 0, "expand: the expanded size ", target[i], " is not allowed in a leading dimension");
      v.sizes[i] = target[i];
      v.strides[i] = 0;
      continue;
    }
    const int64_t have = t.sizes()[i - lead];
    const int64_t want = target[i] == -1 ? have : target[i];
    KILN_CHECK(have == want || have == 1, "expand: the expanded size of the tensor (", want,
               ") must match the existing size (", have, ") at non-singleton dimension ", i,
               ".  Target sizes: ", target.vec(), ".  Tensor sizes: ", t.sizes().vec());
    v.sizes[i] = want;
    v.strides[i] = have == want ? t.strides()[i - lead] : 0;
  }
  return v;
}

Tensor Tensor::expand(IntArrayRef target, bool) const {
  ir::View v = detail::expanded_view(*this, target);
  if (IntArrayRef(v.sizes) == sizes()) return *this;
  return detail::view(*this, ViewKind::Expand, std::move(v.sizes), std::move(v.strides), v.offset);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  KILN_CHECK(dim() < kMaxDims, "unsqueeze: at most ", kMaxDims, " dimensions are supported (input ",
             detail::shape_str(*this), ")");
  Shape s = sizes(), st = strides();
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, d < dim() ? st[d] * s[d + 1] : 1);
  return named(detail::view(*this, ViewKind::Reshape, s, st, storage_offset()), "UnsqueezeBackward0", {*this});
}

Tensor Tensor::squeeze() const {
  Shape s, st;
  for (int64_t i = 0; i < dim(); ++i)
    if (sizes()[i] != 1) {
      s.push_back(sizes()[i]);
      st.push_back(strides()[i]);
    }
  return named(detail::view(*this, ViewKind::Reshape, s, st, storage_offset()), "SqueezeBackward0", {*this});
}

Tensor Tensor::squeeze(int64_t d) const {
  if (dim() == 0) return wrap_dim(d, 0, "squeeze"), *this;  // dim 0 or -1 only
  d = wrap_dim(d, dim(), "squeeze");
  if (sizes()[d] != 1) return *this;
  Shape s = sizes().vec(), st = strides().vec();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return named(detail::view(*this, ViewKind::Reshape, s, st, storage_offset()), "SqueezeBackward1", {*this});
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  KILN_CHECK(start <= end, "flatten: start_dim (", start, ") cannot come after end_dim (", end, ")");
  Shape s(sizes().begin(), sizes().begin() + start);
  int64_t merged = 1;
  for (int64_t i = start; i <= end; ++i) merged *= sizes()[i];
  s.push_back(merged);
  s.insert(s.end(), sizes().begin() + end + 1, sizes().end());
  return reshape(s);
}

Tensor Tensor::unflatten(int64_t d, IntArrayRef parts) const {
  d = wrap_existing_dim(*this, d, "unflatten");
  Shape s(sizes().begin(), sizes().begin() + d);
  s.insert(s.end(), parts.begin(), parts.end());
  s.insert(s.end(), sizes().begin() + d + 1, sizes().end());
  return view(s);
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  d = wrap_existing_dim(*this, d, "split");
  KILN_CHECK(split_size > 0, "split: split_size must be positive, got ", split_size);
  std::vector<Tensor> out;
  for (int64_t start = 0; start < size(d); start += split_size)
    out.push_back(narrow(d, start, std::min(split_size, size(d) - start)));
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  KILN_CHECK(chunks > 0, "chunk: chunks must be positive, got ", chunks);
  d = wrap_existing_dim(*this, d, "chunk");
  return split(std::max<int64_t>((size(d) + chunks - 1) / chunks, 1), d);
}

std::vector<Tensor> Tensor::unbind(int64_t d) const {
  d = wrap_existing_dim(*this, d, "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < size(d); ++i) out.push_back(select(d, i));
  return out;
}

Tensor reshape(const Tensor& x, IntArrayRef shape) { return x.reshape(shape); }
Tensor flatten(const Tensor& x, int64_t s, int64_t e) { return x.flatten(s, e); }
Tensor transpose(const Tensor& x, int64_t a, int64_t b) { return x.transpose(a, b); }
Tensor permute(const Tensor& x, IntArrayRef dims) { return x.permute(dims); }
Tensor narrow(const Tensor& x, int64_t d, int64_t s, int64_t l) { return x.narrow(d, s, l); }
Tensor select(const Tensor& x, int64_t d, int64_t i) { return x.select(d, i); }
Tensor unsqueeze(const Tensor& x, int64_t d) { return x.unsqueeze(d); }
Tensor squeeze(const Tensor& x) { return x.squeeze(); }
Tensor squeeze(const Tensor& x, int64_t d) { return x.squeeze(d); }

}  // namespace kiln
