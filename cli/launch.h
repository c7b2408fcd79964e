// `kiln launch`: starts the ranks of a data-parallel job on this machine, as torchrun does. Each
// rank runs `command` with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
// MASTER_ADDR and MASTER_PORT set (and KILN_NUM_THREADS, unless set, to the cores each rank gets),
// its output streamed line by line with a `[rank N]` prefix. The job ends with the first failing
// rank's status (128 + the signal for a rank killed by one), the other ranks then stopped.
#pragma once
#include <string>
#include <vector>

namespace kiln::cli {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::vector<std::string> command;  // PROGRAM ARGS...
};

// Returns the job's exit status. Throws kiln::Error for arguments that cannot start a job (a
// node rank outside --nnodes, the master's port in use on the master node).
int launch(const LaunchOptions& options);

// A TCP port free on this machine now (for a job of its own, as `kiln train --nproc-per-node`).
int free_port();

}  // namespace kiln::cli
