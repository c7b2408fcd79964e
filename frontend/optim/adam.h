// Adam and AdamW, as libtorch 1.13's: bias-corrected moments counted per parameter; Adam adds
// weight decay to the gradient, AdamW decays the weights directly (p *= 1 - lr * wd).
#pragma once
#include <tuple>

#include "frontend/optim/optimizer.h"

namespace kiln::optim {

struct AdamOptions : public OptimizerCloneableOptions<AdamOptions> {
  AdamOptions(double lr = 1e-3) : lr_(lr) {}
  using betas_t = std::tuple<double, double>;
  KILN_ARG(double, lr);
  KILN_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  KILN_ARG(double, eps) = 1e-8;
  KILN_ARG(double, weight_decay) = 0;
  KILN_ARG(bool, amsgrad) = false;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct AdamWOptions : public OptimizerCloneableOptions<AdamWOptions> {
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}
  using betas_t = std::tuple<double, double>;
  KILN_ARG(double, lr);
  KILN_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  KILN_ARG(double, eps) = 1e-8;
  KILN_ARG(double, weight_decay) = 1e-2;
  KILN_ARG(bool, amsgrad) = false;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct AdamParamState : public OptimizerCloneableParamState<AdamParamState> {
  KILN_ARG(int64_t, step) = 0;
  KILN_ARG(Tensor, exp_avg);
  KILN_ARG(Tensor, exp_avg_sq);
  KILN_ARG(Tensor, max_exp_avg_sq) = {};
};
using AdamWParamState = AdamParamState;

class Adam : public Optimizer {
 public:
  Adam(std::vector<OptimizerParamGroup> param_groups, AdamOptions defaults = {});
  Adam(std::vector<Tensor> params, AdamOptions defaults = {})
      : Adam({OptimizerParamGroup(std::move(params))}, defaults) {}
  Tensor step(LossClosure closure = nullptr) override;
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<OptimizerParamGroup> param_groups, AdamWOptions defaults = {});
  AdamW(std::vector<Tensor> params, AdamWOptions defaults = {})
      : AdamW({OptimizerParamGroup(std::move(params))}, defaults) {}
  Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace kiln::optim
