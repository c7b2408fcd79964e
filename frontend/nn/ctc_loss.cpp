// ctc_loss (losses_more.h) as libtorch 1.13 defines it, from kiln's ops: the CTC forward recursion
// over time in log space, every sample of the batch at once (each target extended with blanks and
// padded to the longest), so that autograd gives the gradient.
#include <algorithm>
#include <cmath>

#include "frontend/nn/loss_reduction.h"
#include "frontend/nn/losses_more.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn::functional {

using kiln::detail::shape_str;

namespace {

// Where no alignment reaches: a large finite number rather than -inf, so that logsumexp's
// gradient stays finite (0, not NaN) through the unreachable states. A loss past half of it is
// infinite.
constexpr double kUnreachable = -1e30;

std::vector<int64_t> lengths(const Tensor& t, int64_t batch, const char* what) {
  KILN_CHECK(t.dim() <= 1 && !t.is_floating_point() && t.numel() == batch, "ctc_loss: ", what,
             " must be of size batch_size (", batch, "), got ", shape_str(t));
  return t.to(kLong).reshape({-1}).to_vector<int64_t>();
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& options) {
  const char* op = "ctc_loss";
  KILN_CHECK(log_probs.is_floating_point() && (log_probs.dim() == 3 || log_probs.dim() == 2), op,
             ": expected log_probs [T, N, C] or [T, C] of a floating point dtype, got ", shape_str(log_probs));
  const bool batched = log_probs.dim() == 3;
  const Tensor lp = batched ? log_probs : log_probs.unsqueeze(1);
  const int64_t steps = lp.size(0), batch = lp.size(1), classes = lp.size(2), blank = options.blank();
  KILN_CHECK(blank >= 0 && blank < classes, op, ": blank must be in label range (blank ", blank, ", ", classes,
             " classes)");
  KILN_CHECK(!targets.is_floating_point(), op, ": expected integer targets, got ", shape_str(targets));
  const std::vector<int64_t> in_len = lengths(input_lengths, batch, "input_lengths");
  const std::vector<int64_t> tgt_len = lengths(target_lengths, batch, "target_lengths");
  const std::vector<int64_t> flat = targets.to(kLong).reshape({-1}).to_vector<int64_t>();
  const bool padded = batched ? targets.dim() == 2 : false;
  const int64_t row = padded ? targets.size(1) : 0;
  // Each sample's extended target: blank, l1, blank, l2, ..., blank; padded with blanks.
  int64_t longest = 1, offset = 0;
  std::vector<std::vector<int64_t>> labels(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    KILN_CHECK(in_len[b] >= 0 && in_len[b] <= steps, op, ": Expected input_lengths to have value at most ", steps,
               ", but got value ", in_len[b], " (log_probs ", shape_str(log_probs), ")");
    KILN_CHECK(tgt_len[b] >= 0, op, ": target_lengths must be non-negative, got ", tgt_len[b]);
    const int64_t start = padded ? b * row : offset;
    KILN_CHECK(padded ? tgt_len[b] <= row : start + tgt_len[b] <= int64_t(flat.size()), op, ": targets ",
               shape_str(targets), " are shorter than target_lengths say (sample ", b, ": ", tgt_len[b], ")");
    for (int64_t j = 0; j < tgt_len[b]; ++j) {
      const int64_t label = flat[size_t(start + j)];
      KILN_CHECK(label >= 0 && label < classes && label != blank, op, ": target ", label, " of sample ", b,
                 " is not a class other than blank (", classes, " classes, blank ", blank, ")");
      labels[size_t(b)].push_back(label);
    }
    offset += tgt_len[b];
    longest = std::max(longest, 2 * tgt_len[b] + 1);
  }
  const int64_t width = longest;
  std::vector<int64_t> extended(size_t(batch * width), blank), ends(size_t(batch * 2));
  std::vector<bool> skip(size_t(batch * width), false);
  std::vector<double> initial(size_t(batch * width), kUnreachable);
  for (int64_t b = 0; b < batch; ++b) {
    const auto& l = labels[size_t(b)];
    for (size_t j = 0; j < l.size(); ++j) extended[size_t(b * width) + 2 * j + 1] = l[j];
    for (int64_t s = 2; s < width; ++s)
      skip[size_t(b * width + s)] = extended[size_t(b * width + s)] != blank &&
                                    extended[size_t(b * width + s)] != extended[size_t(b * width + s - 2)];
    const int64_t last = 2 * int64_t(l.size());  // the final blank; the last label before it
    ends[size_t(2 * b)] = last;
    ends[size_t(2 * b + 1)] = std::max<int64_t>(last - 1, 0);
    initial[size_t(b * width)] = 0;
    if (width > 1 && !l.empty()) initial[size_t(b * width + 1)] = 0;
  }
  const ScalarType dtype = lp.dtype();
  // The tables made here on the host go to the device of log_probs, as each op needs its operands.
  const Device device = lp.device();
  auto on_device = [&device](const Tensor& host) { return host.to(device); };
  // emission[t, b, s] = lp[t, b, extended[b, s]]
  const Tensor index = on_device(tensor(extended)).view({1, batch, width}).expand({steps, batch, width});
  const Tensor emission = lp.gather(2, index);
  const Tensor can_skip = on_device(tensor(std::vector<double>(skip.begin(), skip.end()))).view({batch, width}) > 0.5;
  const Tensor unreachable = full({batch, 1}, kUnreachable, lp.options().dtype(dtype));
  Tensor alpha = on_device(tensor(initial, dtype)).view({batch, width}) + emission[0];
  for (int64_t t = 1; t < steps; ++t) {
    const Tensor from_previous = cat({unreachable, alpha.narrow(1, 0, width - 1)}, 1);
    Tensor from_skip = width > 2 ? cat({unreachable, unreachable, alpha.narrow(1, 0, width - 2)}, 1)
                                 : full({batch, width}, kUnreachable, lp.options().dtype(dtype));
    from_skip = where(can_skip, from_skip, kUnreachable);
    const Tensor next = stack({alpha, from_previous, from_skip}).logsumexp({0}) + emission[t];
    // Samples whose input has ended keep their last step's alpha.
    std::vector<double> running(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) running[size_t(b)] = t < in_len[b] ? 1.0 : 0.0;
    alpha = where(on_device(tensor(running)).view({batch, 1}) > 0.5, next, alpha);
  }
  // The sum over the two states an alignment may end in (one when the target is empty).
  std::vector<double> second_end(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) second_end[size_t(b)] = labels[size_t(b)].empty() ? 0.0 : 1.0;
  Tensor finals = alpha.gather(1, on_device(tensor(ends)).view({batch, 2}));
  finals = where(on_device(tensor(second_end)).view({batch, 1}) > 0.5 || on_device(arange(2)).view({1, 2}) == 0, finals,
                 kUnreachable);
  Tensor loss = -finals.logsumexp({1});
  std::vector<double> no_input(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) no_input[size_t(b)] = in_len[b] == 0 ? 1.0 : 0.0;
  const Tensor infinite = (loss > -kUnreachable / 2) | (on_device(tensor(no_input)) > 0.5);
  loss = where(infinite, options.zero_infinity() ? 0.0 : INFINITY, loss);
  const std::string& r = options.reduction().name();
  if (r == "mean") {
    const Tensor divisor = on_device(tensor(tgt_len)).to(dtype).clamp_min(1);
    return (loss / divisor).mean();
  }
  if (r == "none" && !batched) return loss.reshape({});
  return reduce_loss(loss, options.reduction(), op);
}

}  // namespace kiln::nn::functional
