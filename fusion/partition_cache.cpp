#include "fusion/partition_cache.h"

#include <memory>
#include <unordered_map>

#include "runtime/hash.h"

namespace kiln::fusion {
namespace {

// Numbers the nodes a plan touches: step i is ref i; a computed node it reads is ref n + k, k in
// order of first reading. Every node gets a fresh stamp and its ref in pass_value. The signature
// holds everything partition() and Kernel::key() look at: ops, dtypes, shapes, attributes, which
// steps are roots, and every read with its view (constants' values are kernel arguments, and CSE
// and simplification, which do look at them, ran before).
struct Numbering {
  std::vector<ir::Node*> nodes;  // by ref
  std::vector<int64_t> signature;
};
void number_nodes(const Plan& plan, Numbering& out) {
  // One walk: steps come in dependency order, so a step's inputs that are steps were numbered
  // before it, and an input not yet stamped is a computed node.
  const uint64_t stamp = begin_pass();
  out.nodes.assign(plan.steps.size(), nullptr);
  out.signature.clear();
  auto& sig = out.signature;
  auto put_shape = [&](IntArrayRef s) {
    sig.push_back(int64_t(s.size()));
    for (int64_t d : s) sig.push_back(d);  // not insert: a memmove call per shape was a third of this walk
  };
  sig.push_back(int64_t(plan.steps.size()));
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    ir::Node& n = *step.node;
    n.pass = stamp;
    n.pass_value = int64_t(i);
    out.nodes[i] = &n;
    sig.push_back(int64_t(n.op) << 16 | int64_t(n.dtype) << 1 | int64_t(step.is_root));
    put_shape(n.shape);
    put_shape(n.ints);
    sig.push_back(int64_t(n.inputs.size()));
    for (const auto& in : n.inputs) {
      ir::Node* p = in.node.get();
      if (p->pass != stamp) {  // a computed node, first read here
        p->pass = stamp;
        p->pass_value = int64_t(out.nodes.size());
        out.nodes.push_back(p);
        sig.push_back(-1);
        sig.push_back(int64_t(p->dtype));
        put_shape(p->shape);
      }
      sig.push_back(p->pass_value);
      sig.push_back(in.view.offset);
      put_shape(in.view.sizes);
      put_shape(in.view.strides);
    }
  }
}

// A partition with its node pointers given as refs (see number_nodes), to be filled in per flush.
struct Entry {
  std::vector<int64_t> signature;
  Partition partition;
  std::vector<std::vector<int64_t>> node_refs, read_refs, release_refs;  // per kernel
  std::vector<int64_t> library_refs;                                     // per kernel, -1 if none
};

// Rewrites a pointer into its ref: every node a partition mentions was numbered.
int64_t ref_of(const ir::Node* n) { return n->pass_value; }

std::unique_ptr<Entry> make_entry(const Plan& plan, Numbering& numbering) {
  auto e = std::make_unique<Entry>();
  Partition& p = e->partition;
  p.kernels = partition(plan, &p.release);
  number_nodes(plan, numbering);  // partition() stamped the steps with its own numbers
  e->signature = numbering.signature;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& k = p.kernels[i];
    p.keys.push_back(k.kind == Kernel::Kind::Library ? std::string() : k.key());
    e->node_refs.emplace_back();
    for (const auto& kn : k.nodes) e->node_refs.back().push_back(ref_of(kn.node));
    e->read_refs.emplace_back();
    for (const auto& r : k.reads) e->read_refs.back().push_back(ref_of(r.node));
    e->release_refs.emplace_back();
    for (const ir::Node* n : p.release[i]) e->release_refs.back().push_back(ref_of(n));
    e->library_refs.push_back(k.library_node ? ref_of(k.library_node) : -1);
  }
  return e;
}

// Points a remembered partition at this flush's nodes.
void fill_in(Entry& e, const Plan& plan, const Numbering& numbering) {
  Partition& p = e.partition;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    Kernel& k = p.kernels[i];
    for (size_t j = 0; j < k.nodes.size(); ++j) k.nodes[j].node = numbering.nodes[e.node_refs[i][j]];
    for (size_t j = 0; j < k.reads.size(); ++j) k.reads[j].node = numbering.nodes[e.read_refs[i][j]];
    for (size_t j = 0; j < p.release[i].size(); ++j) p.release[i][j] = numbering.nodes[e.release_refs[i][j]];
    if (e.library_refs[i] >= 0) k.library_node = plan.steps[e.library_refs[i]].node;  // library nodes are steps
  }
}

constexpr size_t kMaxEntries = 256;  // distinct segments remembered; beyond, start over

struct Cache {
  std::unordered_map<uint64_t, std::unique_ptr<Entry>> entries;
  Numbering numbering;  // reused: its vectors keep their capacity
  PartitionCacheCounts counts;
};
Cache& cache() {
  static Cache c;  // flushes run one at a time
  return c;
}

}  // namespace

const Partition& partition_cached(const Plan& plan) {
  Cache& c = cache();
  number_nodes(plan, c.numbering);
  const uint64_t h = fnv1a64_words(c.numbering.signature);
  auto it = c.entries.find(h);
  if (it != c.entries.end() && it->second->signature == c.numbering.signature) {
    ++c.counts.reused;
    fill_in(*it->second, plan, c.numbering);
    return it->second->partition;
  }
  ++c.counts.made;
  std::unique_ptr<Entry> made = make_entry(plan, c.numbering);
  if (c.entries.size() >= kMaxEntries) c.entries.clear();
  auto& slot = c.entries[h];  // a colliding structure replaces the entry it collided with
  slot = std::move(made);
  return slot->partition;
}

PartitionCacheCounts partition_cache_counts() { return cache().counts; }

}  // namespace kiln::fusion
