// The numbers the hand schedule (schedule.cpp, reduction.cpp) is built from, made explicit so
// that `kiln tune` can try others: the defaults are the hand schedule. A schedule to compile a
// kernel with is named by text (ScheduleChoice), which is also what the tuning database stores.
// No Halide here: both sides of the compiler module read it.
#pragma once
#include <string>

#include "fusion/kernel.h"

namespace kiln::codegen::halide {

struct ScheduleParams {
  int element_lanes = 0;        // float32 lanes of element loops; 0: the hand choice (schedule.cpp)
  int task_elements = 1 << 14;  // the parallel grain: elements per task of the thread pool
  int serial_below = 1 << 16;   // kernels with fewer elements run on the calling thread
  int tile = 0;                 // a transposing kernel's tile side; 0: the native vector
  int column_run = 2048;        // columns read in runs of this many (column sums in blocks)
  int reduction_vectors = 2;    // native vectors a row reduction's lanes take a step
  int chunk_steps = 1024;       // steps per parallel chunk of a whole-tensor reduction
  int column_vectors = 8;       // native vectors of columns a column sum adds at a time, per row
  // Tiles of this side over the two dims a pointwise kernel of rank 3 or more transposes (its
  // innermost and the one a read walks contiguously); 0: rows in vectors, the hand's choice there.
  int tiles = 0;
  int masked_rows = 0;  // 1: a pointwise kernel's rows in vectors of one width, the tail masked

  bool operator==(const ScheduleParams& o) const;
  // Takes each value of `o` that is not the hand one where this still has the hand one; returns
  // whether any was taken.
  bool merge(const ScheduleParams& o);
  bool operator!=(const ScheduleParams& o) const { return !(*this == o); }
};

// Whether the hand schedule computes `op` in float32 as a long chain of dependent vector
// arithmetic (a polynomial or a ratio of two), which kernels step through several vectors at a
// time to overlap (ops.cpp lowers them so).
bool float32_polynomial(ir::Op op);

// The float32 lanes the hand schedule steps a pointwise or row kernel's element loops by: the
// target's `native` vector, or four of them (at most 32 lanes) where the kernel computes a float32
// exp, log, tanh or erf (schedule.cpp says why).
int hand_element_lanes(const fusion::Kernel& k, int native);

// The dim (outermost first) other than the innermost that a read of pointwise kernel k walks
// contiguously while it strides across the innermost (a transposed view); -1 if none.
int transposed_dim(const fusion::Kernel& k);

// `p` as kernel k's schedule reads it: each value k's schedule does not read, or reads to the hand
// value's effect (a grain where k runs on the calling thread, a serial threshold on the same side
// of k's size as the hand's, the hand's own lanes), put back to the hand value. Candidates with
// the same effective parameters compile to the same kernel, so `kiln tune` times one of them.
// Where unsure it keeps a value: a value kept needlessly costs a compile, never a result.
ScheduleParams effective_params(const fusion::Kernel& k, ScheduleParams p, int native);

// How to schedule a kernel: the hand schedule with some parameters (kind Params; default values
// are exactly the hand schedule), or one of Halide's autoschedulers given the kernel's sizes as
// estimates (kind Auto: Li2018, Adams2019, Mullapudi2016; Adams2019 with `dropout` < 100 samples
// its beam search at random, from `seed`).
struct ScheduleChoice {
  enum class Kind { Params, Auto };
  Kind kind = Kind::Params;
  ScheduleParams params;
  std::string autoscheduler;
  int dropout = 100;
  int seed = 0;

  bool is_hand() const { return kind == Kind::Params && params == ScheduleParams{}; }
  // "hand", "params lanes=16 grain=32768 ...", "auto Adams2019 dropout=50 seed=3"; parse() reads
  // it back and throws kiln::Error on anything else.
  std::string text() const;
  static ScheduleChoice parse(const std::string& text);
};

// The parameters the compiling thread schedules with (the defaults unless a ScopedScheduleParams
// is alive on it): compiles run on several threads at once, each its own choice.
const ScheduleParams& schedule_params();
class ScopedScheduleParams {
 public:
  explicit ScopedScheduleParams(const ScheduleParams& p);
  ~ScopedScheduleParams();
  ScopedScheduleParams(const ScopedScheduleParams&) = delete;
  ScopedScheduleParams& operator=(const ScopedScheduleParams&) = delete;

 private:
  ScheduleParams saved_;
};

}  // namespace kiln::codegen::halide
