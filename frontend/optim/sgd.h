// Stochastic gradient descent with momentum, dampening, weight decay and Nesterov momentum, as
// libtorch 1.13's torch::optim::SGD.
#pragma once
#include "frontend/optim/optimizer.h"

namespace kiln::optim {

struct SGDOptions : public OptimizerCloneableOptions<SGDOptions> {
  SGDOptions(double lr) : lr_(lr) {}
  KILN_ARG(double, lr);
  KILN_ARG(double, momentum) = 0;
  KILN_ARG(double, dampening) = 0;
  KILN_ARG(double, weight_decay) = 0;
  KILN_ARG(bool, nesterov) = false;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct SGDParamState : public OptimizerCloneableParamState<SGDParamState> {
  KILN_ARG(Tensor, momentum_buffer);
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<OptimizerParamGroup> param_groups, SGDOptions defaults);
  SGD(std::vector<Tensor> params, SGDOptions defaults) : SGD({OptimizerParamGroup(std::move(params))}, defaults) {}
  Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace kiln::optim
