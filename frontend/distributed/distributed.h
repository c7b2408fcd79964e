// torch.distributed's functions in C++ (namespace kiln::distributed): one default process group
// per process, made by init_process_group from torchrun's variables (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT; `kiln launch` sets them) or from an init_method URL.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "frontend/distributed/process_group.h"

namespace kiln::distributed {

// backend: "gloo" (CPU tensors), "nccl" (CUDA tensors, one GPU per rank), "mpi" (CPU tensors, a
// job mpirun started: rank and size are MPI's, init_method is not used).
// init_method: "env://" (the variables above; rank 0 serves a TCPStore at MASTER_ADDR:MASTER_PORT),
// "tcp://HOST:PORT" (the same store there) or "file:///FOLDER" (Gloo's file store, on one machine
// or a shared file system; a folder an earlier job used is fine: see FileStore). world_size and rank, where not -1,
// take precedence over WORLD_SIZE and RANK. `timeout` bounds the rendezvous and every collective.
void init_process_group(const std::string& backend, const std::string& init_method = "env://", int world_size = -1,
                        int rank = -1, std::chrono::milliseconds timeout = kDefaultTimeout);
bool is_initialized();
void destroy_process_group();
int get_rank();
int get_world_size();
std::string get_backend();
// The default group (throws kiln::Error if there is none).
std::shared_ptr<ProcessGroup> default_process_group();

// Collectives on the default group, in place on tensors (CPU; CUDA with nccl) of the same shape
// and dtype on every rank. With async_op they return the Work to wait() on; otherwise they wait
// and return null.
std::shared_ptr<Work> all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::SUM, bool async_op = false);
std::shared_ptr<Work> broadcast(const Tensor& tensor, int src, bool async_op = false);
// output[r] receives rank r's `tensor`; `output` has world_size tensors shaped as `tensor`.
std::shared_ptr<Work> all_gather(std::vector<Tensor>& output, const Tensor& tensor, bool async_op = false);
// `output` receives the reduction over ranks of each rank's input[this rank].
std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& input,
                                     ReduceOp op = ReduceOp::SUM, bool async_op = false);
std::shared_ptr<Work> barrier(bool async_op = false);

}  // namespace kiln::distributed
