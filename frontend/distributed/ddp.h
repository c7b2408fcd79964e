// DistributedDataParallel: a module replicated on every rank of the default process group (or a
// given one), trained on each rank's share of the batch with gradients averaged across ranks.
//
// At construction the ranks check that their models agree (parameters' and buffers' count, shapes
// and dtypes, and the gradient buckets made from them: an error names the first difference) and
// take rank 0's parameters and buffers. Being verified once, DDP's collectives then skip the
// per-call check across ranks. In the backward pass a hook on each parameter puts its gradient
// into a bucket (about 25 MB; 1 MB for the first, so communication starts early); buckets are filled over the
// parameters in reverse order, the order gradients become ready, and each bucket's all-reduce is started, in bucket
// order on every rank, as soon as its last gradient arrives (the lazy segment is flushed there,
// so the rest of the backward pass is traced while it runs). When the last bucket is done every
// parameter's .grad is the average over ranks of (its .grad before backward + this gradient), as
// in PyTorch. Inside no_sync() gradients accumulate locally, and the next synchronized backward
// averages the sum. register_comm_hook hands each bucket's reduction to a communication hook
// (comm_hooks.h: PyTorch's, e.g. bf16_compress_hook, which moves half the bytes).
#pragma once
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "frontend/distributed/comm_hooks.h"
#include "frontend/distributed/process_group.h"
#include "frontend/nn/module.h"

namespace kiln::nn::parallel {

struct DistributedDataParallelOptions {
  // Parameters the forward pass did not use get no gradient: with this on, each forward finds
  // them (a walk over the autograd graph), the buckets count them as ready with their .grad so far
  // (zeros if none), and the ranks all-reduce which parameters each used (one small all-reduce per
  // step). As in PyTorch: a parameter some rank used gets the average; one no rank used keeps its
  // .grad untouched (undefined if it had none).
  bool find_unused_parameters = false;
  double bucket_cap_mb = 25;
  double first_bucket_cap_mb = 1;
  bool broadcast_buffers = true;                             // rank 0's buffers (batch norm statistics) at each forward
  std::shared_ptr<distributed::ProcessGroup> process_group;  // null: the default group
  DistributedDataParallelOptions& find_unused_parameters_(bool on) {
    find_unused_parameters = on;
    return *this;
  }
};

namespace detail {

// The backward-pass side of DDP, independent of the module's type.
class Reducer : public std::enable_shared_from_this<Reducer> {
 public:
  Reducer(std::vector<std::pair<std::string, Tensor>> parameters, std::vector<std::pair<std::string, Tensor>> buffers,
          DistributedDataParallelOptions options);
  void attach_hooks();
  ~Reducer();
  void before_forward();
  void after_forward(const std::vector<Tensor>& outputs);
  void set_sync(bool on) { sync_ = on; }
  bool sync() const { return sync_; }
  size_t bucket_count() const { return buckets_.size(); }
  std::vector<size_t> bucket_parameter_counts() const;
  void register_comm_hook(distributed::CommHook hook);

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_, in the bucket's order
    std::vector<int64_t> offsets;
    int64_t numel = 0;
    ScalarType dtype = kFloat;
    std::vector<Tensor> pieces;  // this round's gradients, by position in the bucket
    size_t pending = 0;
    Tensor flat;
    std::shared_ptr<distributed::Work> work;       // the default reduction's
    std::shared_ptr<distributed::Future> reduced;  // a communication hook's
  };
  Tensor on_gradient(size_t param, const Tensor& grad);
  void start_round();
  void mark_ready(size_t param, Tensor piece);
  void launch_ready_buckets();
  Tensor finish_round(size_t current_param);
  void make_buckets();
  void check_ranks_agree();
  void broadcast_from_rank0(const std::vector<Tensor>& tensors);

  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> named_buffers_;
  std::vector<Tensor> buffers_;
  DistributedDataParallelOptions options_;
  std::shared_ptr<distributed::ProcessGroup> group_;
  Device device_ = Device(kCPU);  // of the parameters, and of the tensors DDP communicates
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_, slot_of_;
  std::vector<unsigned> hooks_;
  std::vector<bool> ready_, unused_;
  // Parameters whose .grad holds the zeros their hook returned, until the round's average.
  std::vector<size_t> waiting_for_average_;
  Tensor used_by_ranks_;  // find_unused_parameters: how many ranks used each parameter this round
  std::shared_ptr<distributed::Work> used_work_;
  distributed::CommHook comm_hook_;
  bool sync_ = true, round_active_ = false, backward_seen_ = false;
  size_t ready_count_ = 0, gradients_seen_ = 0, next_launch_ = 0;
};

}  // namespace detail

template <typename ModuleType>
class DistributedDataParallelImpl : public Module {
 public:
  explicit DistributedDataParallelImpl(std::shared_ptr<ModuleType> module,
                                       const DistributedDataParallelOptions& options = {})
      : Module("DistributedDataParallel"), module_(register_module("module", std::move(module))) {
    std::vector<std::pair<std::string, Tensor>> params;
    for (const auto& item : module_->named_parameters())
      if (item.value().requires_grad()) params.emplace_back(item.key(), item.value());
    std::vector<std::pair<std::string, Tensor>> buffers;
    for (const auto& item : module_->named_buffers()) buffers.emplace_back(item.key(), item.value());
    reducer_ = std::make_shared<detail::Reducer>(std::move(params), std::move(buffers), options);
    reducer_->attach_hooks();
  }
  explicit DistributedDataParallelImpl(const ModuleHolder<ModuleType>& module,
                                       const DistributedDataParallelOptions& options = {})
      : DistributedDataParallelImpl(module.ptr(), options) {}

  template <typename... Args>
  decltype(auto) forward(Args&&... args) {
    reducer_->before_forward();
    auto output = module_->forward(std::forward<Args>(args)...);
    reducer_->after_forward(tensors_of(output));
    return output;
  }

  // PyTorch's register_comm_hook(state, hook): `hook(state, bucket)` reduces each gradient bucket
  // and returns a future of the reduced (averaged) gradients, e.g.
  // `ddp->register_comm_hook(nullptr, &default_hooks::bf16_compress_hook)` (null: the default
  // group). Once, before the first backward pass; every rank registers the same hook.
  template <typename State, typename Hook>
  void register_comm_hook(State state, Hook hook) {
    if constexpr (std::is_constructible_v<bool, const Hook&>)
      KILN_CHECK(bool(hook), "register_comm_hook: Communication hook must be callable.");
    reducer_->register_comm_hook([state = std::move(state), hook = std::move(hook)](
                                     distributed::GradBucket& bucket) mutable { return hook(state, bucket); });
  }

  ModuleType& module() { return *module_; }
  const std::shared_ptr<ModuleType>& module_ptr() const { return module_; }

  // Gradients accumulate locally until the guard is destroyed (PyTorch's `with ddp.no_sync():`).
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(std::shared_ptr<detail::Reducer> r) : reducer_(std::move(r)), was_(reducer_->sync()) {
      reducer_->set_sync(false);
    }
    ~NoSyncGuard() { reducer_->set_sync(was_); }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    std::shared_ptr<detail::Reducer> reducer_;
    bool was_;
  };
  NoSyncGuard no_sync() { return NoSyncGuard(reducer_); }
  const detail::Reducer& reducer() const { return *reducer_; }

 private:
  static std::vector<Tensor> tensors_of(const Tensor& t) { return {t}; }
  static std::vector<Tensor> tensors_of(const std::vector<Tensor>& ts) { return ts; }
  template <typename... Ts>
  static std::vector<Tensor> tensors_of(const std::tuple<Ts...>& tuple) {
    std::vector<Tensor> out;
    std::apply([&](const auto&... item) { (append_if_tensor(out, item), ...); }, tuple);
    return out;
  }
  template <typename T>
  static std::vector<Tensor> tensors_of(const T&) {
    return {};  // not tensors: find_unused_parameters sees no graph, and counts every parameter as used
  }
  template <typename T>
  static void append_if_tensor(std::vector<Tensor>& out, const T& item) {
    if constexpr (std::is_same_v<T, Tensor>) out.push_back(item);
  }

  std::shared_ptr<ModuleType> module_;
  std::shared_ptr<detail::Reducer> reducer_;
};

// The holder: `auto ddp = DistributedDataParallel(model); ddp->forward(x); ddp->no_sync();`.
template <typename ModuleType>
class DistributedDataParallel : public ModuleHolder<DistributedDataParallelImpl<ModuleType>> {
 public:
  using ModuleHolder<DistributedDataParallelImpl<ModuleType>>::ModuleHolder;
  DistributedDataParallel(const ModuleHolder<ModuleType>& module, const DistributedDataParallelOptions& options = {})
      : ModuleHolder<DistributedDataParallelImpl<ModuleType>>(
            std::make_shared<DistributedDataParallelImpl<ModuleType>>(module.ptr(), options)) {}
  DistributedDataParallel(std::shared_ptr<ModuleType> module, const DistributedDataParallelOptions& options = {})
      : ModuleHolder<DistributedDataParallelImpl<ModuleType>>(
            std::make_shared<DistributedDataParallelImpl<ModuleType>>(std::move(module), options)) {}
};
template <typename ModuleType>
DistributedDataParallel(const ModuleHolder<ModuleType>&) -> DistributedDataParallel<ModuleType>;
template <typename ModuleType>
DistributedDataParallel(const ModuleHolder<ModuleType>&, const DistributedDataParallelOptions&)
    -> DistributedDataParallel<ModuleType>;
template <typename ModuleType>
DistributedDataParallel(std::shared_ptr<ModuleType>) -> DistributedDataParallel<ModuleType>;
template <typename ModuleType>
DistributedDataParallel(std::shared_ptr<ModuleType>, const DistributedDataParallelOptions&)
    -> DistributedDataParallel<ModuleType>;

}  // namespace kiln::nn::parallel
