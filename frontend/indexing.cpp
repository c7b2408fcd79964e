// Tensor::index and index_put_ (libtorch's torch::indexing), masked_select and nonzero.
// Basic indices make a view; tensor indices become int64 positions along the dims they index,
// gathered with index_select (gradient: index_add) after moving those dims to the front.
#include "frontend/indexing.h"

#include <limits>
#include <numeric>

#include "frontend/derivatives.h"
#include "frontend/ops.h"

namespace kiln {

namespace indexing {

Slice::Slice(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step)
    : start_(start.value_or(0)), stop_(stop.value_or(std::numeric_limits<int64_t>::max())), step_(step.value_or(1)) {
  KILN_CHECK(step_ > 0, "Slice: step must be greater than zero, got ", step_);
  if (!start && step_ < 0) start_ = std::numeric_limits<int64_t>::max();
}

std::ostream& operator<<(std::ostream& os, const Slice& s) {
  return os << s.start() << ":" << s.stop() << ":" << s.step();
}

TensorIndex::TensorIndex(const char* ellipsis) : kind_(Kind::Ellipsis) {
  KILN_CHECK(std::string(ellipsis) == "...", "TensorIndex: expected \"...\" to represent an ellipsis index, but got \"",
             ellipsis, "\"");
}

std::ostream& operator<<(std::ostream& os, const TensorIndex& i) {
  switch (i.kind()) {
    case TensorIndex::Kind::None: return os << "None";
    case TensorIndex::Kind::Ellipsis: return os << "...";
    case TensorIndex::Kind::Integer: return os << i.integer();
    case TensorIndex::Kind::Boolean: return os << (i.boolean() ? "true" : "false");
    case TensorIndex::Kind::Slice: return os << i.slice();
    case TensorIndex::Kind::Tensor: return os << "Tensor(" << detail::shape_str(i.tensor()) << ")";
  }
  return os;
}

}  // namespace indexing

using indexing::TensorIndex;

namespace {

using Indices = std::vector<TensorIndex>;

// The result of the basic indices: a view of self, and the int64 position tensors (not yet
// broadcast) for the dims of that view that tensor indices index, in order.
struct Applied {
  Tensor view;
  std::vector<int64_t> dims;
  TensorList positions;
};

bool is_computed(const Tensor& t) { return t.unsafeGetTensorImpl()->storage->node->computed(); }

// Positions as given, negative ones counted from the end; checked against `size` where the
// values are known already (a pending index is checked when its kernel runs).
Tensor wrapped_positions(const Tensor& index, int64_t size, int64_t dim) {
  if (index.numel() == 0) return index;
  if (!is_computed(index)) return where(index < 0, index + size, index);
  std::vector<int64_t> v = index.to_vector<int64_t>();
  bool negative = false;
  for (int64_t& i : v) {
    KILN_CHECK(i >= -size && i < size, "index: index ", i, " is out of bounds for dimension ", dim, " with size ",
               size);
    if (i < 0) i += size, negative = true;
  }
  return negative ? detail::copy_of_host_data(v.data(), index.sizes(), kLong).to(index.device()) : index;
}

int64_t dims_consumed(const TensorIndex& i) {
  if (i.is_integer() || i.is_slice()) return 1;
  if (i.is_tensor()) {
    const Tensor& t = i.tensor();
    return t.dtype() == kBool ? std::max<int64_t>(t.dim(), 1) : 1;
  }
  return 0;
}

Applied apply_indices(const Tensor& self, const Indices& indices, const char* op) {
  int64_t consumed = 0, ellipses = 0;
  for (const auto& i : indices) {
    consumed += dims_consumed(i);
    ellipses += i.is_ellipsis();
  }
  KILN_CHECK(ellipses <= 1, op, ": an index can only have a single ellipsis ('...')");
  KILN_CHECK(consumed <= self.dim(), op, ": too many indices for tensor of dimension ", self.dim(), " (got ", consumed,
             ", tensor ", detail::shape_str(self), ")");
  Applied r{self, {}, {}};
  Tensor& t = r.view;
  int64_t dim = 0;
  for (const auto& i : indices) {
    switch (i.kind()) {
      case TensorIndex::Kind::None: t = t.unsqueeze(dim++); break;
      case TensorIndex::Kind::Boolean:
        t = t.unsqueeze(dim);
        if (!i.boolean()) t = t.narrow(dim, 0, 0);
        ++dim;
        break;
      case TensorIndex::Kind::Ellipsis: dim += self.dim() - consumed; break;
      case TensorIndex::Kind::Integer: {
        const int64_t n = t.size(dim), k = i.integer();
        KILN_CHECK(k >= -n && k < n, op, ": index ", k, " is out of bounds for dimension ", dim, " with size ", n,
                   " (tensor ", detail::shape_str(self), ")");
        t = t.select(dim, k);
        break;
      }
      case TensorIndex::Kind::Slice:
        t = t.slice(dim, i.slice().start(), i.slice().stop(), i.slice().step());
        ++dim;
        break;
      case TensorIndex::Kind::Tensor: {
        Tensor index = i.tensor();
        KILN_CHECK(index.dtype() == kLong || index.dtype() == kBool, op,
                   ": tensors used as indices must be long or bool tensors, got ", detail::shape_str(index));
        if (index.dtype() == kLong) {
          r.dims.push_back(dim);
          r.positions.push_back(wrapped_positions(index, t.size(dim), dim));
          ++dim;
          break;
        }
        if (index.dim() == 0) {  // a 0-d mask: a new dim of size 1, kept or emptied
          t = t.unsqueeze(dim);
          index = index.reshape({1});
        }
        for (int64_t j = 0; j < index.dim(); ++j)
          KILN_CHECK(index.size(j) == t.size(dim + j), op, ": the shape of the mask ", index.sizes().vec(),
                     " at index ", j, " does not match the shape of the indexed tensor ", t.sizes().vec(), " at index ",
                     dim + j);
        const Tensor where_true = nonzero(index);
        for (int64_t j = 0; j < index.dim(); ++j) {
          r.dims.push_back(dim + j);
          r.positions.push_back(where_true.select(1, j));
        }
        dim += index.dim();
        break;
      }
    }
  }
  return r;
}

// The advanced dims of `a.view` moved to the front and merged into one, with the positions
// merged to match: gathering rows `flat` of `front` is the advanced indexing.
struct Merged {
  std::vector<int64_t> order;  // the permutation applied to the view
  Shape permuted;              // the view's sizes in that order
  Shape broadcast;             // the common shape of the position tensors
  Tensor front;                // [prod of the advanced sizes, rest...]
  Tensor flat;                 // 1-D int64 rows of `front`
  bool adjacent = true;        // the advanced dims were consecutive: their result stays in place
};

Merged merge(const Applied& a, const char* op) {
  const Tensor& v = a.view;
  Merged m;
  m.broadcast = a.positions[0].sizes().vec();
  for (const auto& p : a.positions) m.broadcast = broadcast_shapes(m.broadcast, p.sizes());
  for (size_t j = 1; j < a.dims.size(); ++j) m.adjacent &= a.dims[j] == a.dims[j - 1] + 1;
  m.order = a.dims;
  for (int64_t d = 0; d < v.dim(); ++d)
    if (std::find(a.dims.begin(), a.dims.end(), d) == a.dims.end()) m.order.push_back(d);
  for (int64_t d : m.order) m.permuted.push_back(v.size(d));
  Shape front_shape{1};
  for (int64_t d : a.dims) front_shape[0] *= v.size(d);
  front_shape.insert(front_shape.end(), m.permuted.begin() + int64_t(a.dims.size()), m.permuted.end());
  m.front = v.permute(m.order).reshape(front_shape);
  int64_t stride = 1;
  for (int64_t j = int64_t(a.dims.size()) - 1; j >= 0; --j) {
    Tensor term = stride == 1 ? a.positions[j] : a.positions[j] * stride;
    m.flat = m.flat.defined() ? m.flat + term : term;
    stride *= v.size(a.dims[j]);
  }
  m.flat = m.flat.expand(m.broadcast).reshape({-1});
  (void)op;
  return m;
}

// The dims of the advanced result (broadcast shape first, then the rest in order) put where
// libtorch puts them: in place of the indexed dims when those were adjacent.
std::vector<int64_t> result_order(const Merged& m, int64_t first_dim, int64_t rank) {
  const int64_t nb = int64_t(m.broadcast.size());
  std::vector<int64_t> order;
  for (int64_t d = 0; d < first_dim; ++d) order.push_back(nb + d);
  for (int64_t d = 0; d < nb; ++d) order.push_back(d);
  for (int64_t d = nb + first_dim; d < rank; ++d) order.push_back(d);
  return order;
}

Tensor advanced_index(const Applied& a, const char* op) {
  if (a.dims.size() == 1) {  // one indexed dim: gather along it where it is
    const int64_t d = a.dims[0];
    const Tensor& p = a.positions[0];
    Shape shape(a.view.sizes().begin(), a.view.sizes().begin() + d);
    shape.insert(shape.end(), p.sizes().begin(), p.sizes().end());
    shape.insert(shape.end(), a.view.sizes().begin() + d + 1, a.view.sizes().end());
    return a.view.index_select(d, p.reshape({-1})).reshape(shape);
  }
  const Merged m = merge(a, op);
  Shape shape = m.broadcast;
  shape.insert(shape.end(), m.permuted.begin() + int64_t(a.dims.size()), m.permuted.end());
  Tensor r = m.front.index_select(0, m.flat).reshape(shape);
  if (!m.adjacent || a.dims[0] == 0) return r;
  return r.permute(result_order(m, a.dims[0], r.dim()));
}

Tensor index_impl(const Tensor& self, const Indices& indices) {
  Applied a = apply_indices(self, indices, "index");
  return a.dims.empty() ? a.view : advanced_index(a, "index");
}

// Writes `value` at the positions; among repeated positions the last write wins, as libtorch's CPU
// kernel writes them in order. With `accumulate`, adds it there instead, repeated positions summed.
void index_put_impl(const Tensor& self, const Indices& indices, const Tensor& value, bool accumulate = false) {
  Applied a = apply_indices(self, indices, "index_put_");
  if (a.dims.empty()) {
    a.view.copy_(accumulate ? a.view + value : value);
    return;
  }
  const Merged m = merge(a, "index_put_");
  // The value, broadcast to what index() would return, laid out as the rows of `front`.
  Shape result = m.broadcast;
  result.insert(result.end(), m.permuted.begin() + int64_t(a.dims.size()), m.permuted.end());
  Tensor rows;
  {
    Shape indexed = result;
    std::vector<int64_t> order(result.size());
    std::iota(order.begin(), order.end(), 0);
    if (m.adjacent && a.dims[0] > 0) {
      order = result_order(m, a.dims[0], int64_t(result.size()));
      for (size_t d = 0; d < order.size(); ++d) indexed[d] = result[order[d]];
    }
    bool broadcasts = value.dim() <= int64_t(indexed.size());
    for (int64_t d = 1; broadcasts && d <= value.dim(); ++d)
      broadcasts = value.size(-d) == 1 || value.size(-d) == indexed[indexed.size() - size_t(d)];
    KILN_CHECK(broadcasts, "index_put_: shape mismatch: value tensor of shape ", value.sizes().vec(),
               " cannot be broadcast to indexing result of shape ", indexed);
    std::vector<int64_t> inverse(order.size());
    for (size_t d = 0; d < order.size(); ++d) inverse[order[d]] = int64_t(d);
    Shape row_shape{numel_of(m.broadcast)};
    row_shape.insert(row_shape.end(), result.begin() + int64_t(m.broadcast.size()), result.end());
    rows = value.to(self.dtype()).expand(indexed).permute(inverse).reshape(row_shape);
  }
  std::vector<int64_t> inverse(m.order.size());
  for (size_t d = 0; d < m.order.size(); ++d) inverse[size_t(m.order[d])] = int64_t(d);
  // The last write to each row, found on the host (the positions' values decide the result).
  const int64_t n_rows = m.front.size(0);
  const std::vector<int64_t> flat = m.flat.to_vector<int64_t>();
  std::vector<int64_t> last(size_t(n_rows), -1);
  for (size_t k = 0; k < flat.size(); ++k) {
    KILN_CHECK(flat[k] >= 0 && flat[k] < n_rows, "index_put_: index ", flat[k], " is out of bounds for ", n_rows,
               " rows (tensor ", detail::shape_str(self), ")");
    last[size_t(flat[k])] = int64_t(k);
  }
  if (accumulate) {
    Tensor added = detail::primitive(ir::Op::IndexAdd, {m.front, m.flat, rows}, m.front.sizes().vec(), m.front.dtype(),
                                     detail::Attrs{{0}});
    a.view.copy_(added.reshape(m.permuted).permute(inverse));
    return;
  }
  std::vector<int64_t> targets, sources;
  std::vector<uint8_t> hit(size_t(n_rows), 0);
  for (int64_t row = 0; row < n_rows; ++row)
    if (last[size_t(row)] >= 0) {
      targets.push_back(row);
      sources.push_back(last[size_t(row)]);
      hit[size_t(row)] = 1;
    }
  const int64_t n = int64_t(targets.size());
  const Device on = m.front.device();
  Tensor target_t = detail::copy_of_host_data(targets.data(), {n}, kLong).to(on);
  Tensor source_t = detail::copy_of_host_data(sources.data(), {n}, kLong).to(on);
  Shape mask_shape(size_t(m.front.dim()), 1);
  mask_shape[0] = n_rows;
  Tensor mask = detail::copy_of_host_data(hit.data(), {n_rows}, kBool).to(on).reshape(mask_shape);
  Tensor scattered =
      detail::primitive(ir::Op::IndexAdd, {zeros_like(m.front), target_t, rows.index_select(0, source_t)},
                        m.front.sizes().vec(), m.front.dtype(), detail::Attrs{{0}});
  Tensor written = where(mask, scattered, m.front).reshape(m.permuted);
  a.view.copy_(written.permute(inverse));
}

Tensor scalar_value(const Tensor& self, const Scalar& v) {
  KILN_CHECK(detail::converts_without_overflow(v, self.dtype()), "index_put_: value ", v.toDouble(),
             " cannot be converted to type ", self.dtype(), " without overflow");
  return full({}, v, self.dtype());
}

}  // namespace

Tensor nonzero(const Tensor& x) {
  const std::vector<bool> nz = (x != 0).to_vector<bool>();
  std::vector<int64_t> out;
  const int64_t rank = x.dim();
  std::vector<int64_t> at(size_t(rank), 0);
  for (bool b : nz) {
    if (b) out.insert(out.end(), at.begin(), at.end());
    for (int64_t d = rank - 1; d >= 0 && ++at[size_t(d)] == x.size(d); --d) at[size_t(d)] = 0;
  }
  const int64_t n = rank == 0 ? int64_t(nz.size() == 1 && nz[0]) : int64_t(out.size()) / std::max<int64_t>(rank, 1);
  return detail::copy_of_host_data(out.data(), {n, rank}, kLong).to(x.device());
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  KILN_CHECK(mask.dtype() == kBool, "masked_select: expected a bool mask, got ", detail::shape_str(mask));
  const std::vector<int64_t> s = broadcast_shapes(x.sizes(), mask.sizes());
  Tensor positions = nonzero(mask.expand(s).reshape({-1})).reshape({-1});
  return x.expand(s).reshape({-1}).index_select(0, positions);
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const { return index_impl(*this, Indices(indices)); }
Tensor Tensor::index(const std::vector<TensorIndex>& indices) const { return index_impl(*this, indices); }
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& rhs) const {
  index_put_impl(*this, Indices(indices), rhs);
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& v) const {
  index_put_impl(*this, Indices(indices), scalar_value(*this, v));
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& rhs) const {
  index_put_impl(*this, indices, rhs);
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Scalar& v) const {
  index_put_impl(*this, indices, scalar_value(*this, v));
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& rhs, bool accumulate) const {
  index_put_impl(*this, Indices(indices), rhs, accumulate);
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& rhs, bool accumulate) const {
  index_put_impl(*this, indices, rhs, accumulate);
  return const_cast<Tensor&>(*this);
}
Tensor Tensor::masked_select(const Tensor& mask) const { return kiln::masked_select(*this, mask); }
Tensor Tensor::nonzero() const { return kiln::nonzero(*this); }

}  // namespace kiln
