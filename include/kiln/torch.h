// libtorch's names for kiln: a libtorch 1.13 program compiles unchanged with
// `#include <kiln/torch.h>` in place of `#include <torch/torch.h>`. Everything lives in namespace
// kiln; `torch` and `at` are aliases of it, and the few names libtorch keeps elsewhere are
// declared where libtorch programs look for them.
#pragma once
#include "kiln/kiln.h"

namespace kiln {

// torch::NoGradGuard, torch::AutoGradMode (libtorch has them at the top level too).
using autograd::AutoGradMode;
using autograd::GradMode;
using autograd::NoGradGuard;

// torch::InferenceMode: gradients off; kiln has no separate inference-only tensors.
struct InferenceMode : autograd::AutoGradMode {
  explicit InferenceMode(bool enabled = true) : autograd::AutoGradMode(!enabled) {}
};

namespace autograd {
// torch::autograd::variable_list, tensor_list and Variable.
using ::kiln::tensor_list;
using ::kiln::variable_list;
using Variable = ::kiln::Tensor;
}  // namespace autograd

// kiln runs where it chooses; to a libtorch program there is no CUDA device.
namespace cuda {
inline bool is_available() { return false; }
inline int64_t device_count() { return 0; }
inline void manual_seed(uint64_t) {}
inline void manual_seed_all(uint64_t) {}
}  // namespace cuda

}  // namespace kiln

namespace torch = kiln;
namespace at = kiln;

// Options with chained setters in user code (`TORCH_ARG(double, lr) = 0.1;`).
#ifndef TORCH_ARG
#define TORCH_ARG(T, name) KILN_ARG(T, name)
#endif
