// kiln's data-parallel training across processes and machines: torch.distributed's functions
// (namespace kiln::distributed), DistributedDataParallel (kiln::nn::parallel) and libtorch's
// c10d names (namespace c10d). Collectives run on Gloo (CPU tensors).
#pragma once
#include "frontend/distributed/c10d.h"
#include "frontend/distributed/comm_hooks.h"
#include "frontend/distributed/ddp.h"
#include "frontend/distributed/distributed.h"
#include "frontend/distributed/process_group.h"
#include "frontend/distributed/store.h"
