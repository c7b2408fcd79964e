// A Storage is what views share: the node whose output is the storage's current content, and a
// version counter that in-place writes bump. An in-place op does not mutate a buffer; it records a
// new node (a WriteView over the old content) and points the storage at it, so earlier recorded
// readers keep seeing the old value and later ones the new.
//
// A storage over the caller's memory (from_blob) is that memory, as in libtorch: its content is an
// Input node over a buffer borrowing it (`memory`), so kernels read the memory when they run,
// after the caller's writes before them. An in-place write records a node as above, and the flush
// that computes it copies its value into the memory and points the storage back at `memory`. No
// other storage takes a node reading the memory as its content: it gets a copy (a Copy node). When
// the storage dies, the memory is given back (from_blob's deleter is called), copied first if
// recorded ops still read it.
#pragma once
#include <cstdint>
#include <memory>

#include "tracer/ir.h"

namespace kiln {

struct Storage {
  ir::NodePtr node;
  int64_t numel = 0;
  ScalarType dtype = kFloat;
  uint32_t version = 0;
  ir::NodePtr memory;           // over the caller's memory: its Input node, else null
  int16_t cuda_device = -1;     // the CUDA device whose memory holds it; -1: host memory
  bool scalar_derived = false;  // host values computed from CPU scalars alone: they join any device's ops
  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();
};
using StoragePtr = std::shared_ptr<Storage>;

namespace tracer {

// Records `node` in the calling thread's segment and returns it (counts ops_traced; flushes the
// segment when it passes the node cap).
ir::NodePtr record(ir::Node&& node);

// A storage whose content is `node`; tracked by the segment so that a flush computes it while
// the storage is alive.
StoragePtr new_storage(ir::NodePtr node);
// A storage that is the caller's memory: `input` is an Input node over a borrowed buffer.
StoragePtr new_storage_over_memory(ir::NodePtr input);
// Points an existing storage at new content (an in-place write) and bumps its version. A
// storage over the caller's memory is written at the next flush (or at once, eagerly).
void set_content(const StoragePtr& s, ir::NodePtr node);

// Computes every pending value that a live storage of this thread's segment holds.
void flush();
// The nodes this thread recorded since its last flush, which its next flush orders by
// (fusion::make_plan); read by tests and benchmarks.
const ir::RecordedNodes& recorded_nodes();
// Makes sure `s` is computed (flushing this thread's segment first), and returns its buffer.
const BufferPtr& materialize(Storage& s);

// Eager mode's unit of work: while one is alive on a thread, eager mode records that thread's
// ops without computing them, and the outermost one flushes them as it ends. A composite op
// (softmax, layer_norm, cross_entropy, an optimizer's update of one parameter, and the backward
// of such an op) is one group, so that it runs as libtorch's op does, in a few passes over memory
// (kernels run unfused: per-op loops over chunks that stay in cache) instead of one per primitive.
// The user sees no difference: a composite's results are computed when it returns. No effect in
// lazy mode. An exception leaving the group leaves the ops pending for the next flush.
class EagerGroup {
 public:
  EagerGroup() : uncaught_(begin_eager_group()) {}
  ~EagerGroup() noexcept(false) { end_eager_group(uncaught_); }
  EagerGroup(const EagerGroup&) = delete;
  EagerGroup& operator=(const EagerGroup&) = delete;

  // What EagerGroup does, for a group that spans a loop's iterations (the autograd engine's):
  // begin returns what end takes (std::uncaught_exceptions() at the start).
  static int begin_eager_group();
  static void end_eager_group(int uncaught_at_begin);

 private:
  int uncaught_;
};
// The outermost group alive on this thread (a number given to each, from 1), or 0 outside groups.
uint64_t eager_group();

}  // namespace tracer
}  // namespace kiln
