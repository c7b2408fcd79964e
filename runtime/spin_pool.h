// kiln's own worker pool (runtime/spin_pool.cpp): parallel_for's other implementation, chosen with
// KILN_THREADS_IMPL=pool, for measuring it against oneTBB's.
#pragma once
#include "runtime/parallel.h"

namespace kiln {

// parallel_for's contract (runtime/parallel.h), on threads that spin for a while after each loop.
void spin_pool_parallel_for(int n, TaskBody body, void* ctx);

}  // namespace kiln
