// RMSprop, as libtorch 1.13's: a running mean of squared gradients (optionally centered), with
// optional momentum and weight decay.
#pragma once
#include "frontend/optim/optimizer.h"

namespace kiln::optim {

struct RMSpropOptions : public OptimizerCloneableOptions<RMSpropOptions> {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  KILN_ARG(double, lr);
  KILN_ARG(double, alpha) = 0.99;
  KILN_ARG(double, eps) = 1e-8;
  KILN_ARG(double, weight_decay) = 0;
  KILN_ARG(double, momentum) = 0;
  KILN_ARG(bool, centered) = false;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct RMSpropParamState : public OptimizerCloneableParamState<RMSpropParamState> {
  KILN_ARG(int64_t, step) = 0;
  KILN_ARG(Tensor, square_avg);
  KILN_ARG(Tensor, momentum_buffer) = {};
  KILN_ARG(Tensor, grad_avg) = {};
};

class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<OptimizerParamGroup> param_groups, RMSpropOptions defaults = {});
  RMSprop(std::vector<Tensor> params, RMSpropOptions defaults = {})
      : RMSprop({OptimizerParamGroup(std::move(params))}, defaults) {}
  Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace kiln::optim
