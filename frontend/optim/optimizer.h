// optim::Optimizer, the base of SGD, Adam, AdamW and RMSprop, as libtorch 1.13 shapes it: groups of
// parameters, each with its own options (learning rate...), and per-parameter state.
//
// A step is a handful of in-place ops per parameter under NoGradGuard. They are recorded lazily
// like everything else, so a step lands in the same segment as the forward and backward passes
// and fuses with them; no step ever reads a value (no item(), no branching on data). A step ends
// its segment (computes what is live, as a read would): a loop that never reads a value then
// flushes the same segment every step, where segments cut at KILN_SEGMENT_CAP nodes began and
// ended anywhere in a step, each cut a new structure to partition and compile (about 30 kernels
// more every few hundred steps of an MLP).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "frontend/autograd.h"
#include "frontend/nn/arg.h"
#include "frontend/tensor.h"

namespace kiln::serialize {
class OutputArchive;
class InputArchive;
}  // namespace kiln::serialize

namespace kiln::optim {

// What an optimizer remembers for one parameter (Adam's moments, SGD's momentum buffer).
class OptimizerParamState {
 public:
  virtual std::unique_ptr<OptimizerParamState> clone() const;
  virtual ~OptimizerParamState() = default;
};

template <typename Derived>
class OptimizerCloneableParamState : public OptimizerParamState {
 public:
  std::unique_ptr<OptimizerParamState> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

// The options of one param group. Concrete options (AdamOptions...) derive from this; a group's
// options() can be cast to them: `static_cast<AdamOptions&>(group.options()).lr(0.01)`.
class OptimizerOptions {
 public:
  virtual std::unique_ptr<OptimizerOptions> clone() const;
  virtual ~OptimizerOptions() = default;
  virtual double get_lr() const;
  virtual void set_lr(const double lr);
};

template <typename Derived>
class OptimizerCloneableOptions : public OptimizerOptions {
 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& other)
      : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr) {}
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
    return *this;
  }
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

class Optimizer {
 public:
  Optimizer(const Optimizer&) = delete;
  Optimizer(Optimizer&&) = default;
  // Groups without options get a copy of `defaults`.
  Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults);
  Optimizer(std::vector<Tensor> parameters, std::unique_ptr<OptimizerOptions> defaults);
  virtual ~Optimizer() = default;

  using LossClosure = std::function<Tensor()>;
  // Updates every parameter that has a gradient; a closure, if given, is called first (with
  // gradients enabled) and its loss returned.
  virtual Tensor step(LossClosure closure = nullptr) = 0;

  // Every parameter must be a leaf and belong to one group only.
  void add_param_group(const OptimizerParamGroup& param_group);
  void add_parameters(const std::vector<Tensor>& parameters);  // to the first group
  // Zeroes the gradients (libtorch 1.13 has no set_to_none here; kiln adds it, off by default).
  void zero_grad(bool set_to_none = false);

  const std::vector<Tensor>& parameters() const;  // of the first group
  std::vector<Tensor>& parameters();
  size_t size() const noexcept;  // parameters over all groups
  OptimizerOptions& defaults() noexcept { return *defaults_; }
  const OptimizerOptions& defaults() const noexcept { return *defaults_; }
  std::vector<OptimizerParamGroup>& param_groups() noexcept { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const noexcept { return param_groups_; }
  // Per-parameter state, keyed by the parameter's TensorImpl address as libtorch keys it.
  std::unordered_map<std::string, std::unique_ptr<OptimizerParamState>>& state() noexcept { return state_; }
  const std::unordered_map<std::string, std::unique_ptr<OptimizerParamState>>& state() const noexcept { return state_; }

  // --- serialization (frontend/optim/serialize.cpp), for SGD, Adam, AdamW and RMSprop ---
  // Writes each parameter's state as tensors "state.<index>.<name>" (parameters numbered across
  // the groups in order, as PyTorch's state_dict numbers them) and the structure (the type, each
  // group's parameters, their shapes and options, the step counts) as JSON text under the value
  // "optimizer". Unlike libtorch 1.13, load() restores each group's options (lr...) too, so a run
  // resumed with a scheduler continues. load() replaces all state (state absent from the file,
  // like SGD's momentum before the first step, stays absent) and throws kiln::Error naming the
  // file and the mismatch (another type, another number of groups or parameters, other shapes,
  // malformed metadata) before changing anything.
  virtual void save(serialize::OutputArchive& archive) const;
  virtual void load(serialize::InputArchive& archive);

 protected:
  static std::string state_key(const Tensor& param);
  // The state of `param`, made by `make` on first use.
  template <typename State, typename Make>
  State& state_of(const Tensor& param, Make&& make) {
    auto& slot = state_[state_key(param)];
    if (!slot) slot = make();
    return static_cast<State&>(*slot);
  }
  // Runs the closure (if any) with gradients enabled.
  static Tensor run_closure(const LossClosure& closure);
  // A tracer::EagerGroup (its header is not one of the public ones).
  class EagerUpdate {
   public:
    EagerUpdate();
    ~EagerUpdate() noexcept(false);
    EagerUpdate(const EagerUpdate&) = delete;
    EagerUpdate& operator=(const EagerUpdate&) = delete;

   private:
    int uncaught_;
  };
  // The loop every step() shares: `update(param, options)` for each parameter that has a
  // gradient, with its group's options, and gradients off.
  template <typename Options, typename Update>
  void update_parameters(Update&& update) {
    autograd::NoGradGuard no_grad;
    for (auto& group : param_groups_) {
      auto& options = static_cast<Options&>(group.options());
      for (auto& p : group.params())
        if (p.grad().defined()) {
          EagerUpdate eager;  // eager mode runs one parameter's update at a time
          update(p, options);
        }
    }
    sync();
  }

  std::vector<OptimizerParamGroup> param_groups_;
  std::unordered_map<std::string, std::unique_ptr<OptimizerParamState>> state_;
  std::unique_ptr<OptimizerOptions> defaults_;
};

// libtorch's `archive << optimizer` and `archive >> optimizer`.
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Optimizer& optimizer);
serialize::InputArchive& operator>>(serialize::InputArchive& archive, Optimizer& optimizer);

}  // namespace kiln::optim
