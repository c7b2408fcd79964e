// Per-op device kernels: what a flush runs on a CUDA device, node by node, while a fused kernel's
// NVRTC compile is queued in the background (KILN_COMPILE=background). One __global__ function
// per elementwise op and compute class (float32, float64, wrapping int64; float64 on integer
// operands for a division), plus the reductions (a function per combining op and accumulator)
// and Const. Generic over sizes, strides and dtypes: those are arguments (PerOpArgs), each
// element loaded and stored through a switch over its dtype with the very conversions the fused
// kernels compile in (ops.h), so a node's value is the fused kernel's. The functions of one op
// make one module (per_op_source); when kiln was built with the toolkit, a cubin of all of them
// per architecture (sm_80, sm_90) lies beside the library (per_op_library_path) and is loaded
// instead, so that nothing is compiled at run time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tracer/ir.h"

namespace kiln::codegen::cuda {

// The most dims a per-op kernel indexes (after merging contiguous ones); nodes of more run fused.
constexpr int kPerOpMaxRank = 8;

// An elementwise node's (or Const's) arguments, laid out as the CUDA source's kiln_per_op_args.
struct PerOpArgs {
  int64_t count = 0;                       // elements of the output
  int64_t sizes[kPerOpMaxRank] = {};       // the output's dims, outermost first
  int64_t offsets[3] = {};                 // per operand
  int64_t strides[3][kPerOpMaxRank] = {};  // per operand and dim
  double f = 0;                            // Const: its value, floats
  int64_t i = 0;                           // Const: its value, integers
  int32_t rank = 1;
  int32_t dtypes[3] = {};  // per operand: its ScalarType
  int32_t out_dtype = 0;
  int32_t unused = 0;
};

// A reduction's arguments (kiln_per_op_reduce_args): the kept dims index the output
// (contiguous), the reduced ones a block's loop.
struct PerOpReduceArgs {
  int64_t outputs = 0, inner = 0;
  int64_t offset = 0;
  int64_t kept_sizes[kPerOpMaxRank] = {}, kept_strides[kPerOpMaxRank] = {};
  int64_t red_sizes[kPerOpMaxRank] = {}, red_strides[kPerOpMaxRank] = {};
  int32_t kept_rank = 0, red_rank = 0;
  int32_t in_dtype = 0, out_dtype = 0;
};

// How to launch one node's per-op kernel.
struct PerOpLaunch {
  std::string module;    // which per_op_source holds the function
  std::string function;  // the __global__ function
  bool reduce = false;   // arguments: `reduce_args`, input, output; else `args`, 3 inputs, output
  PerOpArgs args;
  PerOpReduceArgs reduce_args;
  std::vector<const ir::Node*> inputs;  // the nodes read, in argument order
  int64_t work = 0;                     // elements (reductions: outputs) to spread over the grid
};

// Whether `n` has a per-op device kernel (and fits it: ranks, operands read at its own sizes);
// if so, how to launch it.
bool per_op_launch(const ir::Node& n, PerOpLaunch& launch);

// The CUDA source of module `module` (a per-op kernel's PerOpLaunch::module), and of all of them
// together (the library built ahead of time).
std::string per_op_source(const std::string& module);
const std::string& per_op_library_source();
// Every module's name.
std::vector<std::string> per_op_modules();

// The prebuilt library for `sm_<arch>` (its name carries the source's hash, so a cubin of another
// source is never loaded): in the build tree, in lib/kiln/cuda beside the program's bin/ folder,
// or where kiln was installed; empty where there is none.
std::string per_op_library_path(int arch);
// The file name of that library in its folder.
std::string per_op_library_file(int arch);

}  // namespace kiln::codegen::cuda
