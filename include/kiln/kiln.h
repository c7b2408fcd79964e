// kiln: lazy, fused tensors with reverse-mode autograd. The public API, namespace kiln.
#pragma once
#include "frontend/autograd.h"
#include "frontend/data/data.h"
#include "frontend/nn/nn.h"
#include "frontend/ops.h"
#include "frontend/optim/optim.h"
#include "frontend/tensor.h"
#include "runtime/config.h"
#include "runtime/cuda/allocator.h"  // kiln::cuda::memory_allocated() and the other figures
#include "runtime/stats.h"
