// Adam::step and AdamW::step, as libtorch 1.13's (torch/csrc/api/src/optim/adam.cpp, adamw.cpp).
#include "frontend/optim/adam.h"

#include <cmath>

#include "frontend/autograd.h"
#include "frontend/native_ops.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::optim {

namespace {

template <typename Options>
void check_adam_options(const Options& o, const char* name) {
  KILN_CHECK(o.lr() >= 0, name, ": invalid learning rate: ", o.lr());
  KILN_CHECK(o.eps() >= 0, name, ": invalid epsilon value: ", o.eps());
  const auto [beta1, beta2] = o.betas();
  KILN_CHECK(0 <= beta1 && beta1 < 1.0, name, ": invalid beta parameter at index 0: ", beta1);
  KILN_CHECK(0 <= beta2 && beta2 < 1.0, name, ": invalid beta parameter at index 1: ", beta2);
  KILN_CHECK(o.weight_decay() >= 0, name, ": invalid weight_decay value: ", o.weight_decay());
}

AdamParamState& init_state(AdamParamState& state, const Tensor& p, bool amsgrad) {
  if (!state.exp_avg().defined()) {
    state.exp_avg(detail::zeros_in_memory(p));
    state.exp_avg_sq(detail::zeros_in_memory(p));
    if (amsgrad) state.max_exp_avg_sq(detail::zeros_in_memory(p));
  }
  return state;
}

// The moment updates and the parameter update the two share, given the gradient to use: first
// p *= decay (AdamW's decoupled weight decay) and grad += weight_decay * p (Adam's L2 term).
// Eager mode runs them as one kernel (native_ops.h).
template <typename Options>
void adam_update(Tensor& p, Tensor grad, AdamParamState& state, const Options& options, double decay,
                 double weight_decay) {
  state.step(state.step() + 1);
  const auto [beta1, beta2] = options.betas();
  const double bias_correction1 = 1 - std::pow(beta1, double(state.step()));
  const double bias_correction2 = 1 - std::pow(beta2, double(state.step()));
  if (!options.amsgrad()) {
    codegen::native::AdamArgs args;
    args.decay = decay;
    args.weight_decay = weight_decay;
    args.beta1 = beta1;
    args.beta2 = beta2;
    args.eps = options.eps();
    args.step_size = options.lr() / bias_correction1;
    args.sqrt_bias_correction2 = std::sqrt(bias_correction2);
    if (detail::native::adam_step(p, grad, state.exp_avg(), state.exp_avg_sq(), args)) return;
  }
  if (decay != 1) p.mul_(decay);
  if (weight_decay != 0) grad = grad.add(p, weight_decay);

  state.exp_avg().mul_(beta1).add_(grad, 1 - beta1);
  state.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);

  Tensor second_moment = state.exp_avg_sq();
  if (options.amsgrad()) {
    // The running maximum of the second moment normalizes instead.
    if (!state.max_exp_avg_sq().defined()) state.max_exp_avg_sq(detail::zeros_in_memory(p));
    state.max_exp_avg_sq().copy_(maximum(state.max_exp_avg_sq(), state.exp_avg_sq()));
    second_moment = state.max_exp_avg_sq();
  }
  Tensor denom = (second_moment.sqrt() / std::sqrt(bias_correction2)).add_(options.eps());
  const double step_size = options.lr() / bias_correction1;
  p.addcdiv_(state.exp_avg(), denom, -step_size);
}

}  // namespace

Adam::Adam(std::vector<OptimizerParamGroup> param_groups, AdamOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<AdamOptions>(defaults)) {
  check_adam_options(defaults, "Adam");
}

Tensor Adam::step(LossClosure closure) {
  Tensor loss = run_closure(closure);
  update_parameters<AdamOptions>([&](Tensor& p, AdamOptions& options) {
    Tensor grad = p.grad();
    auto& state = init_state(state_of<AdamParamState>(p, [] { return std::make_unique<AdamParamState>(); }), p,
                             options.amsgrad());
    // Adam's weight decay is L2 regularization: added to the gradient.
    adam_update(p, grad, state, options, 1.0, options.weight_decay());
  });
  return loss;
}

AdamW::AdamW(std::vector<OptimizerParamGroup> param_groups, AdamWOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<AdamWOptions>(defaults)) {
  check_adam_options(defaults, "AdamW");
}

Tensor AdamW::step(LossClosure closure) {
  Tensor loss = run_closure(closure);
  update_parameters<AdamWOptions>([&](Tensor& p, AdamWOptions& options) {
    auto& state = init_state(state_of<AdamParamState>(p, [] { return std::make_unique<AdamParamState>(); }), p,
                             options.amsgrad());
    // Decoupled weight decay: the weights shrink before the Adam update.
    adam_update(p, p.grad(), state, options, 1 - options.lr() * options.weight_decay(), 0.0);
  });
  return loss;
}

}  // namespace kiln::optim
