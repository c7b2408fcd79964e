// The calling thread's segment: storages with pending content, flushed on demand, at the node cap,
// or after every op in eager mode.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "codegen/backend.h"
#include "fusion/plan.h"
#include "runtime/config.h"
#include "runtime/stats.h"
#include "tracer/storage.h"

namespace kiln::tracer {
namespace {

struct Segment {
  std::vector<std::weak_ptr<Storage>> pending;  // storages whose content may need computing
  ir::RecordedNodes recorded;                   // every node recorded since the last flush
  int64_t nodes_since_flush = 0;
};
thread_local Segment t_segment;

// Flushes run one at a time: a tensor made on one thread may be read on another.
std::mutex g_flush_mutex;

void run(std::vector<ir::NodePtr> roots, const ir::RecordedNodes* recorded = nullptr) {
  if (roots.empty()) return;
  std::lock_guard<std::mutex> lock(g_flush_mutex);
  fusion::Plan plan = fusion::make_plan(std::move(roots), recorded);
  if (plan.steps.empty()) return;
  stats_add(&Stats::flushes, 1);
  codegen::execute(plan);
}

void flush_if_eager_or_full(const StoragePtr& s) {
  if (!config().lazy) {
    materialize(*s);
  } else if (t_segment.nodes_since_flush >= config().segment_node_cap) {
    flush();
  }
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
  s->node = std::move(node);
  if (!s->node->computed()) {
    t_segment.pending.push_back(s);
    flush_if_eager_or_full(s);
  }
  return s;
}

void set_content(const StoragePtr& s, ir::NodePtr node) {
  s->node = std::move(node);
  ++s->version;
  if (s->node->computed()) return;
  t_segment.pending.push_back(s);
  flush_if_eager_or_full(s);
}

void flush() {
  auto& seg = t_segment;
  std::vector<ir::NodePtr> roots;
  for (auto& w : seg.pending)
    if (auto s = w.lock())
      if (!s->node->computed()) roots.push_back(s->node);
  seg.pending.clear();
  seg.nodes_since_flush = 0;
  ir::RecordedNodes recorded;
  recorded.swap(seg.recorded);  // what runs the plan may record more: into a new list
  run(std::move(roots), &recorded);
  recorded.clear();
  if (seg.recorded.empty()) seg.recorded.swap(recorded);  // keeps the capacity
}

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
