#include "frontend/distributed/gloo_algorithms.h"

#if KILN_HAVE_GLOO
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/common/error.h>
#include <gloo/transport/tcp/buffer.h>

#include <climits>
#include <cstring>
#include <type_traits>

namespace kiln::distributed::detail {

struct GlooAlgorithms::Entry {
  virtual ~Entry() noexcept(false) = default;  // as gloo::Algorithm
  virtual void run(const void* input, void* output) = 0;
};

namespace {

enum Collective { kRingAllreduce, kHalvingDoubling, kBroadcast, kBarrier };

// The most instances kept, and the most memory they hold (a ring's is twice its buffer, its inbox
// and outbox; halving-doubling's too, its buffer and what it receives into).
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

// A peer that leaves right after its collective (its last sends written, then exit or _exit)
// closes its connections: Gloo's tcp::Buffer::waitRecv and waitSend look for the pair's error
// before their completion count, so a message that came in just before the close failed the wait
// ("Connection closed by peer") where it had arrived. Each buffer of the classes below is wrapped
// so that such a wait takes the completion that did come in, and fails only where none did (a
// peer gone before sending what this rank waits for). Every message of these algorithms is one
// its receiver waits for, so no peer leaves before the messages it is owed are written to it.
class Settled final : public gloo::transport::Buffer {
  // The counts and their lock are protected in tcp::Buffer: named through a class derived from it,
  // as a pointer to a protected member may be.
  struct State : gloo::transport::tcp::Buffer {
    static bool take_completion(gloo::transport::tcp::Buffer& buffer, bool received) {
      std::lock_guard<std::mutex> lock(buffer.*&State::m_);
      int& count = buffer.*(received ? &State::recvCompletions_ : &State::sendCompletions_);
      if (count == 0) return false;
      --count;
      return true;
    }
    static size_t size(gloo::transport::tcp::Buffer& buffer) { return buffer.*&State::size_; }
  };

 public:
  explicit Settled(std::unique_ptr<gloo::transport::Buffer> inner, gloo::transport::tcp::Buffer& tcp)
      : gloo::transport::Buffer(-1, nullptr, State::size(tcp)), inner_(std::move(inner)), tcp_(tcp) {}
  using gloo::transport::Buffer::send;
  void send(size_t offset, size_t length, size_t roffset) override { inner_->send(offset, length, roffset); }
  void waitRecv() override {
    settle([this] { inner_->waitRecv(); }, true);
  }
  void waitSend() override {
    settle([this] { inner_->waitSend(); }, false);
  }

  // Wraps `buffer` where it is a tcp one (kiln's groups only make tcp devices).
  static void wrap(std::unique_ptr<gloo::transport::Buffer>& buffer) {
    if (auto* tcp = dynamic_cast<gloo::transport::tcp::Buffer*>(buffer.get()))
      buffer = std::make_unique<Settled>(std::move(buffer), *tcp);
  }
  static void wrap(std::vector<std::unique_ptr<gloo::transport::Buffer>>& buffers) {
    for (auto& buffer : buffers) wrap(buffer);
  }

 private:
  template <typename Wait>
  void settle(Wait&& wait, bool received) {
    try {
      wait();
    } catch (const gloo::IoException&) {
      if (!State::take_completion(tcp_, received)) throw;
    }
  }
  std::unique_ptr<gloo::transport::Buffer> inner_;
  gloo::transport::tcp::Buffer& tcp_;
};

// The ring sends from and receives into buffers of its own; the caller's pointer is only reduced
// into, so one instance serves every call of its size. Its run() returns before its last
// notifications to the left neighbour are written, which a rank that exits at once would lose:
// run_on waits for them.
template <typename T>
struct RingAllreduce final : GlooAlgorithms::Entry {
  struct Ring : gloo::AllreduceRing<T> {
    Ring(const std::shared_ptr<gloo::Context>& context, size_t count, ReduceOp op)
        : gloo::AllreduceRing<T>(context, {nullptr}, int(count), reduction<T>(op)) {
      for (auto* buffer :
           {&this->sendDataBuf_, &this->recvDataBuf_, &this->sendNotificationBuf_, &this->recvNotificationBuf_})
        Settled::wrap(*buffer);
    }
    void run_on(T* data) {
      this->ptrs_[0] = data;
      this->run();
      for (int round = 0; round < this->contextSize_ - 1; ++round) this->sendNotificationBuf_->waitSend();
    }
  } ring;
  RingAllreduce(const std::shared_ptr<gloo::Context>& context, size_t count, ReduceOp op) : ring(context, count, op) {}
  void run(const void*, void* output) override { ring.run_on(static_cast<T*>(output)); }
};

// Memory of an instance's own, made before the algorithm that binds it.
struct Owned {
  explicit Owned(size_t bytes) : memory(new char[bytes]), bytes(bytes) {}
  std::unique_ptr<char[]> memory;
  size_t bytes;
};

// Halving-doubling reduces each chunk on one rank, in one order (ranks paired by the bits of their
// numbers; past a power of two, the extra ranks' buffers added last), and copies the result to the
// others: every rank gets the very same bits, which DDP's replicas need, and each rank sends about
// twice its buffer whatever the number of ranks. It binds its buffer when made, so the instance
// owns one that a call copies into and out of. Its run() returns before its notifications and
// some data sends are written: run_and_flush waits for each send the run made.
template <typename T>
struct HalvingDoublingAllreduce final : GlooAlgorithms::Entry {
  struct Algorithm : gloo::AllreduceHalvingDoubling<T> {
    Algorithm(const std::shared_ptr<gloo::Context>& context, T* data, size_t count, ReduceOp op)
        : gloo::AllreduceHalvingDoubling<T>(context, {data}, int(count), reduction<T>(op)) {
      for (auto* buffers :
           {&this->sendDataBufs_, &this->recvDataBufs_, &this->largerBlockSendDataBufs_,
            &this->largerBlockRecvDataBufs_, &this->sendNotificationBufs_, &this->recvNotificationBufs_})
        Settled::wrap(*buffers);
      Settled::wrap(this->smallerBlockSendDataBuf_);
      Settled::wrap(this->smallerBlockRecvDataBuf_);
    }
    // The sends of run(), as it makes them (it waits for the one to a smaller block itself).
    void run_and_flush() {
      this->run();
      const size_t count = size_t(this->count_);
      for (size_t i = 0; i < this->stepsWithinBlock_; ++i) {
        if (this->sendOffsets_[i] < count) this->sendDataBufs_[i]->waitSend();  // reduce-scatter
        if (this->recvOffsets_[i] < count) this->sendDataBufs_[i]->waitSend();  // all-gather
        this->sendNotificationBufs_[i]->waitSend();
        this->sendNotificationBufs_[i]->waitSend();
      }
      const size_t to_larger = this->stepsWithinBlock_ > 0 ? this->recvCounts_[this->stepsWithinBlock_ - 1] : count;
      if (this->nextLargerBlockSize_ != 0 && to_larger != 0)
        for (size_t i = 0; i < this->nextLargerBlockSize_ / this->myBinaryBlockSize_; ++i)
          if (this->sendCountToLargerBlock_ * i < to_larger) this->largerBlockSendDataBufs_[i]->waitSend();
    }
  };
  Owned buffer;
  Algorithm algorithm;
  HalvingDoublingAllreduce(const std::shared_ptr<gloo::Context>& context, size_t count, ReduceOp op)
      : buffer(count * sizeof(T)), algorithm(context, reinterpret_cast<T*>(buffer.memory.get()), count, op) {}
  void run(const void*, void* output) override {
    std::memcpy(buffer.memory.get(), output, buffer.bytes);
    algorithm.run_and_flush();
    std::memcpy(output, buffer.memory.get(), buffer.bytes);
  }
};

// The receivers' clear-to-send messages are read by the root before it sends, and it waits for
// its sends: nothing of a call is in flight when run() returns.
struct Broadcast final : GlooAlgorithms::Entry {
  Owned buffer;
  bool root;
  struct OneToAll : gloo::BroadcastOneToAll<char> {
    OneToAll(const std::shared_ptr<gloo::Context>& context, char* data, size_t bytes, int root_rank)
        : gloo::BroadcastOneToAll<char>(context, {data}, bytes, root_rank) {
      for (auto& sender : this->sender_)
        if (sender) {
          Settled::wrap(sender->clearToSendBuffer);
          Settled::wrap(sender->sendBuffer);
        }
      if (this->receiver_) {
        Settled::wrap(this->receiver_->clearToSendBuffer);
        Settled::wrap(this->receiver_->recvBuffer);
      }
    }
  } algorithm;
  Broadcast(const std::shared_ptr<gloo::Context>& context, size_t bytes, int root_rank)
      : buffer(bytes), root(context->rank == root_rank), algorithm(context, buffer.memory.get(), bytes, root_rank) {}
  void run(const void*, void* output) override {
    if (root) std::memcpy(buffer.memory.get(), output, buffer.bytes);
    algorithm.run();
    if (!root) std::memcpy(output, buffer.memory.get(), buffer.bytes);
  }
};

// The root's run() returns before its replies are written: waits for them, as the ring does.
struct Barrier final : GlooAlgorithms::Entry {
  struct AllToOne : gloo::BarrierAllToOne {
    explicit AllToOne(const std::shared_ptr<gloo::Context>& context) : gloo::BarrierAllToOne(context) {
      Settled::wrap(sendBuffers_);
      Settled::wrap(recvBuffers_);
    }
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
  // sends n-1 times the buffer, where halving-doubling sends about twice it.
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
    // drift apart). Those, and buffers past the ring's limit, take halving-doubling.
    const bool ring = bytes <= ring_max_bytes_ && (context_->size == 2 || std::is_integral_v<T>);
    if (context_->size > 1 && ring)
      find(Key{kRingAllreduce, int(dtype), count, int(op)}, 2 * bytes, [&] {
        return std::make_unique<RingAllreduce<T>>(context_, count, op);
      }).run(data, data);
    else if (context_->size > 1)
      find(Key{kHalvingDoubling, int(dtype), count, int(op)}, 2 * bytes, [&] {
        return std::make_unique<HalvingDoublingAllreduce<T>>(context_, count, op);
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
