// prelu, gumbel_softmax and embedding_bag (layers_more.h) as libtorch 1.13 defines them, from
// kiln's ops: their gradients come from the ops they are made of.
#include "frontend/nn/layers_more.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "frontend/autograd.h"
#include "frontend/nn/init.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn {

using kiln::detail::shape_str;

namespace functional {

Tensor prelu(const Tensor& input, const Tensor& weight) {
  const int64_t channels = input.dim() >= 2 ? input.size(1) : 1;
  KILN_CHECK(weight.defined() && weight.dim() <= 1 && (weight.numel() == 1 || weight.numel() == channels),
             "prelu: mismatch of parameter numbers and input channel size: weight ", shape_str(weight), " for input ",
             shape_str(input), " (expected 1 or ", channels, " parameters)");
  if (weight.numel() == 1) return where(input > 0, input, weight.reshape({}) * input);
  Shape per_channel(size_t(input.dim()), 1);
  per_channel[1] = channels;
  return where(input > 0, input, weight.reshape(per_channel) * input);
}

Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& options) {
  KILN_CHECK(logits.is_floating_point(), "gumbel_softmax: expected floating point logits, got ", shape_str(logits));
  KILN_CHECK(options.tau() > 0, "gumbel_softmax: tau must be positive, got ", options.tau());
  const int64_t dim = kiln::detail::wrap_dim(options.dim(), std::max<int64_t>(logits.dim(), 1), "gumbel_softmax");
  // Gumbel(0, 1) = -log(E), E ~ Exp(1) = -log(1 - U), U ~ U[0, 1).
  const Tensor exponential = (1 - rand_like(logits)).log().neg().clamp_min(std::numeric_limits<double>::min());
  const Tensor y_soft = ((logits - exponential.log()) / options.tau()).softmax(dim);
  if (!options.hard()) return y_soft;
  Shape along(size_t(std::max<int64_t>(logits.dim(), 1)), 1);
  along[size_t(dim)] = logits.dim() == 0 ? 1 : logits.size(dim);
  const Tensor positions = arange(along[size_t(dim)]).reshape(along);
  const Tensor y_hard = (positions == y_soft.argmax(dim, /*keepdim=*/true)).to(logits.dtype()).reshape(logits.sizes());
  return y_hard - y_soft.detach() + y_soft;
}

// max_norm: the rows `indices` names rescaled in place, without gradient, to norm_type-norm at most
// max_norm (max_norm / (norm + 1e-7) where the norm exceeds it), as libtorch's embedding_renorm_.
static void renorm_rows(const Tensor& weight, std::vector<int64_t> indices, double max_norm, double norm_type) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  if (indices.empty()) return;
  autograd::NoGradGuard no_grad;
  const Tensor rows = tensor(indices);
  const Tensor selected = weight.index_select(0, rows);
  const Tensor norm = selected.norm(norm_type, {1}, /*keepdim=*/true);
  const Tensor scale = where(norm > max_norm, max_norm / (norm + 1e-7), 1.0);
  weight.index_put_({rows}, selected * scale);
}

// Each bag is a row of a [B, Lmax] table of positions into weight's rows, padded with a row past
// the end of weight that holds what adds nothing: zero for sums, -inf for maxima.
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& options) {
  const char* op = "embedding_bag";
  KILN_CHECK(weight.dim() == 2 && weight.is_floating_point(), op, ": weight must be a 2-D floating point tensor, got ",
             shape_str(weight));
  KILN_CHECK(input.dtype() == kLong, op, ": expected int64 indices, got ", shape_str(input), " of ", input.dtype());
  KILN_CHECK(!options.scale_grad_by_freq() || options.mode().name() != "max", op,
             ": max mode does not support scaling the gradient by the frequency");
  KILN_CHECK(!options.max_norm() || *options.max_norm() > 0, op, ": max_norm must be positive, got ",
             options.max_norm().value_or(0));
  const Tensor& psw = options.per_sample_weights();
  const std::string& mode = options.mode().name();
  KILN_CHECK(!psw.defined() || mode == "sum", op,
             ": per_sample_weights was not None. per_sample_weights is only "
             "supported for mode='sum' (got mode='",
             mode, "')");
  KILN_CHECK(!psw.defined() || psw.sizes() == input.sizes(), op, ": expected per_sample_weights of the input's shape ",
             shape_str(input), ", got ", shape_str(psw));
  const int64_t rows = weight.size(0);
  std::vector<int64_t> starts;
  int64_t n = input.numel();
  if (input.dim() == 2) {
    KILN_CHECK(!options.offsets().defined(), op,
               ": if input is 2D, then offsets has to be null, as input is treated "
               "as a mini-batch of fixed length sequences; got input ",
               shape_str(input), " and offsets ", shape_str(options.offsets()));
    for (int64_t b = 0; b < input.size(0); ++b) starts.push_back(b * input.size(1));
  } else {
    KILN_CHECK(input.dim() == 1, op, ": input has to be a 1D or 2D tensor, got ", shape_str(input));
    const Tensor& offsets = options.offsets();
    KILN_CHECK(offsets.defined(), op, ": offsets has to be a 1D int64 tensor for 1D input ", shape_str(input),
               ", got none");
    KILN_CHECK(offsets.dim() == 1 && offsets.dtype() == kLong, op,
               ": offsets has to be a 1D int64 tensor for 1D input ", shape_str(input), ", got ", shape_str(offsets));
    starts = offsets.to_vector<int64_t>();
    if (options.include_last_offset()) {
      KILN_CHECK(!starts.empty(), op, ": include_last_offset needs at least one offset");
      n = starts.back();
      starts.pop_back();
    }
  }
  const std::vector<int64_t> indices = input.reshape({-1}).to_vector<int64_t>();
  for (int64_t row : indices)
    KILN_CHECK(row >= 0 && row < rows, op, ": index ", row, " is out of range for weight ", shape_str(weight));
  if (options.max_norm()) renorm_rows(weight, indices, *options.max_norm(), options.norm_type());
  std::optional<int64_t> padding = options.padding_idx();
  if (padding && *padding < 0) *padding += rows;
  // The bags' entries, without padding_idx.
  const int64_t bags = int64_t(starts.size());
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(bags));
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t begin = starts[size_t(b)], end = b + 1 < bags ? starts[size_t(b) + 1] : n;
    KILN_CHECK(begin >= 0 && begin <= end && end <= int64_t(indices.size()), op,
               ": offsets must be non-decreasing "
               "and within the input's ",
               indices.size(), " entries, got bag ", b, " = [", begin, ", ", end, ")");
    for (int64_t k = begin; k < end; ++k) {
      const int64_t row = indices[size_t(k)];
      if (!padding || row != *padding) members[size_t(b)].push_back(k);
    }
  }
  size_t longest = 1;
  for (const auto& m : members) longest = std::max(longest, m.size());
  std::vector<int64_t> row_table(size_t(bags) * longest, rows), entry_table(size_t(bags) * longest, n);
  std::vector<double> counts(static_cast<size_t>(bags));
  for (size_t b = 0; b < members.size(); ++b) {
    counts[b] = double(members[b].size());
    for (size_t j = 0; j < members[b].size(); ++j) {
      entry_table[b * longest + j] = members[b][j];
      row_table[b * longest + j] = indices[size_t(members[b][j])];
    }
  }
  const int64_t d = weight.size(1), lmax = int64_t(longest);
  // The tables made here on the host go to the weight's device, as each op needs its operands.
  auto on_device = [device = weight.device()](const Tensor& host) { return host.to(device); };
  const double fill = mode == "max" ? -std::numeric_limits<double>::infinity() : 0.0;
  const Tensor extended = cat({weight, full({1, d}, fill, weight.options())}, 0);
  Tensor gathered = extended.index_select(0, on_device(tensor(row_table))).view({bags, lmax, d});
  if (options.scale_grad_by_freq() && weight.requires_grad() && autograd::GradMode::is_enabled()) {
    // Each entry's gradient divided by how often its row occurs in the input (the value unchanged:
    // x + (x - x) * s is x exactly).
    std::vector<double> frequency(size_t(rows + 1), 1.0), scale(row_table.size());
    for (int64_t row : indices) frequency[size_t(row)] += 1.0;
    for (size_t k = 0; k < row_table.size(); ++k) {
      const size_t row = size_t(row_table[k]);
      scale[k] = row < size_t(rows) ? 1.0 / (frequency[row] - 1.0) : 1.0;
    }
    const Tensor fixed = gathered.detach();
    gathered = fixed + (gathered - fixed) * on_device(tensor(scale, weight.dtype())).view({bags, lmax, 1});
  }
  if (psw.defined()) {
    const Tensor w = cat({psw.reshape({-1}).to(weight.dtype()), zeros({1}, weight.options())}, 0);
    gathered = gathered * w.index_select(0, on_device(tensor(entry_table))).view({bags, lmax, 1});
  }
  const Tensor count = on_device(tensor(counts, weight.dtype())).view({bags, 1});
  if (mode == "sum") return gathered.sum({1});
  if (mode == "mean") return gathered.sum({1}) / count.clamp_min(1);
  return where(count > 0, gathered.amax({1}), 0.0);
}

}  // namespace functional

// --- PReLU ---

PReLUImpl::PReLUImpl(const PReLUOptions& options_) : options(options_) {
  KILN_CHECK(options.num_parameters() > 0, "PReLU: num_parameters must be positive, got ", options.num_parameters());
  reset();
}

void PReLUImpl::reset() {
  weight = register_parameter("weight", kiln::empty({options.num_parameters()}));
  reset_parameters();
}

void PReLUImpl::reset_parameters() { init::constant_(weight, options.init()); }

void PReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::PReLU(num_parameters=" << options.num_parameters() << ")";
}

// --- EmbeddingBag ---

EmbeddingBagImpl::EmbeddingBagImpl(const EmbeddingBagOptions& options_) : options(options_) {
  KILN_CHECK(options.num_embeddings() > 0 && options.embedding_dim() > 0,
             "EmbeddingBag: num_embeddings and "
             "embedding_dim must be positive, got ",
             options.num_embeddings(), " and ", options.embedding_dim());
  if (options.padding_idx()) {
    const int64_t p = *options.padding_idx(), rows = options.num_embeddings();
    KILN_CHECK(p >= -rows && p < rows, "EmbeddingBag: padding_idx must be within num_embeddings (", rows, "), got ", p);
    if (p < 0) options.padding_idx(p + rows);
  }
  reset();
}

void EmbeddingBagImpl::reset() {
  const Tensor& given = options._weight();
  if (given.defined()) {
    const bool fits =
        given.dim() == 2 && given.size(0) == options.num_embeddings() && given.size(1) == options.embedding_dim();
    KILN_CHECK(fits, "EmbeddingBag: _weight must be [num_embeddings, embedding_dim], got ", shape_str(given));
    weight = register_parameter("weight", given);
    return;
  }
  weight = register_parameter("weight", kiln::empty({options.num_embeddings(), options.embedding_dim()}));
  reset_parameters();
}

void EmbeddingBagImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) {
    autograd::NoGradGuard no_grad;
    weight.select(0, *options.padding_idx()).fill_(0);
  }
}

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  return functional::embedding_bag(input, weight,
                                   functional::EmbeddingBagFuncOptions()
                                       .offsets(offsets)
                                       .max_norm(options.max_norm())
                                       .norm_type(options.norm_type())
                                       .scale_grad_by_freq(options.scale_grad_by_freq())
                                       .mode(options.mode())
                                       .sparse(options.sparse())
                                       .per_sample_weights(per_sample_weights)
                                       .include_last_offset(options.include_last_offset())
                                       .padding_idx(options.padding_idx()));
}

void EmbeddingBagImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::EmbeddingBag(num_embeddings=" << options.num_embeddings()
         << ", embedding_dim=" << options.embedding_dim();
  if (options.max_norm()) stream << ", max_norm=" << *options.max_norm();
  if (options.norm_type() != 2) stream << ", norm_type=" << options.norm_type();
  if (options.scale_grad_by_freq()) stream << ", scale_grad_by_freq=" << options.scale_grad_by_freq();
  if (options.sparse()) stream << ", sparse=" << options.sparse();
  if (!options.mode().is<enumtype::kMean>()) {
    const std::string& mode = options.mode().name();  // printed as libtorch's tag: kSum, kMax
    stream << ", mode=k" << char(std::toupper(mode[0])) << mode.substr(1);
  }
  if (options.include_last_offset()) stream << ", include_last_offset=" << options.include_last_offset();
  if (options.padding_idx()) stream << ", padding_idx=" << *options.padding_idx();
  stream << ")";
}

}  // namespace kiln::nn
