// Learning-rate schedulers, as libtorch 1.13's torch::optim::LRScheduler and StepLR, and PyTorch's
// CosineAnnealingLR: each step() sets the learning rate of every param group of the optimizer.
#pragma once
#include <vector>

#include "frontend/optim/optimizer.h"

namespace kiln::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {}
  virtual ~LRScheduler() = default;
  void step();

  // kiln's addition (libtorch 1.13 saves no scheduler): the number of steps taken, the value
  // "step_count", so that a run resumed from a checkpoint decays when the uninterrupted run
  // would. The learning rates themselves are the optimizer's options, which it saves.
  // `torch::save(scheduler, path)` / `torch::load(scheduler, path)` work too.
  virtual void save(serialize::OutputArchive& archive) const;
  virtual void load(serialize::InputArchive& archive);

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

// Anneals every learning rate from its value at construction (base_lr) to eta_min along a cosine:
// after t calls of step(), lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2,
// PyTorch's closed form (libtorch 1.13 has no C++ CosineAnnealingLR). As in PyTorch, t counts
// from the first step() (unlike StepLR above), and past T_max the cosine climbs back.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, const unsigned T_max, const double eta_min = 0);

 private:
  std::vector<double> get_lrs() override;
  void save(serialize::OutputArchive& archive) const override;  // and "base_lrs.<group>"
  void load(serialize::InputArchive& archive) override;
  const unsigned T_max_;
  const double eta_min_;
  std::vector<double> base_lrs_;
};

serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const LRScheduler& scheduler);
serialize::InputArchive& operator>>(serialize::InputArchive& archive, LRScheduler& scheduler);

}  // namespace kiln::optim
