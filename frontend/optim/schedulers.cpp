// LRScheduler, StepLR and CosineAnnealingLR.
#include "frontend/optim/schedulers.h"

#include <cmath>

#include "frontend/nn/archive.h"

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

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, const unsigned T_max, const double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min), base_lrs_(get_current_lrs()) {
  KILN_CHECK(T_max > 0, "CosineAnnealingLR: T_max must be positive");
}

std::vector<double> CosineAnnealingLR::get_lrs() {
  // step() counts after asking, so this is the t the coming step() reaches.
  const double t = double(step_count_ + 1), pi = std::acos(-1.0);
  std::vector<double> lrs = base_lrs_;
  for (auto& lr : lrs) lr = eta_min_ + (lr - eta_min_) * (1 + std::cos(pi * t / T_max_)) / 2;
  return lrs;
}

void LRScheduler::save(serialize::OutputArchive& archive) const { archive.write("step_count", int64_t(step_count_)); }

void LRScheduler::load(serialize::InputArchive& archive) {
  IValue count;
  archive.read("step_count", count);
  const int64_t value = count.toInt();
  KILN_CHECK(value >= 0 && value <= int64_t(UINT32_MAX), archive.where(), "\"step_count\" ", value, " is out of range");
  step_count_ = unsigned(value);
}

void CosineAnnealingLR::save(serialize::OutputArchive& archive) const {
  LRScheduler::save(archive);
  for (size_t i = 0; i < base_lrs_.size(); ++i) archive.write("base_lrs." + std::to_string(i), base_lrs_[i]);
}

void CosineAnnealingLR::load(serialize::InputArchive& archive) {
  // Read all before changing anything.
  std::vector<double> base_lrs;
  IValue lr;
  while (archive.try_read("base_lrs." + std::to_string(base_lrs.size()), lr)) base_lrs.push_back(lr.toDouble());
  KILN_CHECK(base_lrs.size() == base_lrs_.size(), archive.where(), "CosineAnnealingLR: the file has ", base_lrs.size(),
             " base learning rate(s), the optimizer ", base_lrs_.size(), " param group(s)");
  LRScheduler::load(archive);
  base_lrs_ = std::move(base_lrs);
}

serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const LRScheduler& scheduler) {
  scheduler.save(archive);
  return archive;
}
serialize::InputArchive& operator>>(serialize::InputArchive& archive, LRScheduler& scheduler) {
  scheduler.load(archive);
  return archive;
}

}  // namespace kiln::optim
