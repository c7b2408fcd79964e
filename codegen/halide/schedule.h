// How a kernel's Funcs (lower_kernel.h) run on the CPU: loops split into vectors, tiles and
// parallel tasks, what is computed where. Each kind of kernel chooses among its schedules in one
// place (schedule_pointwise_kernel, schedule_reduction_kernel, schedule_row_kernel). For the
// compiler module only (it includes Halide.h).
#pragma once
#include <Halide.h>

#include "codegen/halide/lower_kernel.h"

namespace kiln::codegen::halide {

// Float32 lanes of the target's vector.
int native_lanes();

// An accumulator's lanes: two vectors a step (Accumulator::width), block sums at partial's
// blocks. Scheduled before anything else about its Funcs (a specialization copies the schedule
// its stage has so far).
void schedule_lanes(Accumulator& A);

void schedule_pointwise_kernel(const Lowering& L, PointwiseFuncs& f);
void schedule_reduction_kernel(const Lowering& L, ReductionFuncs& f);
void schedule_row_kernel(const Lowering& L, RowFuncs& f);

}  // namespace kiln::codegen::halide
