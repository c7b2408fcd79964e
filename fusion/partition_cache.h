// Partitions remembered by the structure of the plan they came from (DESIGN.md: "a segment's plan
// is cached too"). A training loop flushes a segment of the same structure every step; from the
// second time on, its kernels and their keys come from here and only the pointers to this flush's
// nodes are filled in, so a step costs its rewrites (CSE, simplification), this lookup, and the
// launches.
#pragma once
#include <string>
#include <vector>

#include "fusion/kernel.h"

namespace kiln::fusion {

struct Partition {
  std::vector<Kernel> kernels;
  std::vector<std::string> keys;                // Kernel::key() of each; empty for library kernels
  std::vector<std::vector<ir::Node*>> release;  // per kernel: intermediates it is the last to read
};

// The partition of `plan` (after its rewrites), as partition() would make it. Its pointers are to
// `plan`'s nodes: it is for running this plan (flushes run one at a time), and the next call
// points them at the next plan's.
const Partition& partition_cached(const Plan& plan);

// Partitions made (misses) and reused (hits) in this process, for tests.
struct PartitionCacheCounts {
  int64_t made = 0, reused = 0;
};
PartitionCacheCounts partition_cache_counts();

}  // namespace kiln::fusion
