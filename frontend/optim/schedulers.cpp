// LRScheduler and StepLR.
#include "frontend/optim/schedulers.h"

namespace kiln::optim {

void LRScheduler::step() {
  std::vector<double> lrs = get_lrs();
  auto& groups = optimizer_.param_groups();
  KILN_CHECK(lrs.size() == groups.size(), "LRScheduler: got ", lrs.size(), " learning rates for ", groups.size(),
             " param groups");
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
  ++step_count_;
}

std::vector<double> LRScheduler::get_current_lrs() const {
  std::vector<double> lrs;
  for (const auto& group : optimizer_.param_groups()) lrs.push_back(group.options().get_lr());
  return lrs;
}

StepLR::StepLR(Optimizer& optimizer, const unsigned step_size, const double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  KILN_CHECK(step_size > 0, "StepLR: step_size must be positive");
}

std::vector<double> StepLR::get_lrs() {
  std::vector<double> lrs = get_current_lrs();
  if (step_count_ != 0 && step_count_ % step_size_ == 0)
    for (auto& lr : lrs) lr *= gamma_;
  return lrs;
}

}  // namespace kiln::optim
