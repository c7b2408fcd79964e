// The entry points of libkiln_halide_compiler.so, the module that holds Halide and LLVM
// (codegen/halide/compiler.h loads it), and compiling there: a kernel is lowered to Funcs
// (lower_kernel.h), scheduled (schedule.h) and compiled to an object file exporting
// `<name>_argv`. C linkage and errors as text: the module carries its own hidden copy of the kiln
// code it uses, so a kiln::Error thrown in here is not the type the caller catches.
#include <Halide.h>

#include <cstdio>
#include <exception>

#include "codegen/halide/autoschedule.h"
#include "codegen/halide/compiler.h"
#include "codegen/halide/lower_kernel.h"
#include "codegen/halide/ops.h"
#include "codegen/halide/schedule.h"
#include "codegen/halide/schedule_params.h"
#include "runtime/error.h"

#define KILN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// Runs `f`; an exception becomes its message in `error` and a nonzero result.
template <typename F>
int guarded(char* error, size_t size, F f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    std::snprintf(error, size, "%s", e.what());
  } catch (...) {
    std::snprintf(error, size, "halide: unknown exception");
  }
  return 1;
}

}  // namespace

namespace kiln::codegen::halide {
namespace {

using namespace Halide;

// The kernel's Funcs, scheduled as `choice` says: its pipeline.
Pipeline lower_and_schedule(Lowering& L, const ScheduleChoice& choice) {
  const bool by_hand = choice.kind == ScheduleChoice::Kind::Params;
  const ScopedScheduleParams params(choice.params);  // read by lowering (reduction.cpp) and schedule.cpp
  Pipeline p;
  if (L.k.row_kernel()) {
    RowFuncs f = lower_rows(L);
    if (by_hand) schedule_row_kernel(L, f);
    p = Pipeline(f.outputs());
  } else if (L.k.kind == fusion::Kernel::Kind::Reduction) {
    ReductionFuncs f = lower_reduction(L);
    if (by_hand) schedule_reduction_kernel(L, f);
    p = Pipeline(f.out);
  } else {
    PointwiseFuncs f = lower_pointwise(L);
    if (by_hand) schedule_pointwise_kernel(L, f);
    p = Pipeline(f.outputs);
  }
  if (!by_hand) autoschedule(L, p, choice);
  return p;
}

// Outputs are contiguous buffers at min 0 (backend.cpp): their strides follow from their extents,
// and a tiny inner dim's extent is compiled in. Known strides let Halide store a vector that
// steps over a tiny dim as dense interleaved stores: with the stride an argument, each was a
// scatter (a pooling gradient's 2x2 windows, stored 8 lanes at a time at stride 2). Only a
// Tuple's first buffer takes constraints; the others follow its mins and extents.
void constrain_output(const fusion::Kernel& k, Func f) {
  OutputImageParam out = f.output_buffers()[0];
  for (int d = 0; d < f.dimensions(); ++d) {
    out.dim(d).set_min(0);
    if (d > 0) out.dim(d).set_stride(out.dim(d - 1).stride() * out.dim(d - 1).extent());
  }
  if (const int64_t e = k.tiny_inner()) out.dim(0).set_extent(int(e));
}

// A stride constraint above reads its own buffer's extents and strides: the buffer's parameter
// holds the expression and the expression holds the parameter, a cycle of Halide's reference
// counts that outlived the pipeline (a few KB a kernel, LeakSanitizer's finding). Cleared when
// the compile is over, whichever way it ends.
struct ClearStrideConstraints {
  const Pipeline& pipeline;
  ~ClearStrideConstraints() {
    for (Func f : pipeline.outputs())
      for (OutputImageParam out : f.output_buffers())
        for (int d = 1; d < f.dimensions(); ++d) out.dim(d).set_stride(Expr());
  }
};

// Names the target, e.g. "x86-64-linux-avx-avx2-f16c-fma-sse41".
std::string target_name() { return kernel_target().without_feature(Target::NoRuntime).to_string(); }

// Compiles `kernel` to `object_path` as function `name`; also writes the lowered statement to
// `dump_dir` when it is not empty. Throws kiln::Error on failure.
void compile_kernel(const fusion::Kernel& kernel, const ScheduleChoice& choice, const std::string& name,
                    const std::string& object_path, const std::string& dump_dir) {
  try {
    Lowering L(kernel);
    Pipeline p = lower_and_schedule(L, choice);
    const ClearStrideConstraints clear{p};
    for (Func f : p.outputs()) constrain_output(kernel, f);
    // The statement first: it is what to read when compiling fails or hangs.
    if (!dump_dir.empty())
      p.compile_to_lowered_stmt(dump_dir + "/" + name + ".stmt", L.arguments, Text, kernel_target());
    p.compile_to_object(object_path, L.arguments, name, kernel_target());
  } catch (const Halide::Error& e) {
    throw Error(detail::concat("halide: compiling kernel ", name, " failed: ", e.what()));
  }
}

// Compiles the Halide runtime (shared by every kernel, which are built without their own copy).
void compile_runtime(const std::string& object_path) {
  compile_standalone_runtime(object_path, kernel_target().without_feature(Target::NoRuntime));
}

}  // namespace
}  // namespace kiln::codegen::halide

using namespace kiln::codegen::halide;

KILN_EXPORT uint64_t kiln_halide_compiler_abi() { return kCompilerAbi; }

KILN_EXPORT int kiln_halide_compile_kernel(const kiln::fusion::Kernel* kernel, const char* name,
                                           const char* object_path, const char* dump_dir, char* error,
                                           size_t error_size) {
  return guarded(error, error_size, [&] { compile_kernel(*kernel, ScheduleChoice{}, name, object_path, dump_dir); });
}

// As kiln_halide_compile_kernel, with the schedule `schedule` names (ScheduleChoice::text()).
KILN_EXPORT int kiln_halide_compile_kernel_scheduled(const kiln::fusion::Kernel* kernel, const char* schedule,
                                                     const char* name, const char* object_path, const char* dump_dir,
                                                     char* error, size_t error_size) {
  return guarded(error, error_size,
                 [&] { compile_kernel(*kernel, ScheduleChoice::parse(schedule), name, object_path, dump_dir); });
}

KILN_EXPORT int kiln_halide_compile_runtime(const char* object_path, char* error, size_t error_size) {
  return guarded(error, error_size, [&] { compile_runtime(object_path); });
}

// The name, or on failure the error, in `out`.
KILN_EXPORT int kiln_halide_target_name(char* out, size_t size) {
  return guarded(out, size, [&] { std::snprintf(out, size, "%s", target_name().c_str()); });
}
