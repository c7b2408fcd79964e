// The calling thread's segment: storages with pending content, flushed on demand, at the node cap,
// or after every op in eager mode.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <vector>

#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/stats.h"
#include "tracer/flush_hook.h"
#include "tracer/storage.h"

namespace kiln::tracer {
namespace {

struct Segment {
  std::vector<std::weak_ptr<Storage>> pending;  // storages whose content may need computing
  // Storages over the caller's memory written in place since the last flush, held until the
  // flush copies their content into the memory (a temporary's write too).
  std::vector<StoragePtr> memory_writes;
  ir::RecordedNodes recorded;  // every node recorded since the last flush
  int64_t nodes_since_flush = 0;
};
thread_local Segment t_segment;

// Flushes run one at a time: a tensor made on one thread may be read on another. Giving the
// caller's memory back takes the lock too (a kernel may be reading it), on the flushing thread
// without taking it again (a storage may die there).
std::mutex g_flush_mutex;
thread_local bool t_flushing = false;
struct FlushLock {
  std::unique_lock<std::mutex> lock{g_flush_mutex, std::defer_lock};
  bool outer = !t_flushing;
  FlushLock() {
    if (outer) lock.lock();
    t_flushing = true;
  }
  ~FlushLock() { t_flushing = !outer; }
};

// Set before main (see flush_hook.h); a plain pointer, so that it is set before any constructor runs.
FlushHook g_flush_hook = nullptr;

bool reads_callers_memory(const ir::Node& n) { return n.op == ir::Op::Input && n.result && n.result->borrowed(); }

// Copies the storage's computed content into the caller's memory, which is its content again.
void write_memory(Storage& s) {
  if (s.node == s.memory || !s.node->computed()) return;
  const void* from = s.node->result->data();
  void* to = s.memory->result->data();
  if (from != to) std::memcpy(to, from, size_t(s.numel) * element_size(s.dtype));
  s.node = s.memory;
}

void run(std::vector<ir::NodePtr> roots, const ir::RecordedNodes* recorded = nullptr,
         const std::vector<StoragePtr>& memory_writes = {}) {
  if (roots.empty() && memory_writes.empty()) return;
  FlushLock lock;
  if (!roots.empty()) {
    KILN_CHECK(g_flush_hook, "tracer: no flush driver is installed (it comes with the frontend: link kiln::kiln)");
    g_flush_hook(std::move(roots), recorded);
  }
  for (const auto& s : memory_writes) write_memory(*s);
}

// Eager groups open on this thread (EagerGroup), and the outermost one's number.
thread_local int t_group_depth = 0;
thread_local uint64_t t_group = 0;

void flush_if_eager_or_full(const StoragePtr& s) {
  if (!config().lazy) {
    if (t_group_depth > 0) return;  // the group's end flushes
    s->memory ? flush() : void(materialize(*s));
  } else if (t_segment.nodes_since_flush >= config().segment_node_cap) {
    flush();
  }
}

// A node to make another storage's content from `node`: a copy of it where it reads the caller's
// memory, whose later writes are that memory's alone.
ir::NodePtr content_of_its_own(ir::NodePtr node) {
  if (!reads_callers_memory(*node)) return node;
  ir::Node copy;
  copy.op = ir::Op::Copy;
  copy.dtype = node->dtype;
  copy.shape = node->shape;
  copy.inputs.push_back(ir::Operand{node, ir::View{node->shape, contiguous_strides(node->shape), 0}});
  return record(std::move(copy));
}

}  // namespace

ir::NodePtr record(ir::Node&& node) {
  stats_add(&Stats::ops_traced, 1);
  ++t_segment.nodes_since_flush;
  // One order for all threads, so that a step's plan does not depend on how far apart two
  // threads' counters have drifted (the partition, hashed with the order, would be made again).
  // A plain load and store, not a locked add (3% of tracing): two threads recording at once may
  // take one number, or set the counter back a little; each order make_plan gives stays
  // topological, as a node's inputs are always earlier: it is numbered past them.
  static std::atomic<uint64_t> last{0};
  uint64_t seq = last.load(std::memory_order_relaxed);
  for (const auto& in : node.inputs) seq = std::max(seq, in.node->seq);
  node.seq = seq + 1;
  last.store(node.seq, std::memory_order_relaxed);
  auto& recorded = t_segment.recorded;
  // Past 2^32 nodes the index wraps: make_plan then finds another node at that place and searches.
  node.trace_index = uint32_t(recorded.size());
  ir::NodePtr made = pool::make_shared<ir::Node>(std::move(node));
  // Field by field: a pair built on the stack and copied as one 16-byte load missed store
  // forwarding, which was most of this function's time.
  ir::RecordedNode& entry = recorded.emplace_back();
  entry.node = made.get();
  entry.seq = made->seq;
  return made;
}

StoragePtr new_storage(ir::NodePtr node) {
  auto s = pool::make_shared<Storage>();
  s->numel = node->numel();
  s->dtype = node->dtype;
  s->node = content_of_its_own(std::move(node));
  if (!s->node->computed()) {
    t_segment.pending.push_back(s);
    flush_if_eager_or_full(s);
  }
  return s;
}

StoragePtr new_storage_over_memory(ir::NodePtr input) {
  auto s = pool::make_shared<Storage>();
  s->numel = input->numel();
  s->dtype = input->dtype;
  s->node = input;
  s->memory = std::move(input);
  return s;
}

void set_content(const StoragePtr& s, ir::NodePtr node) {
  s->node = node == s->memory ? std::move(node) : content_of_its_own(std::move(node));
  ++s->version;
  s->scalar_derived = false;  // written: no longer known to come from scalars alone
  if (s->memory && (t_segment.memory_writes.empty() || t_segment.memory_writes.back() != s))
    t_segment.memory_writes.push_back(s);
  if (!s->node->computed()) t_segment.pending.push_back(s);
  if (!s->node->computed() || s->memory) flush_if_eager_or_full(s);
}

void flush() {
  auto& seg = t_segment;
  std::vector<ir::NodePtr> roots;
  for (auto& w : seg.pending)
    if (auto s = w.lock())
      if (!s->node->computed()) roots.push_back(s->node);
  seg.pending.clear();
  seg.nodes_since_flush = 0;
  std::vector<StoragePtr> memory_writes;
  memory_writes.swap(seg.memory_writes);
  ir::RecordedNodes recorded;
  recorded.swap(seg.recorded);  // what runs the plan may record more: into a new list
  run(std::move(roots), &recorded, memory_writes);
  recorded.clear();
  if (seg.recorded.empty()) seg.recorded.swap(recorded);  // keeps the capacity
}

int EagerGroup::begin_eager_group() {
  static std::atomic<uint64_t> groups{0};
  if (t_group_depth++ == 0) t_group = groups.fetch_add(1, std::memory_order_relaxed) + 1;
  return std::uncaught_exceptions();
}

void EagerGroup::end_eager_group(int uncaught_at_begin) {
  if (--t_group_depth > 0) return;
  t_group = 0;
  if (!config().lazy && std::uncaught_exceptions() == uncaught_at_begin) flush();
}

uint64_t eager_group() { return t_group; }

void set_flush_hook(FlushHook hook) { g_flush_hook = hook; }

const ir::RecordedNodes& recorded_nodes() { return t_segment.recorded; }

const BufferPtr& materialize(Storage& s) {
  if (!s.node->computed()) {
    flush();
    // A storage recorded on another thread is not in this thread's segment: compute it alone.
    if (!s.node->computed()) run({s.node});
  }
  return s.node->result;
}

}  // namespace kiln::tracer

namespace kiln {

Storage::~Storage() {
  if (!memory) return;
  tracer::FlushLock lock;  // no kernel is reading the memory meanwhile
  node.reset();
  // Recorded ops that have not run yet read the memory: they get a copy of it. (Else the memory is
  // given back as the Input node dies, with this storage.)
  if (memory.use_count() > 1) memory->result->give_back();
}

}  // namespace kiln
