// SGD::step, line for line the update of libtorch 1.13 (torch/csrc/api/src/optim/sgd.cpp).
#include "frontend/optim/sgd.h"

#include "frontend/autograd.h"
#include "frontend/native_ops.h"
#include "frontend/ops.h"

namespace kiln::optim {

SGD::SGD(std::vector<OptimizerParamGroup> param_groups, SGDOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<SGDOptions>(defaults)) {
  KILN_CHECK(defaults.lr() >= 0, "SGD: invalid learning rate: ", defaults.lr());
  KILN_CHECK(defaults.momentum() >= 0, "SGD: invalid momentum value: ", defaults.momentum());
  KILN_CHECK(defaults.weight_decay() >= 0, "SGD: invalid weight_decay value: ", defaults.weight_decay());
  KILN_CHECK(!defaults.nesterov() || (defaults.momentum() > 0 && defaults.dampening() == 0),
             "SGD: nesterov momentum requires a momentum and zero dampening");
}

Tensor SGD::step(LossClosure closure) {
  Tensor loss = run_closure(closure);
  update_parameters<SGDOptions>([&](Tensor& p, SGDOptions& options) {
    Tensor d_p = p.grad();
    auto* existing = static_cast<SGDParamState*>(options.momentum() != 0 ? state_[state_key(p)].get() : nullptr);
    if (options.momentum() == 0 || existing) {  // eager mode: one kernel (the first momentum step makes the buffer)
      codegen::native::SgdArgs args;
      args.lr = options.lr();
      args.momentum = options.momentum();
      args.dampening = options.dampening();
      args.weight_decay = options.weight_decay();
      args.nesterov = options.nesterov();
      Tensor no_buffer;
      if (detail::native::sgd_step(p, d_p, existing ? existing->momentum_buffer() : no_buffer, args)) return;
    }
    if (options.weight_decay() != 0) d_p = d_p.add(p, options.weight_decay());
    if (options.momentum() != 0) {
      Tensor buf;
      auto* state = static_cast<SGDParamState*>(state_[state_key(p)].get());
      if (!state) {
        // The first step starts the buffer at the gradient itself (no dampening).
        buf = d_p.clone().detach();
        auto fresh = std::make_unique<SGDParamState>();
        fresh->momentum_buffer(buf);
        state_[state_key(p)] = std::move(fresh);
      } else {
        buf = state->momentum_buffer();
        buf.mul_(options.momentum()).add_(d_p, 1 - options.dampening());
      }
      d_p = options.nesterov() ? d_p.add(buf, options.momentum()) : buf;
    }
    p.add_(d_p, -options.lr());
  });
  return loss;
}

}  // namespace kiln::optim
