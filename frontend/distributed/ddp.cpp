#include "frontend/distributed/ddp.h"

#include <algorithm>
#include <unordered_set>

#include "frontend/autograd.h"
#include "frontend/derivatives.h"
#include "frontend/distributed/distributed.h"
#include "frontend/ops.h"

namespace kiln::nn::parallel::detail {

namespace {

// A parameter or buffer as the ranks compare them: [kind, dtype, dims, sizes...].
constexpr int kMaxDims = 8;
constexpr int64_t kRowWidth = 3 + kMaxDims;
enum RowKind : int64_t { kParameterRow, kBufferRow, kBucketsRow };

std::string shape_text(const int64_t* row) {
  std::string s = "[";
  for (int64_t d = 0; d < row[2]; ++d) s += (d ? ", " : "") + std::to_string(row[3 + d]);
  return s + "] " + dtype_name(ScalarType(row[1]));
}

}  // namespace

Reducer::Reducer(std::vector<std::pair<std::string, Tensor>> parameters,
                 std::vector<std::pair<std::string, Tensor>> buffers, DistributedDataParallelOptions options)
    : params_(std::move(parameters)), named_buffers_(std::move(buffers)), options_(std::move(options)) {
  group_ = options_.process_group ? options_.process_group : distributed::default_process_group();
  // The group's tensors are on the parameters' device: the CPU, or one GPU with nccl.
  const bool on_gpu = group_->getBackendName() == "nccl";
  if (on_gpu && !params_.empty()) device_ = params_[0].second.device();
  for (const auto& [name, p] : params_)
    KILN_CHECK(p.device() == device_, "DistributedDataParallel: parameter '", name, "' is on ", p.device().str(),
               "; the ", group_->getBackendName(), " backend takes ",
               on_gpu ? "the parameters on one CUDA device (" + device_.str() + ")" : std::string("CPU tensors"));
  for (const auto& item : named_buffers_) buffers_.push_back(item.second);
  make_buckets();
  check_ranks_agree();
  std::vector<Tensor> state;
  for (const auto& item : params_) state.push_back(item.second);
  state.insert(state.end(), buffers_.begin(), buffers_.end());
  broadcast_from_rank0(state);
  ready_.assign(params_.size(), false);
  unused_.assign(params_.size(), false);
}

// Buckets over the parameters in reverse, the order the backward pass makes their gradients.
void Reducer::make_buckets() {
  bucket_of_.resize(params_.size());
  slot_of_.resize(params_.size());
  double cap = options_.first_bucket_cap_mb * 1e6;
  for (size_t i = params_.size(); i-- > 0;) {
    const Tensor& p = params_[i].second;
    const int64_t bytes = p.numel() * int64_t(element_size(p.dtype()));
    if (buckets_.empty() || buckets_.back().dtype != p.dtype() ||
        (buckets_.back().numel > 0 && double(buckets_.back().numel * int64_t(element_size(p.dtype())) + bytes) > cap)) {
      if (!buckets_.empty()) cap = options_.bucket_cap_mb * 1e6;
      buckets_.emplace_back();
      buckets_.back().dtype = p.dtype();
    }
    Bucket& b = buckets_.back();
    bucket_of_[i] = buckets_.size() - 1;
    slot_of_[i] = b.params.size();
    b.params.push_back(i);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
  }
}

void Reducer::attach_hooks() {
  std::weak_ptr<Reducer> self = shared_from_this();
  for (size_t i = 0; i < params_.size(); ++i)
    hooks_.push_back(params_[i].second.register_hook([self, i](Tensor grad) -> Tensor {
      auto reducer = self.lock();
      return reducer ? reducer->on_gradient(i, grad) : Tensor();
    }));
}

Reducer::~Reducer() {
  for (size_t i = 0; i < hooks_.size(); ++i) params_[i].second.remove_hook(hooks_[i]);
}

// PyTorch's checks and messages (Reducer::register_comm_hook, DistributedDataParallel's docs).
void Reducer::register_comm_hook(distributed::CommHook hook) {
  KILN_CHECK(hook, "register_comm_hook: Communication hook must be callable.");
  KILN_CHECK(!comm_hook_, "register_comm_hook or register_builtin_comm_hook can only be called once.");
  KILN_CHECK(!backward_seen_,
             "register_comm_hook: DDP communication hook can only be registered once and should be registered "
             "before calling backward (a backward pass through this DistributedDataParallel has run)");
  comm_hook_ = std::move(hook);
}

std::vector<size_t> Reducer::bucket_parameter_counts() const {
  std::vector<size_t> counts;
  for (const auto& b : buckets_) counts.push_back(b.params.size());
  return counts;
}

// Every rank describes each parameter and buffer, and its bucket layout, as rows of int64s and
// compares them with rank 0's (PyTorch's _verify_param_shape_across_processes). This is what
// lets DDP's collectives skip the per-call check.
void Reducer::check_ranks_agree() {
  const int size = group_->getSize(), rank = group_->getRank();
  if (size == 1) return;
  auto gather = [&](const Tensor& mine) {
    std::vector<Tensor> all;
    for (int r = 0; r < size; ++r) all.push_back(empty(mine.sizes(), TensorOptions(mine.dtype()).device(device_)));
    std::vector<std::vector<Tensor>> outputs{all};
    std::vector<Tensor> inputs{mine.to(device_, mine.dtype())};
    group_->allgather(outputs, inputs)->wait();
    return all;
  };
  const std::vector<Tensor> counts =
      gather(tensor(std::vector<int64_t>{int64_t(params_.size()), int64_t(buffers_.size())}));
  const std::vector<int64_t> first_counts = counts[0].to_vector<int64_t>();
  for (int r = 1; r < size; ++r) {
    const std::vector<int64_t> theirs = counts[r].to_vector<int64_t>();
    for (int k = 0; k < 2; ++k)
      KILN_CHECK(theirs[k] == first_counts[k], "DistributedDataParallel: the ranks' models differ: rank 0 has ",
                 first_counts[k], k == 0 ? " parameters" : " buffers", ", rank ", r, " has ", theirs[k]);
  }
  std::vector<std::string> names;
  std::vector<int64_t> rows;
  auto describe = [&](RowKind kind, const std::string& name, const Tensor& t) {
    KILN_CHECK(t.dim() <= kMaxDims, "DistributedDataParallel: '", name, "' has more than ", kMaxDims, " dimensions");
    names.push_back(std::string(kind == kParameterRow ? "parameter" : "buffer") + " '" + name + "'");
    rows.resize(rows.size() + kRowWidth, 0);
    int64_t* row = &rows[rows.size() - kRowWidth];
    row[0] = kind;
    row[1] = int64_t(t.dtype());
    row[2] = t.dim();
    for (int64_t k = 0; k < t.dim(); ++k) row[3 + k] = t.size(k);
  };
  for (const auto& [name, p] : params_) describe(kParameterRow, name, p);
  for (const auto& [name, b] : named_buffers_) describe(kBufferRow, name, b);
  // The buckets: their count, and a hash of each one's parameters and size.
  uint64_t layout = 1469598103934665603ull;
  for (const Bucket& b : buckets_)
    for (int64_t v : {int64_t(b.params.size()), int64_t(b.params.front()), b.numel})
      layout = (layout ^ uint64_t(v)) * 1099511628211ull;
  names.push_back("gradient buckets");
  rows.resize(rows.size() + kRowWidth, 0);
  rows[rows.size() - kRowWidth] = kBucketsRow;
  rows[rows.size() - kRowWidth + 1] = int64_t(buckets_.size());
  rows[rows.size() - kRowWidth + 2] = int64_t(layout >> 1);

  const int64_t count = int64_t(names.size());
  const std::vector<Tensor> all = gather(tensor(rows).view({count, kRowWidth}));
  const std::vector<int64_t> first = all[0].to_vector<int64_t>();
  for (int r = 1; r < size; ++r) {
    const std::vector<int64_t> theirs = all[r].to_vector<int64_t>();
    for (int64_t i = 0; i < count; ++i) {
      const int64_t* a = &first[size_t(i * kRowWidth)];
      const int64_t* b = &theirs[size_t(i * kRowWidth)];
      if (std::equal(a, a + kRowWidth, b)) continue;
      if (a[0] == kBucketsRow)
        throw Error("DistributedDataParallel: the ranks' gradient buckets differ (" + std::to_string(a[1]) +
                    " on rank 0, " + std::to_string(b[1]) + " on rank " + std::to_string(r) +
                    "): bucket_cap_mb and first_bucket_cap_mb must be the same on every rank");
      throw Error("DistributedDataParallel: the ranks' models differ: " + names[size_t(i)] + " (on rank " +
                  std::to_string(rank) + ") is " + shape_text(a) + " on rank 0 but " + shape_text(b) + " on rank " +
                  std::to_string(r));
    }
  }
}

void Reducer::broadcast_from_rank0(const std::vector<Tensor>& tensors) {
  if (group_->getSize() == 1) return;
  std::vector<std::shared_ptr<distributed::Work>> works;
  for (const Tensor& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
    std::vector<Tensor> one{t};
    distributed::BroadcastOptions options;
    options.check_across_ranks = false;  // check_ranks_agree compared every parameter and buffer
    works.push_back(group_->broadcast(one, options));
  }
  for (auto& w : works) w->wait();
}

void Reducer::before_forward() {
  KILN_CHECK(!round_active_ || gradients_seen_ == 0, "DistributedDataParallel: the previous backward pass left ",
             params_.size() - ready_count_, " parameter(s) without a gradient (the first: '",
             params_[std::find(ready_.begin(), ready_.end(), false) - ready_.begin()].first,
             "'), so their gradients were never averaged. Parameters the forward pass does not use need "
             "find_unused_parameters.");
  round_active_ = false;
  if (sync_ && options_.broadcast_buffers) broadcast_from_rank0(buffers_);
}

void Reducer::after_forward(const std::vector<Tensor>& outputs) {
  if (!sync_ || !options_.find_unused_parameters || !autograd::GradMode::is_enabled()) return;
  std::fill(unused_.begin(), unused_.end(), false);
  if (outputs.empty()) return;
  // Walk the graph from the outputs; a parameter whose gradient accumulator it never reaches is unused.
  std::unordered_set<const autograd::Node*> seen;
  std::vector<std::shared_ptr<autograd::Node>> stack;
  for (const Tensor& t : outputs)
    if (t.defined() && t.requires_grad()) stack.push_back(kiln::detail::gradient_edge(t).fn);
  while (!stack.empty()) {
    auto node = std::move(stack.back());
    stack.pop_back();
    if (!node || !seen.insert(node.get()).second) continue;
    for (const auto& e : node->next_edges)
      if (e.valid()) stack.push_back(e.fn);
  }
  for (size_t i = 0; i < params_.size(); ++i)
    unused_[i] = !seen.count(kiln::detail::gradient_edge(params_[i].second).fn.get());
  start_round();
}

void Reducer::start_round() {
  round_active_ = true;
  waiting_for_average_.clear();
  ready_count_ = 0;
  gradients_seen_ = 0;
  next_launch_ = 0;
  std::fill(ready_.begin(), ready_.end(), false);
  for (auto& b : buckets_) {
    b.pieces.assign(b.params.size(), Tensor());
    b.pending = b.params.size();
    b.flat = Tensor();
    b.work.reset();
    b.reduced.reset();
  }
  used_work_.reset();
  if (!options_.find_unused_parameters) return;
  // Which parameters some rank used: launched before any bucket, in the same order on every rank.
  std::vector<int32_t> used(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) used[i] = unused_[i] ? 0 : 1;
  used_by_ranks_ = tensor(used).to(device_, kInt);
  if (group_->getSize() > 1 && !params_.empty()) {
    std::vector<Tensor> tensors{used_by_ranks_};
    distributed::AllreduceOptions options;
    options.check_across_ranks = false;  // one entry per parameter: check_ranks_agree compared those
    used_work_ = group_->allreduce(tensors, options);
  }
  // An unused parameter's share of the bucket is its .grad so far (as PyTorch's), which stays
  // in place should no rank have used it.
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!unused_[i]) continue;
    const Tensor& p = params_[i].second;
    const Tensor& grad = p.grad();
    mark_ready(i, grad.defined() ? grad.detach() : zeros(p.sizes(), TensorOptions(p.dtype()).device(p.device())));
  }
}

Tensor Reducer::on_gradient(size_t param, const Tensor& grad) {
  backward_seen_ = true;
  if (!sync_) return Tensor();        // no_sync: accumulate into .grad as usual
  if (!round_active_) start_round();  // a backward pass without a forward through DDP
  KILN_CHECK(!ready_[param], "DistributedDataParallel: parameter '", params_[param].first,
             "' got a gradient twice in one round: a second backward needs another forward through DDP, or "
             "no_sync()");
  try {
    ++gradients_seen_;
    Tensor& accumulated = params_[param].second.mutable_grad();
    // What .grad would hold after this backward: the bucket averages it, and .grad takes the average.
    Tensor piece = accumulated.defined() ? accumulated.detach() + grad.detach() : grad.detach();
    accumulated = Tensor();
    mark_ready(param, piece);
    if (ready_count_ < params_.size()) {
      waiting_for_average_.push_back(param);
      return zeros(grad.sizes(), TensorOptions(grad.dtype()).device(grad.device()));
    }
    return finish_round(param);
  } catch (...) {
    round_active_ = false;  // the next forward starts afresh
    throw;
  }
}

void Reducer::mark_ready(size_t param, Tensor piece) {
  ready_[param] = true;
  ++ready_count_;
  Bucket& b = buckets_[bucket_of_[param]];
  b.pieces[slot_of_[param]] = std::move(piece);
  --b.pending;
  launch_ready_buckets();
}

// Buckets start in order on every rank (Gloo pairs the ranks' collectives by order).
void Reducer::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& b = buckets_[next_launch_++];
    // The zeros .grad took from the hooks until finish_round: dropped before the all-reduce's
    // flush, which would otherwise compute them.
    for (size_t i : waiting_for_average_) params_[i].second.mutable_grad() = Tensor();
    waiting_for_average_.clear();
    std::vector<Tensor> flat;
    for (const Tensor& piece : b.pieces) flat.push_back(piece.reshape({-1}));
    b.flat = (flat.size() == 1 ? flat[0] : cat(flat)).contiguous();
    b.pieces.clear();
    if (comm_hook_) {
      std::vector<Tensor> parameters;
      for (size_t i : b.params) parameters.push_back(params_[i].second);
      distributed::GradBucket bucket(next_launch_ - 1, buckets_.size(), b.flat, std::move(parameters));
      b.reduced = comm_hook_(bucket);
      KILN_CHECK(b.reduced, "DistributedDataParallel: the communication hook returned no future for bucket ",
                 next_launch_ - 1);
      continue;
    }
    std::vector<Tensor> tensors{b.flat};
    distributed::AllreduceOptions options;
    options.reduceOp = distributed::ReduceOp::SUM;
    options.check_across_ranks = false;            // the bucket layout was compared at construction
    b.work = group_->allreduce(tensors, options);  // flushes the segment: the bucket's gradients are computed
  }
}

// Every bucket is launched: waits for them and gives each parameter its averaged gradient. The
// parameter whose hook is running gets it as the hook's result, which .grad then takes.
Tensor Reducer::finish_round(size_t current_param) {
  autograd::NoGradGuard no_grad;
  Tensor current;
  const double scale = 1.0 / double(group_->getSize());
  std::vector<int32_t> used_by_ranks;
  if (options_.find_unused_parameters && used_by_ranks_.defined()) {
    if (used_work_) used_work_->wait();
    used_by_ranks = used_by_ranks_.to_vector<int32_t>();
  }
  for (size_t index = 0; index < buckets_.size(); ++index) {
    Bucket& b = buckets_[index];
    Tensor average;
    if (b.reduced) {  // the hook averaged
      average = b.reduced->wait();
      KILN_CHECK(average.defined() && average.numel() == b.numel, "DistributedDataParallel: the communication hook's ",
                 "future holds ", average.defined() ? std::to_string(average.numel()) + " elements" : "no tensor",
                 " for bucket ", index, " of ", b.numel, " gradient elements");
      average = average.reshape({-1}).to(b.dtype);
    } else {
      b.work->wait();  // a failed all-reduce (a rank died) throws kiln::Error here, out of backward()
      average = b.flat * scale;
    }
    for (size_t k = 0; k < b.params.size(); ++k) {
      const size_t i = b.params[k];
      if (!used_by_ranks.empty() && used_by_ranks[i] == 0) continue;  // no rank used it: .grad untouched
      const Tensor& p = params_[i].second;
      Tensor g = average.narrow(0, b.offsets[k], p.numel()).view(p.sizes());
      if (i == current_param)
        current = g;
      else
        p.mutable_grad() = g;
    }
    b.flat = Tensor();
    b.work.reset();
    b.reduced.reset();
  }
  round_active_ = false;
  ready_count_ = 0;
  return current;
}

}  // namespace kiln::nn::parallel::detail
