// Learning-rate schedulers, as libtorch 1.13's torch::optim::LRScheduler and StepLR: each step()
// sets the learning rate of every param group of the optimizer.
#pragma once
#include <vector>

#include "frontend/optim/optimizer.h"

namespace kiln::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {}
  virtual ~LRScheduler() = default;
  void step();

 protected:
  // The learning rates for the coming epoch, one per param group.
  virtual std::vector<double> get_lrs() = 0;
  std::vector<double> get_current_lrs() const;
  unsigned step_count_ = 0;

 private:
  Optimizer& optimizer_;
};

// Multiplies every learning rate by gamma once each step_size steps.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, const unsigned step_size, const double gamma = 0.1);

 private:
  std::vector<double> get_lrs() override;
  const unsigned step_size_;
  const double gamma_;
};

}  // namespace kiln::optim
