// The optimizer base: param groups, zero_grad and the state map.
#include "frontend/optim/optimizer.h"

#include <sstream>
#include <unordered_set>

#include "frontend/autograd.h"
#include "tracer/storage.h"

namespace kiln::optim {

Optimizer::EagerUpdate::EagerUpdate() : uncaught_(tracer::EagerGroup::begin_eager_group()) {}
Optimizer::EagerUpdate::~EagerUpdate() noexcept(false) { tracer::EagerGroup::end_eager_group(uncaught_); }

std::unique_ptr<OptimizerParamState> OptimizerParamState::clone() const {
  throw Error(
      "OptimizerParamState: clone() has not been implemented for this state; derive from "
      "OptimizerCloneableParamState<YourState> instead");
}

std::unique_ptr<OptimizerOptions> OptimizerOptions::clone() const {
  throw Error(
      "OptimizerOptions: clone() has not been implemented for these options; derive from "
      "OptimizerCloneableOptions<YourOptions> instead");
}
double OptimizerOptions::get_lr() const { throw Error("OptimizerOptions: these options do not support get_lr()"); }
void OptimizerOptions::set_lr(const double) { throw Error("OptimizerOptions: these options do not support set_lr()"); }

OptimizerOptions& OptimizerParamGroup::options() {
  KILN_CHECK(options_, "OptimizerParamGroup: this group has no options");
  return *options_;
}
const OptimizerOptions& OptimizerParamGroup::options() const {
  KILN_CHECK(options_, "OptimizerParamGroup: this group has no options");
  return *options_;
}

Optimizer::Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  KILN_CHECK(defaults_, "Optimizer: default options must be given");
  for (const auto& group : param_groups) add_param_group(group);
}

Optimizer::Optimizer(std::vector<Tensor> parameters, std::unique_ptr<OptimizerOptions> defaults)
    : Optimizer(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(parameters))}, std::move(defaults)) {}

void Optimizer::add_param_group(const OptimizerParamGroup& param_group) {
  std::unordered_set<const TensorImpl*> seen;
  for (const auto& group : param_groups_)
    for (const auto& p : group.params()) seen.insert(p.unsafeGetTensorImpl());
  for (const auto& p : param_group.params()) {
    KILN_CHECK(p.defined(), "Optimizer: a parameter is an undefined tensor");
    KILN_CHECK(p.is_leaf(), "Optimizer: can't optimize a non-leaf Tensor");
    KILN_CHECK(p.is_floating_point(), "Optimizer: parameters must be floating point, got ", p.dtype());
    KILN_CHECK(seen.insert(p.unsafeGetTensorImpl()).second,
               "Optimizer: some parameters appear in more than one parameter group (or twice in one)");
  }
  OptimizerParamGroup group(param_group.params());
  group.set_options(param_group.has_options() ? param_group.options().clone() : defaults_->clone());
  param_groups_.push_back(std::move(group));
}

void Optimizer::add_parameters(const std::vector<Tensor>& parameters) {
  KILN_CHECK(!param_groups_.empty(), "Optimizer: add_parameters needs a param group to add to");
  OptimizerParamGroup extra(parameters, param_groups_[0].options().clone());
  // Checked as a group of its own, then merged into the first group.
  add_param_group(extra);
  auto added = std::move(param_groups_.back().params());
  param_groups_.pop_back();
  auto& first = param_groups_[0].params();
  first.insert(first.end(), added.begin(), added.end());
}

void Optimizer::zero_grad(bool set_to_none) {
  for (auto& group : param_groups_)
    for (auto& p : group.params()) autograd::zero_grad(p, set_to_none);
}

const std::vector<Tensor>& Optimizer::parameters() const {
  KILN_CHECK(!param_groups_.empty(), "Optimizer: parameters() of an optimizer without param groups");
  return param_groups_[0].params();
}
std::vector<Tensor>& Optimizer::parameters() {
  KILN_CHECK(!param_groups_.empty(), "Optimizer: parameters() of an optimizer without param groups");
  return param_groups_[0].params();
}

size_t Optimizer::size() const noexcept {
  size_t n = 0;
  for (const auto& group : param_groups_) n += group.params().size();
  return n;
}

std::string Optimizer::state_key(const Tensor& param) {
  std::ostringstream os;
  os << static_cast<const void*>(param.unsafeGetTensorImpl());
  return os.str();
}

Tensor Optimizer::run_closure(const LossClosure& closure) {
  if (!closure) return Tensor();
  autograd::AutoGradMode enable_grad(true);
  return closure();
}

}  // namespace kiln::optim
