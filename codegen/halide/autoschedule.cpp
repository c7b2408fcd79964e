#include "codegen/halide/autoschedule.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "codegen/arguments.h"
#include "codegen/halide/ops.h"
#include "runtime/error.h"

namespace kiln::codegen::halide {
namespace {

using namespace Halide;

// Where Debian's libhalide14 puts the plugins.
std::string plugin_path(const std::string& autoscheduler) {
  std::string lower = autoscheduler;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return "/usr/lib/x86_64-linux-gnu/halide14/libautoschedule_" + lower + ".so";
}

// Every Param and input the pipeline reads, and each output, estimated at the kernel's own sizes.
void set_estimates(Lowering& L, Pipeline& p) {
  const fusion::Kernel& k = L.k;
  size_t input = 0, extent = 0, offset = 0;
  for_each_argument(k, [&](const KernelArgument& a) {
    switch (a.kind) {
      case KernelArgument::Kind::Input:
        L.inputs[input++].set_estimates({{0, int(k.reads[size_t(a.read)].node->numel())}});
        break;
      case KernelArgument::Kind::Extent: L.extents[extent++].set_estimate(int32_t(k.domain[size_t(a.dim)])); break;
      case KernelArgument::Kind::Offset:
        L.offsets[offset++].set_estimate(int32_t(k.reads[size_t(a.read)].offset));
        break;
      case KernelArgument::Kind::Stride:
        L.strides[size_t(a.read)]
            .at(size_t(a.dim))
            .set_estimate(int32_t(k.reads[size_t(a.read)].strides[size_t(a.dim)]));
        break;
      case KernelArgument::Kind::Int64Const:
      case KernelArgument::Kind::Float64Const: {
        const auto* v = L.consts.at(a.node).as<Internal::Variable>();
        KILN_CHECK(v && v->param.defined(), "autoschedule: a constant of kernel ", k.key(), " is not a parameter");
        const ir::Node& n = *k.nodes[size_t(a.node)].node;
        Internal::Parameter param = v->param;  // a handle: the estimate goes to the kernel's parameter
        param.set_estimate(a.kind == KernelArgument::Kind::Int64Const ? Expr(n.int_scalar) : Expr(n.scalar));
        break;
      }
      case KernelArgument::Kind::Output: break;
    }
  });
  // An output over the whole domain has its dims (innermost first); a reduction's, its kept ones.
  std::vector<int64_t> domain(k.domain.rbegin(), k.domain.rend()), kept;
  for (size_t d = k.domain.size(); d-- > 0;)
    if (k.kind != fusion::Kernel::Kind::Reduction || !k.reduced[d]) kept.push_back(k.domain[d]);
  for (Func f : p.outputs()) {
    const std::vector<int64_t>& extents = size_t(f.dimensions()) == domain.size() ? domain : kept;
    KILN_CHECK(size_t(f.dimensions()) == extents.size(), "autoschedule: an output of kernel ", k.key(), " has ",
               f.dimensions(), " dims");
    for (int d = 0; d < f.dimensions(); ++d) f.set_estimate(f.args()[size_t(d)], 0, int(extents[size_t(d)]));
  }
}

}  // namespace

void autoschedule(Lowering& L, Pipeline& p, const ScheduleChoice& choice) {
  // Loading a plugin registers its autoscheduler once per process; Adams2019 reads its search's
  // settings from the environment, so one autoscheduler runs at a time (compiling goes on in parallel).
  static std::mutex mutex;
  static std::vector<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (std::find(loaded.begin(), loaded.end(), choice.autoscheduler) == loaded.end()) {
    try {
      load_plugin(plugin_path(choice.autoscheduler));
    } catch (const Halide::Error& e) {
      throw Error(detail::concat("autoschedule: cannot load ", plugin_path(choice.autoscheduler), ": ", e.what()));
    }
    loaded.push_back(choice.autoscheduler);
  }
  set_estimates(L, p);
  if (choice.autoscheduler == "Adams2019") {
    setenv("HL_RANDOM_DROPOUT", std::to_string(choice.dropout).c_str(), 1);
    setenv("HL_SEED", std::to_string(choice.seed).c_str(), 1);
    setenv("HL_BEAM_SIZE", choice.dropout < 100 ? "1" : "32", 1);
  }
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const MachineParams machine(cores, 16 << 20, 40);  // Halide's generic machine, this one's cores
  // The plugins write their search's progress and warnings to stdout and stderr, a screenful per
  // kernel over `kiln tune`'s progress: both go to /dev/null while one runs.
  struct Quiet {
    int saved_out = dup(1), saved_err = dup(2);
    Quiet() {
      std::fflush(stdout);
      std::fflush(stderr);
      if (const int null = open("/dev/null", O_WRONLY); null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
        close(null);
      }
    }
    ~Quiet() {
      std::fflush(stdout);
      std::fflush(stderr);
      dup2(saved_out, 1);
      dup2(saved_err, 2);
      close(saved_out);
      close(saved_err);
    }
  };
  try {
    const Quiet quiet;
    p.auto_schedule(choice.autoscheduler, kernel_target(), machine);
  } catch (const Halide::Error& e) {
    throw Error(detail::concat("autoschedule: ", choice.autoscheduler, " failed: ", e.what()));
  }
}

}  // namespace kiln::codegen::halide
