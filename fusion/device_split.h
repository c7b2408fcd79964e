// A segment may hold work for the host and for CUDA devices side by side (a metric computed on
// the CPU while the model runs on the GPU, `.cpu()` of a device value, `.to(device)` of a host
// one). Each device's steps run on that device's backend: the plan is cut into parts of one
// device each, ordered so that a part runs after the parts whose values it reads.
#pragma once
#include <vector>

#include "fusion/plan.h"

namespace kiln::fusion {

struct DevicePart {
  int device = -1;  // a CUDA device, or -1: the host
  Plan plan;        // its steps only; a value another part reads is a root here
};

// The parts of `plan` by device (ir::Node::cuda_device). A copy between devices runs on the CUDA
// side (it reads or writes device memory), and a constant fill that no live tensor holds goes
// into every part that reads it (it is folded into the readers' kernels). Empty where every step
// runs on one device: the plan runs as it is.
std::vector<DevicePart> split_by_device(const Plan& plan);

}  // namespace kiln::fusion
