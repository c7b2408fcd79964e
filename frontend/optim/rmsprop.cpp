// RMSprop::step, as libtorch 1.13's (torch/csrc/api/src/optim/rmsprop.cpp).
#include "frontend/optim/rmsprop.h"

#include "frontend/autograd.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::optim {

RMSprop::RMSprop(std::vector<OptimizerParamGroup> param_groups, RMSpropOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<RMSpropOptions>(defaults)) {
  KILN_CHECK(defaults.lr() >= 0, "RMSprop: invalid learning rate: ", defaults.lr());
  KILN_CHECK(defaults.eps() >= 0, "RMSprop: invalid epsilon value: ", defaults.eps());
  KILN_CHECK(defaults.momentum() >= 0, "RMSprop: invalid momentum value: ", defaults.momentum());
  KILN_CHECK(defaults.weight_decay() >= 0, "RMSprop: invalid weight_decay value: ", defaults.weight_decay());
  KILN_CHECK(defaults.alpha() >= 0, "RMSprop: invalid alpha value: ", defaults.alpha());
}

Tensor RMSprop::step(LossClosure closure) {
  Tensor loss = run_closure(closure);
  update_parameters<RMSpropOptions>([&](Tensor& p, RMSpropOptions& options) {
    Tensor grad = p.grad();
    auto& state = state_of<RMSpropParamState>(p, [&] {
      auto s = std::make_unique<RMSpropParamState>();
      s->square_avg(detail::zeros_in_memory(p));
      if (options.momentum() > 0) s->momentum_buffer(detail::zeros_in_memory(p));
      if (options.centered()) s->grad_avg(detail::zeros_in_memory(p));
      return s;
    });
    state.step(state.step() + 1);
    const double alpha = options.alpha();
    if (options.weight_decay() != 0) grad = grad.add(p, options.weight_decay());
    state.square_avg().mul_(alpha).addcmul_(grad, grad, 1 - alpha);

    Tensor avg;
    if (options.centered()) {
      // Centered: normalize by an estimate of the variance instead of the second moment.
      if (!state.grad_avg().defined()) state.grad_avg(detail::zeros_in_memory(p));
      state.grad_avg().mul_(alpha).add_(grad, 1 - alpha);
      avg = addcmul(state.square_avg(), state.grad_avg(), state.grad_avg(), -1).sqrt_().add_(options.eps());
    } else {
      avg = state.square_avg().sqrt().add_(options.eps());
    }

    if (options.momentum() > 0) {
      if (!state.momentum_buffer().defined()) state.momentum_buffer(detail::zeros_in_memory(p));
      state.momentum_buffer().mul_(options.momentum()).addcdiv_(grad, avg);
      p.add_(state.momentum_buffer(), -options.lr());
    } else {
      p.addcdiv_(grad, avg, -options.lr());
    }
  });
  return loss;
}

}  // namespace kiln::optim
