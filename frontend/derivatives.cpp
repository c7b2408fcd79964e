// Backward formulas: one row per differentiable primitive and per kind of view, written with kiln
// ops so that the backward pass is traced (and, with create_graph, differentiable again).
#include "frontend/derivatives.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>

#include "frontend/ops.h"
#include "runtime/pool.h"
#include "tracer/view_attr.h"

namespace kiln::detail {
namespace {

using ir::Op;
using TL = TensorList;
constexpr uint8_t kNone = 0, kIn0 = 1, kIn1 = 2, kIn01 = 3;

// The shape of a reduction of `in_shape` over `axes` that keeps them as size 1.
Shape kept(Shape in_shape, const std::vector<int64_t>& axes) {
  for (auto a : axes) in_shape[a] = 1;
  return in_shape;
}
// A reduction's gradient (or output), with or without the reduced axes, broadcast back over them.
Tensor unreduce(const Tensor& g, const Shape& in_shape, const std::vector<int64_t>& axes) {
  return g.reshape(kept(in_shape, axes)).expand(in_shape);
}

Tensor transpose_last(const Tensor& t) { return t.transpose(-1, -2); }

// Whether matmul input i is stored column-major (a transposed view, as linear's weight.t()): its
// gradient is then computed transposed, so that it lands in the input's own layout and no
// transposing copy follows (gradient accumulation, optimizer steps).
bool column_major(const BackwardArgs& a, size_t i) {
  const Shape& st = a.in_strides[i];
  const Shape& sz = a.in_shapes[i];
  return st.size() >= 2 && st[st.size() - 2] == 1 && st.back() != 1 && sz.back() > 1 && sz[sz.size() - 2] > 1;
}

// 1 at the entry of each reduced block of x that holds its maximum m (m broadcast over x) as
// PyTorch's max pooling indices pick it: the first in row-major order, or, where m is NaN, the
// last NaN; 0 elsewhere. (ReduceMax with attrs.scalar set: max_pool2d's windows.) An entry's flat
// index e within its block is compared with the block's pick, max over the block of e at NaNs
// (the last) when m is NaN, else of -e at equals (the first). One case differs from libtorch: a
// padded window whose entries are all -inf picks its first entry even in the padding (filled with
// -inf), where the gradient is dropped; libtorch picks the first entry inside the image.
Tensor first_maximum(const Tensor& x, const Tensor& m, const std::vector<int64_t>& axes, ScalarType dtype) {
  Shape block(size_t(x.dim()), 1);
  int64_t entries = 1;
  for (auto d : axes) entries *= (block[size_t(d)] = x.size(d));
  Tensor e = arange(entries, TensorOptions().dtype(dtype).device(x.device())).reshape(block);
  Tensor m_nan = m != m;
  Tensor score = where(x == m || x != x, where(m_nan, e, -e), -std::numeric_limits<double>::infinity());
  Tensor pick = amax(score, axes, true);
  return (e == where(m_nan, pick, -pick)).to(dtype);
}

// The sum of g's entries from each one to the end along d.
Tensor reversed_cumsum(const Tensor& g, int64_t d) { return flip(flip(g, {d}).cumsum(d), {d}); }

// PyTorch's cumprod_backward, in its form for inputs with zeros (right for any input, and with no
// test for zeros, which would read values): before the first zero z1 of a row, the gradient is
// sum_{k >= i} g_k out_k / x_i; at z1 it is sum_{z1 <= k < z2} g_k prod_{j <= k, j != z1} x_j
// (z2 the second zero); after z1, 0.
Tensor cumprod_backward(const Tensor& g, const Tensor& x, const Tensor& out, int64_t d) {
  const Tensor is_zero = x == 0.0, zeros_so_far = is_zero.cumsum(d);
  const Tensor before_first = zeros_so_far == 0, until_second = zeros_so_far == 1;
  const Tensor zero = zeros_like(g), one = ones_like(x);
  const Tensor before =
      where(before_first, reversed_cumsum(where(before_first, g * out, zero), d) / where(before_first, x, one), zero);
  const Tensor prefix = where(before_first, x, one).prod(d, true);  // out just before z1 (1 if z1 is first)
  const Tensor after_first = where(logical_and(until_second, logical_not(is_zero)), x, one).cumprod(d);
  const Tensor at_first = (after_first * where(until_second, g, zero)).sum({d}, true) * prefix;
  return before + where(logical_and(until_second, is_zero), at_first, zero);
}

// PyTorch's logcumsumexp_backward: the positive and the negative parts of g through reversed
// logcumsumexps, each log |g| floored at the dtype's lowest number (log 0 would give NaN there).
Tensor logcumsumexp_backward(const Tensor& g, const Tensor& x, const Tensor& out, int64_t d) {
  const double lowest =
      g.dtype() == kFloat ? double(std::numeric_limits<float>::lowest()) : std::numeric_limits<double>::lowest();
  auto reversed = [d](const Tensor& t) { return flip(flip(t, {d}).logcumsumexp(d), {d}); };
  const Tensor log_abs = g.abs().log();
  const Tensor positive = (reversed(where(g > 0, log_abs, lowest) - out) + x).exp();
  const Tensor negative = (reversed(where(g < 0, log_abs, lowest) - out) + x).exp();
  return positive - negative;
}

struct Row {
  Op op;
  Derivative d;
};
#define KILN_UNPARENTHESIZED(...) __VA_ARGS__
// One row per op: those of frontend/elementwise_ops.def's table ops declared there, beside the op;
// the rest laid out by hand as a table.
// clang-format off
const Row kRows[] = {
#define KILN_DERIVATIVE(op, grad_fn, inputs, output, used_by, ...) \
    {Op::op, {grad_fn, inputs, output, [](const BackwardArgs& a) -> TL { __VA_ARGS__ }, {KILN_UNPARENTHESIZED used_by}}},
#include "frontend/elementwise_ops.def"
    {Op::Copy, {"CloneBackward0", kNone, false, [](const BackwardArgs& a) -> TL { return {a.grad}; }}},
    {Op::Cast, {"ToCopyBackward0", kNone, false, [](const BackwardArgs& a) -> TL { return {a.grad.to(a.in_dtypes[0])}; }}},
    {Op::Neg, {"NegBackward0", kNone, false, [](const BackwardArgs& a) -> TL { return {-a.grad}; }}},
    {Op::Trigamma, {"PolygammaBackward0", kNone, false, [](const BackwardArgs&) -> TL {
       throw Error("polygamma: the derivative of polygamma(1, x), polygamma(2, x), is not implemented");
     }}},
    {Op::Add, {"AddBackward0", kNone, false, [](const BackwardArgs& a) -> TL { return {a.grad, a.grad}; }}},
    {Op::Sub, {"SubBackward0", kNone, false, [](const BackwardArgs& a) -> TL { return {a.grad, -a.grad}; }}},
    {Op::Mul, {"MulBackward0", kIn01, false, [](const BackwardArgs& a) -> TL {
       return {a.needs[0] ? a.grad * a.in[1] : Tensor(), a.needs[1] ? a.grad * a.in[0] : Tensor()};
     }, {0b10, 0b01}}},
    {Op::Div, {"DivBackward0", kIn01, false, [](const BackwardArgs& a) -> TL {
       return {a.needs[0] ? a.grad / a.in[1] : Tensor(),
               a.needs[1] ? -(a.grad * a.in[0]) / (a.in[1] * a.in[1]) : Tensor()};
     }, {0b10, 0b11}}},
    {Op::Pow, {"PowBackward1", kIn01, true, [](const BackwardArgs& a) -> TL {
       const Tensor &x = a.in[0], &e = a.in[1];
       Tensor gx, ge;
       if (a.needs[0]) gx = where(e == 0.0, zeros_like(a.grad), a.grad * e * x.pow(e - 1));
       // PyTorch's convention: no gradient through the exponent where the base is 0 and e >= 0.
       if (a.needs[1]) ge = where(logical_and(x == 0.0, e >= 0.0), zeros_like(a.grad), a.grad * a.out * x.log());
       return {gx, ge};
     }}},
    {Op::Max, {"MaximumBackward0", kIn01, false, [](const BackwardArgs& a) -> TL {
       Tensor tie = a.in[0] == a.in[1], half = a.grad / 2, z = zeros_like(a.grad);
       return {where(tie, half, where(a.in[0] > a.in[1], a.grad, z)),
               where(tie, half, where(a.in[1] > a.in[0], a.grad, z))};
     }}},
    {Op::Min, {"MinimumBackward0", kIn01, false, [](const BackwardArgs& a) -> TL {
       Tensor tie = a.in[0] == a.in[1], half = a.grad / 2, z = zeros_like(a.grad);
       return {where(tie, half, where(a.in[0] < a.in[1], a.grad, z)),
               where(tie, half, where(a.in[1] < a.in[0], a.grad, z))};
     }}},
    {Op::Where, {"WhereBackward0", kIn0, false, [](const BackwardArgs& a) -> TL {
       Tensor z = zeros_like(a.grad);
       return {Tensor(), where(a.in[0], a.grad, z), where(a.in[0], z, a.grad)};
     }}},
    {Op::Sum, {"SumBackward1", kNone, false, [](const BackwardArgs& a) -> TL { return {unreduce(a.grad, a.in_shapes[0], a.attrs.ints)}; }}},
    {Op::Prod, {"ProdBackward1", kIn0, true, [](const BackwardArgs& a) -> TL {
       // d out / d x_i is the product of the other entries of x_i's slice: out / x_i where x_i != 0;
       // at a slice's only zero, the product of its non-zero entries; with two zeros or more, 0.
       const Tensor& x = a.in[0];
       const Shape& shape = a.in_shapes[0];
       Tensor zero = x == 0.0, safe = where(zero, ones_like(x), x);
       Tensor nonzero_prod = primitive(Op::Prod, {safe}, kept(shape, a.attrs.ints), a.out.dtype(), a.attrs);
       Tensor one_zero = sum(zero, a.attrs.ints, true) == 1;
       Tensor at_zero = where(one_zero, nonzero_prod, zeros_like(nonzero_prod)).expand(shape);
       return {unreduce(a.grad, shape, a.attrs.ints) * where(zero, at_zero, unreduce(a.out, shape, a.attrs.ints) / safe)};
     }}},
    {Op::ReduceMax, {"AmaxBackward0", kIn0, true, [](const BackwardArgs& a) -> TL {
       const auto& axes = a.attrs.ints;
       const Shape& shape = a.in_shapes[0];
       if (a.attrs.scalar != 0)  // max_pool2d: to the first maximum
         return {first_maximum(a.in[0], unreduce(a.out, shape, axes), axes, a.grad.dtype()) * unreduce(a.grad, shape, axes)};
       // Ties share the gradient equally, as in PyTorch's amax.
       Tensor mask = (a.in[0] == unreduce(a.out, shape, axes)).to(a.grad.dtype());
       return {mask * unreduce(a.grad, shape, axes) / sum(mask, axes, true)};
     }}},
    {Op::ReduceMin, {"AminBackward0", kIn0, true, [](const BackwardArgs& a) -> TL {
       const auto& axes = a.attrs.ints;
       Tensor mask = (a.in[0] == unreduce(a.out, a.in_shapes[0], axes)).to(a.grad.dtype());
       return {mask * unreduce(a.grad, a.in_shapes[0], axes) / sum(mask, axes, true)};
     }}},
    {Op::Matmul, {"BmmBackward0", kIn01, false, [](const BackwardArgs& a) -> TL {
       Tensor ga, gb;  // d/dA = G B^T, d/dB = A^T G, or their transposes' transposes
       if (a.needs[0])
         ga = column_major(a, 0) ? transpose_last(a.in[1].bmm(transpose_last(a.grad))) : a.grad.bmm(transpose_last(a.in[1]));
       if (a.needs[1])
         gb = column_major(a, 1) ? transpose_last(transpose_last(a.grad).bmm(a.in[0])) : transpose_last(a.in[0]).bmm(a.grad);
       return {ga, gb};
     }, {0b10, 0b01}}},
    {Op::IndexSelect, {"IndexSelectBackward0", kIn1, false, [](const BackwardArgs& a) -> TL {
       Tensor base = zeros(a.in_shapes[0], a.grad.options());
       return {primitive(Op::IndexAdd, {base, a.in[1], a.grad}, a.in_shapes[0], a.grad.dtype(), a.attrs), Tensor()};
     }}},
    {Op::Gather, {"GatherBackward0", kIn1, false, [](const BackwardArgs& a) -> TL {
       Tensor base = zeros(a.in_shapes[0], a.grad.options());
       return {primitive(Op::ScatterAdd, {base, a.in[1], a.grad}, a.in_shapes[0], a.grad.dtype(), a.attrs), Tensor()};
     }}},
    {Op::IndexAdd, {"IndexAddBackward0", kIn1, false, [](const BackwardArgs& a) -> TL {
       return {a.grad, Tensor(), a.grad.index_select(a.attrs.ints[0], a.in[1])};
     }}},
    {Op::ScatterAdd, {"ScatterAddBackward0", kIn1, false, [](const BackwardArgs& a) -> TL {
       return {a.grad, Tensor(), a.grad.gather(a.attrs.ints[0], a.in[1])};
     }}},
    {Op::Cat, {"CatBackward0", kNone, false, [](const BackwardArgs& a) -> TL {
       TL grads;
       int64_t start = 0, dim = a.attrs.ints[0];
       for (const auto& s : a.in_shapes) {
         grads.push_back(a.grad.narrow(dim, start, s[dim]));
         start += s[dim];
       }
       return grads;
     }}},
    {Op::WriteView, {"CopySlices", kNone, false, [](const BackwardArgs& a) -> TL {
       const ir::View window = ir::unpack_view(a.attrs.ints);
       Tensor flat = a.grad.contiguous();
       Tensor value_grad = as_strided(flat, window);
       return {flat - embed(value_grad, flat.sizes().vec(), window), value_grad};
     }}},
    {Op::AddView, {"AsStridedScatterBackward0", kNone, false, [](const BackwardArgs& a) -> TL {
       return {a.grad, as_strided(a.grad, ir::unpack_view(a.attrs.ints))};
     }}},
    {Op::CumSum, {"CumsumBackward0", kNone, false, [](const BackwardArgs& a) -> TL { return {reversed_cumsum(a.grad, a.attrs.ints[0])}; }}},
    {Op::CumProd, {"CumprodBackward0", kIn0, true, [](const BackwardArgs& a) -> TL {
       return {cumprod_backward(a.grad, a.in[0], a.out, a.attrs.ints[0])};
     }}},
    {Op::LogCumSumExp, {"LogcumsumexpBackward0", kIn0, true, [](const BackwardArgs& a) -> TL {
       return {logcumsumexp_backward(a.grad, a.in[0], a.out, a.attrs.ints[0])};
     }}},
};
// clang-format on

// The ops with no gradient, said so rather than left out: their results are constants, indices
// or booleans. Every op is in kRows or here (Derivatives.EveryOpIsDeclared checks).
const Op kNoGradient[] = {Op::Const, Op::Input, Op::Not, Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::ArgMax,
                          Op::ArgMin,
                          // positions: the values gathered at them carry the gradient (scan_sort.cpp)
                          Op::CumMaxIndex, Op::CumMinIndex, Op::SortIndex, Op::TopKIndex, Op::KthValueIndex,
                          Op::MedianIndex, Op::ModeIndex, Op::SearchSorted,
                          // integers and bools only
                          Op::BitAnd, Op::BitOr, Op::BitXor, Op::ShiftLeft, Op::ShiftRight, Op::BitNot};

const Derivative kViewRows[] = {
    {"ViewBackward0", kNone, false, [](const BackwardArgs& a) -> TL { return {a.grad.reshape(a.in_shapes[0])}; }},
    {"PermuteBackward0", kNone, false,
     [](const BackwardArgs& a) -> TL {
       std::vector<int64_t> inverse(a.attrs.ints.size());
       for (size_t i = 0; i < inverse.size(); ++i) inverse[a.attrs.ints[i]] = int64_t(i);
       return {a.grad.permute(inverse)};
     }},
    {"ExpandBackward0", kNone, false, [](const BackwardArgs& a) -> TL { return {sum_to(a.grad, a.in_shapes[0])}; }},
    {"AsStridedBackward0", kNone, false,
     [](const BackwardArgs& a) -> TL { return {embed(a.grad, a.in_shapes[0], ir::unpack_view(a.attrs.ints))}; }},
};

// Backward node for one primitive or view: applies its row to the saved values.
class OpBackward final : public autograd::Node {
 public:
  explicit OpBackward(const Derivative* d) : d_(d) {}
  std::string name() const override { return name_ ? name_ : d_->name; }
  void rename(const char* name) { name_ = name; }

  tensor_list apply(tensor_list&& grads) override {
    auto self = shared_from_this();
    TensorList in(saved_inputs_.size());
    for (size_t i = 0; i < saved_inputs_.size(); ++i)
      if (saved_inputs_[i].defined()) in[i] = saved_inputs_[i].unpack(self);
    Tensor out = saved_output_.defined() ? saved_output_.unpack(self) : Tensor();
    std::vector<bool> needs(next_edges.size());
    for (size_t i = 0; i < needs.size(); ++i) needs[i] = next_edges[i].valid();
    return d_->backward(BackwardArgs{grads[0], in, out, attrs_, in_shapes_, in_strides_, in_dtypes_, needs});
  }

  void release_variables() override {
    for (auto& s : saved_inputs_)
      if (s.defined()) s.reset();
    if (saved_output_.defined()) saved_output_.reset();
  }

  void save(Tensors inputs, const Attrs& attrs) {
    attrs_ = attrs;
    saved_inputs_.resize(inputs.size());
    in_shapes_.reserve(inputs.size());
    in_strides_.reserve(inputs.size());
    in_dtypes_.reserve(inputs.size());
    unsigned wanted = 0;  // inputs that want a gradient
    for (size_t i = 0; i < inputs.size(); ++i) wanted |= inputs[i].requires_grad() ? 1u << i : 0u;
    for (size_t i = 0; i < inputs.size(); ++i) {
      in_shapes_.push_back(inputs[i].sizes());
      const auto strides = inputs[i].strides();
      in_strides_.emplace_back(strides.begin(), strides.end());
      in_dtypes_.push_back(inputs[i].dtype());
      if ((d_->save_inputs & (1u << i)) && (d_->used_by[i] == 0 || (d_->used_by[i] & wanted)))
        saved_inputs_[i] = autograd::SavedTensor(inputs[i], false);
    }
  }
  void save_output(const Tensor& out) {
    if (d_->save_output) saved_output_ = autograd::SavedTensor(out, true);
  }

 private:
  const Derivative* d_;
  const char* name_ = nullptr;  // the composite op's name, where one made this node (see named())
  Attrs attrs_;
  InputList<Shape> in_shapes_, in_strides_;
  InputList<ScalarType> in_dtypes_;
  InputList<autograd::SavedTensor> saved_inputs_;
  autograd::SavedTensor saved_output_;
};

void attach(Tensor& out, const Derivative* d, Tensors inputs, const Attrs& attrs) {
  auto node = pool::make_shared<OpBackward>(d);  // one per traced op: from the small-object pool
  node->sequence_nr = next_sequence_nr();
  node->eager_group = tracer::eager_group();
  node->next_edges.reserve(inputs.size());
  for (const auto& t : inputs) node->next_edges.push_back(gradient_edge(t));
  node->output_shapes = {Shape(out.sizes())};
  node->output_dtypes = {out.dtype()};
  node->output_devices = {out.device()};
  node->save(inputs, attrs);
  set_history(out, node);
  node->save_output(out);
}

}  // namespace

uint64_t next_sequence_nr() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

const Derivative* derivative(ir::Op op) {
  static const std::vector<const Derivative*> table = [] {
    std::vector<const Derivative*> t(ir::kOpCount, nullptr);
    for (const auto& row : kRows) t[size_t(row.op)] = &row.d;
    return t;
  }();
  return table[size_t(op)];
}

bool declared_without_gradient(ir::Op op) { return std::count(std::begin(kNoGradient), std::end(kNoGradient), op) > 0; }

const Derivative& view_derivative(ViewKind kind) { return kViewRows[size_t(kind)]; }

Tensor named(Tensor out, const char* grad_fn_name, Tensors inputs) {
  const auto& meta = out.unsafeGetTensorImpl()->autograd;
  if (!meta || !meta->grad_fn) return out;
  for (const auto& t : inputs)  // out is an input, or shares its node: not out's own op
    if (t.defined() && t.unsafeGetTensorImpl()->autograd && t.unsafeGetTensorImpl()->autograd->grad_fn == meta->grad_fn)
      return out;
  if (auto* node = dynamic_cast<OpBackward*>(meta->grad_fn.get())) node->rename(grad_fn_name);
  return out;
}

bool any_requires_grad(Tensors ts) {
  for (const auto& t : ts)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

// Whether `op` over `inputs` records a backward node: the row that differentiates it, if so.
const Derivative* tracked(ir::Op op, Tensors inputs, ScalarType dtype) {
  const Derivative* d = derivative(op);
  return d && autograd::GradMode::is_enabled() && any_requires_grad(inputs) && is_floating(dtype) ? d : nullptr;
}

Tensor elementwise(ir::Op op, Tensors inputs, Shape shape, ScalarType dtype) {
  if (!tracked(op, inputs, dtype)) return record(op, inputs, std::move(shape), dtype, {}, /*broadcast=*/true);
  TensorList expanded;
  expanded.reserve(inputs.size());
  for (const auto& t : inputs) expanded.push_back(t.expand(shape));
  return primitive(op, expanded, std::move(shape), dtype);
}

Tensor primitive(ir::Op op, Tensors inputs, Shape shape, ScalarType dtype, Attrs attrs,
                 const std::optional<Shape>& sizes) {
  const Derivative* d = tracked(op, inputs, dtype);
  const bool track = d != nullptr;
  Tensor out = record(op, inputs, std::move(shape), dtype, track ? attrs : std::move(attrs));
  if (sizes) {  // the same contiguous layout, seen without some size-1 axes
    TensorImpl& impl = *out.unsafeGetTensorImpl();
    impl.sizes = *sizes;
    impl.strides = contiguous_strides(*sizes);
  }
  if (track) attach(out, d, inputs, attrs);
  return out;
}

Tensor copy_with_strides(const Tensor& x, const Shape& strides) {
  // The dims from the outermost in memory; for dims of size above 1 a dense layout's strides
  // differ, and where a dim of size 1 goes changes no offset.
  std::vector<int64_t> order(size_t(x.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  Shape in_memory_order, read_strides;
  for (int64_t d : order) {
    in_memory_order.push_back(x.sizes()[size_t(d)]);
    read_strides.push_back(x.strides()[size_t(d)]);
  }
  const Derivative* d = tracked(ir::Op::Copy, {x}, x.dtype());
  Tensor out =
      record(ir::Op::Copy, {alias(x, in_memory_order, read_strides, x.storage_offset())}, in_memory_order, x.dtype());
  TensorImpl& impl = *out.unsafeGetTensorImpl();
  impl.sizes = x.sizes();
  impl.strides = strides;
  if (d) attach(out, d, {x}, {});  // the gradient is x's, in x's shape: the node reads x
  return out;
}

Tensor view(const Tensor& self, ViewKind kind, Shape sizes, Shape strides, int64_t offset, Attrs attrs) {
  Tensor out = alias(self, std::move(sizes), std::move(strides), offset);
  const auto& base = self.unsafeGetTensorImpl()->view_base;
  out.unsafeGetTensorImpl()->view_base = base ? base : self.impl_ptr();
  if (autograd::GradMode::is_enabled() && self.requires_grad()) attach(out, &view_derivative(kind), {self}, attrs);
  return out;
}

Tensor as_strided(const Tensor& t, const ir::View& window) {
  Tensor base = t.contiguous();
  return view(base, ViewKind::Strided, window.sizes, window.strides, base.storage_offset() + window.offset,
              Attrs{ir::pack_view(window)});
}

// Overlapping windows (convolution, pooling) accumulate: AddView, not WriteView. The gradient is
// read through its own view, so a permuted or expanded one costs no copy first.
Tensor embed(const Tensor& g, const Shape& shape, const ir::View& window) {
  Tensor flat_zeros = zeros({numel_of(shape)}, g.options());
  Tensor out = primitive(ir::Op::AddView, {flat_zeros, g}, {numel_of(shape)}, g.dtype(), Attrs{ir::pack_view(window)});
  return out.reshape(shape);
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.sizes() == IntArrayRef(shape)) return g;
  const int64_t lead = g.dim() - int64_t(shape.size());
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < g.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.size(d) != 1)) axes.push_back(d);
  Tensor s = axes.empty() ? g : g.sum(axes, true);
  return s.reshape(shape);
}

void set_history(Tensor& out, const std::shared_ptr<autograd::Node>& node, uint32_t output_nr) {
  TensorImpl& impl = *out.unsafeGetTensorImpl();
  if (!impl.autograd) impl.autograd = std::make_unique<autograd::AutogradMeta>();
  impl.autograd->requires_grad = true;
  impl.autograd->grad_fn = node;
  impl.autograd->output_nr = output_nr;
  impl.autograd->version = impl.storage->version;
}

}  // namespace kiln::detail
