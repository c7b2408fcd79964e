#include "frontend/distributed/gloo_algorithms.h"

#if KILN_HAVE_GLOO
#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/broadcast_one_to_all.h>

#include <climits>
#include <cstring>
#include <type_traits>

namespace kiln::distributed::detail {

struct GlooAlgorithms::Entry {
  virtual ~Entry() noexcept(false) = default;  // as gloo::Algorithm
  virtual void run(const void* input, void* output) = 0;
};

namespace {

enum Collective { kAllreduce, kBroadcast, kBarrier };

// The most instances kept, and the most memory they hold (a ring's is twice its buffer: its inbox
// and outbox).
constexpr size_t kMaxEntries = 32;
constexpr size_t kMaxHeldBytes = size_t(512) << 20;

template <typename T>
const gloo::ReductionFunction<T>* reduction(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return gloo::ReductionFunction<T>::sum;
    case ReduceOp::PRODUCT: return gloo::ReductionFunction<T>::product;
    case ReduceOp::MIN: return gloo::ReductionFunction<T>::min;
    case ReduceOp::MAX: return gloo::ReductionFunction<T>::max;
  }
  return nullptr;
}

// The ring sends from and receives into buffers of its own; the caller's pointer is only reduced
// into, so one instance serves every call of its size. Its run() returns before its last
// notifications to the left neighbour are written, which a rank that exits at once (after a last
// all-reduce, or an error) would lose, failing the neighbour's call: run_on waits for them.
template <typename T>
struct RingAllreduce final : GlooAlgorithms::Entry {
  struct Ring : gloo::AllreduceRing<T> {
    using gloo::AllreduceRing<T>::AllreduceRing;
    void run_on(T* data) {
      this->ptrs_[0] = data;
      this->run();
      for (int round = 0; round < this->contextSize_ - 1; ++round) this->sendNotificationBuf_->waitSend();
    }
  } ring;
  RingAllreduce(const std::shared_ptr<gloo::Context>& context, size_t count, ReduceOp op)
      : ring(context, {nullptr}, int(count), reduction<T>(op)) {}
  void run(const void*, void* output) override { ring.run_on(static_cast<T*>(output)); }
};

// Memory of an instance's own, made before the algorithm that binds it.
struct Owned {
  explicit Owned(size_t bytes) : memory(new char[bytes]), bytes(bytes) {}
  std::unique_ptr<char[]> memory;
  size_t bytes;
};

// The receivers' clear-to-send messages are read by the root before it sends, and it waits for
// its sends: nothing of a call is in flight when run() returns.
struct Broadcast final : GlooAlgorithms::Entry {
  Owned buffer;
  bool root;
  gloo::BroadcastOneToAll<char> algorithm;
  Broadcast(const std::shared_ptr<gloo::Context>& context, size_t bytes, int root_rank)
      : buffer(bytes), root(context->rank == root_rank), algorithm(context, {buffer.memory.get()}, bytes, root_rank) {}
  void run(const void*, void* output) override {
    if (root) std::memcpy(buffer.memory.get(), output, buffer.bytes);
    algorithm.run();
    if (!root) std::memcpy(output, buffer.memory.get(), buffer.bytes);
  }
};

// The root's run() returns before its replies are written: waits for them, as the ring does.
struct Barrier final : GlooAlgorithms::Entry {
  struct AllToOne : gloo::BarrierAllToOne {
    using gloo::BarrierAllToOne::BarrierAllToOne;
    void run_and_flush() {
      run();
      if (contextRank_ == rootRank_)
        for (auto& buffer : sendBuffers_) buffer->waitSend();
    }
  } algorithm;
  explicit Barrier(const std::shared_ptr<gloo::Context>& context) : algorithm(context) {}
  void run(const void*, void*) override { algorithm.run_and_flush(); }
};

}  // namespace

GlooAlgorithms::GlooAlgorithms(std::shared_ptr<gloo::Context> context, size_t ring_max_bytes)
    : context_(std::move(context)), ring_max_bytes_(ring_max_bytes) {}

GlooAlgorithms::~GlooAlgorithms() = default;

size_t GlooAlgorithms::default_ring_max_bytes(int ranks) {
  // With two ranks the ring sends each rank's buffer once, as any algorithm must; with more it
  // sends n-1 times the buffer, where Gloo's options API sends 2 (n-1)/n of it.
  return ranks <= 2 ? size_t(INT_MAX) : size_t(256) << 10;
}

template <typename Make>
GlooAlgorithms::Entry& GlooAlgorithms::find(const Key& key, size_t held_bytes, Make&& make) {
  if (auto it = index_.find(key); it != index_.end()) {
    used_.splice(used_.begin(), used_, it->second);
    return *used_.front().entry;
  }
  while (!used_.empty() && (used_.size() >= kMaxEntries || held_bytes_ + held_bytes > kMaxHeldBytes)) {
    held_bytes_ -= used_.back().held_bytes;
    index_.erase(used_.back().key);
    used_.pop_back();
  }
  used_.push_front(Kept{key, make(), held_bytes});
  index_[key] = used_.begin();
  held_bytes_ += held_bytes;
  return *used_.front().entry;
}

bool GlooAlgorithms::allreduce(ScalarType dtype, void* data, size_t count, ReduceOp op) {
  bool done = false;
  with_gloo_element_type(dtype, "all_reduce", [&](auto element) {
    using T = decltype(element);
    const size_t bytes = count * sizeof(T);
    if (bytes > size_t(INT_MAX)) return;
    // The ring has each rank add the others' buffers in an order of its own: past two ranks,
    // floating-point results would differ between ranks in their last bits (and DDP's replicas
    // drift apart). Gloo's halving-doubling would not, but returns before its sends are written.
    if (bytes > ring_max_bytes_ || (context_->size > 2 && !std::is_integral_v<T>)) return;
    if (context_->size > 1)
      find(Key{kAllreduce, int(dtype), count, int(op)}, 2 * bytes, [&] {
        return std::make_unique<RingAllreduce<T>>(context_, count, op);
      }).run(data, data);
    done = true;
  });
  return done;
}

bool GlooAlgorithms::broadcast(void* data, size_t bytes, int root) {
  if (bytes > size_t(INT_MAX)) return false;
  if (context_->size == 1) return true;
  find(Key{kBroadcast, 0, bytes, root}, bytes, [&] {
    return std::make_unique<Broadcast>(context_, bytes, root);
  }).run(data, data);
  return true;
}

bool GlooAlgorithms::allgather(const void* input, void* output, size_t bytes) {
  const size_t all = bytes * size_t(context_->size);
  if (all > size_t(INT_MAX)) return false;
  if (context_->size == 1) {
    std::memcpy(output, input, bytes);
    return true;
  }
  // A byte sum over every rank's part in place and zeros elsewhere: exact, and through the
  // all-reduce instances, which may be kept. (Gloo's AllgatherRing receives straight into its
  // output, where a peer's next call would write before this rank had read this one's, and does
  // not wait for its sends before it returns.)
  std::memset(output, 0, all);
  std::memcpy(static_cast<char*>(output) + size_t(context_->rank) * bytes, input, bytes);
  return allreduce(kByte, output, all, ReduceOp::SUM);
}

void GlooAlgorithms::barrier() {
  if (context_->size == 1) return;
  find(Key{kBarrier, 0, 0, 0}, 0, [&] { return std::make_unique<Barrier>(context_); }).run(nullptr, nullptr);
}

}  // namespace kiln::distributed::detail
#endif
