// libtorch's c10d names for kiln's process groups and stores, so that code written against them
// ports: `auto store = std::make_shared<c10d::FileStore>(path, size);
// c10d::ProcessGroupGloo pg(store, rank, size); pg.allreduce(tensors)->wait();`.
#pragma once
#include "frontend/distributed/process_group.h"
#include "frontend/distributed/store.h"

namespace c10d {
using ::kiln::distributed::AllgatherOptions;
using ::kiln::distributed::AllreduceOptions;
using ::kiln::distributed::BarrierOptions;
using ::kiln::distributed::BroadcastOptions;
using ::kiln::distributed::FileStore;
using ::kiln::distributed::ProcessGroup;
using ::kiln::distributed::ProcessGroupGloo;
using ::kiln::distributed::ProcessGroupMPI;
using ::kiln::distributed::ProcessGroupNCCL;
using ::kiln::distributed::ReduceOp;
using ::kiln::distributed::ReduceScatterOptions;
using ::kiln::distributed::Store;
using ::kiln::distributed::TCPStore;
using ::kiln::distributed::Work;
}  // namespace c10d
