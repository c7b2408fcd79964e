// The lazy IR. A node is one primitive op over operands; an operand is a strided view of another
// node's (contiguous) output, so views, transposes and broadcasts cost no node of their own and
// fold into whatever consumes them. A node's result is set once a flush has computed it; from then
// on it forgets its inputs, so computed history is freed as it goes.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/buffer.h"
#include "runtime/dtype.h"
#include "runtime/pool.h"
#include "runtime/shape.h"

namespace kiln::ir {

enum class Op : uint8_t {
#define X(name, kind, cost, traits, combine) name,
#include "tracer/ops.def"
#undef X
};
inline constexpr int kOpCount = 0
#define X(name, kind, cost, traits, combine) +1
#include "tracer/ops.def"
#undef X
    ;
enum class OpKind : uint8_t {
  Leaf,
  Unary,
  Binary,
  Compare,
  Select,
  Reduce,
  ArgReduce,
  Matmul,
  Gather,
  Cat,
  WriteView,
  Scan,  // Scan and Sort: library routines over rows (codegen/scan_sort.h)
  Sort
};

// An op's traits (tracer/ops.def says what each means).
enum OpTraits : uint8_t { kExact = 1, kCommutative = 2, kAssociative = 4, kInt64 = 8 };

// What tracer/ops.def says of one op.
struct OpFacts {
  const char* name;
  OpKind kind;
  int cost;  // simple operations per element (fusion/partition.cpp, codegen/halide/schedule.cpp)
  uint8_t traits;
  Op combine;  // a reduction's binary op; the op itself otherwise
  bool has(OpTraits t) const { return (traits & t) != 0; }
};
const OpFacts& facts(Op op);
inline const char* op_name(Op op) { return facts(op).name; }
inline OpKind op_kind(Op op) { return facts(op).kind; }
inline int op_cost(Op op) { return facts(op).cost; }
// Every op, in the table's order (tests and the random-program generator walk it).
const Op* all_ops();

struct Node;
using NodePtr = std::shared_ptr<Node>;

// How a consumer reads a node's flat output: element (i0..ik) is at offset + sum(i_d * strides_d).
struct View {
  Shape sizes, strides;
  int64_t offset = 0;
};

struct Operand {
  NodePtr node;
  View view;
};

struct Node {
  Op op;
  ScalarType dtype;
  int16_t cuda_device = -1;  // the CUDA device its tensor lives on (Storage::cuda_device); -1: the host
  uint32_t trace_index = 0;  // its place in its thread's RecordedNodes (tracer::record; in padding)
  Shape shape;               // the output is contiguous in this shape
  std::vector<Operand, pool::Allocator<Operand>> inputs;  // cleared once computed
  std::vector<int64_t> ints;                              // axes, dim, or a view for WriteView
  double scalar = 0;       // Const's value; an int64 Const's nearest double (see int_scalar)
  int64_t int_scalar = 0;  // an int64 Const's value, exact (a double is not above 2^53)
  BufferPtr result;        // set once computed
  uint64_t seq = 0;        // order of recording (tracer::record): see fusion::make_plan

  // Scratch for the pass over a plan now running (fusion/): a pass stamps the nodes it touches
  // with its own number (fusion::begin_pass), so a stamp left by an earlier pass reads as unset
  // and no pass needs a hash map from nodes. Flushes run one at a time, so passes never overlap.
  uint64_t pass = 0;
  int64_t pass_value = 0;

  bool computed() const { return result != nullptr; }
  int64_t numel() const { return numel_of(shape); }
};

// The nodes one thread recorded since its last flush, in the order it recorded them
// (tracer::record), each with its seq; a node's trace_index is its place here. Nodes that died
// since are left in place: fusion::make_plan reads an entry only once a live node led it there.
struct RecordedNode {
  Node* node;
  uint64_t seq;  // tells the node apart from another thread's later one at a dead node's address
};
using RecordedNodes = std::vector<RecordedNode>;

// After a flush: a node that kept its result no longer needs its inputs (dropping them frees the
// graph above it). One whose result was released, or never written (computed inside a kernel),
// keeps them: a tensor of another thread's segment may still hold it, and its own flush then
// computes it again.
inline void forget_inputs_if_computed(Node& n) {
  if (!n.computed()) return;
  n.inputs.clear();
  n.inputs.shrink_to_fit();
}

// Prints one node as `%id = op(...)`; ids are addresses shortened for reading.
std::string to_string(const Node& n);

}  // namespace kiln::ir
