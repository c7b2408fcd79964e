// A Storage is what views share: the node whose output is the storage's current content, and a
// version counter that in-place writes bump. An in-place op does not mutate a buffer; it records a
// new node (a WriteView over the old content) and points the storage at it, so earlier recorded
// readers keep seeing the old value and later ones the new.
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
};
using StoragePtr = std::shared_ptr<Storage>;

namespace tracer {

// Records `node` in the calling thread's segment and returns it (counts ops_traced; flushes the
// segment when it passes the node cap).
ir::NodePtr record(ir::Node&& node);

// A storage whose content is `node`; tracked by the segment so that a flush computes it while
// the storage is alive.
StoragePtr new_storage(ir::NodePtr node);
// Points an existing storage at new content (an in-place write) and bumps its version.
void set_content(const StoragePtr& s, ir::NodePtr node);

// Computes every pending value that a live storage of this thread's segment holds.
void flush();
// The nodes this thread recorded since its last flush, which its next flush orders by
// (fusion::make_plan); read by tests and benchmarks.
const ir::RecordedNodes& recorded_nodes();
// Makes sure `s` is computed (flushing this thread's segment first), and returns its buffer.
const BufferPtr& materialize(Storage& s);

}  // namespace tracer
}  // namespace kiln
