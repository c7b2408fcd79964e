// NVRTC, CUDA's runtime compiler, opened with dlopen at first use (libnvrtc.so.13, never linked):
// kiln builds and runs where CUDA is absent, and then says why NVRTC is unavailable. NVRTC compiles
// without a driver or a GPU, so code generation is tested on any machine with the toolkit.
#pragma once
#include <string>
#include <vector>

namespace kiln::codegen::cuda {

// Whether libnvrtc could be opened and every function kiln calls resolved; if not, `reason`
// (when given) says why.
bool nvrtc_available(std::string* reason = nullptr);

// NVRTC's version, e.g. "13.0"; empty when unavailable.
std::string nvrtc_version();

// The virtual architectures NVRTC compiles for (75 for sm_75, ...), ascending; empty when unavailable.
std::vector<int> nvrtc_supported_archs();

// One line for `kiln info`: "NVRTC 13.0, sm_75 sm_80 ... sm_121", or why NVRTC is unavailable.
std::string nvrtc_summary();

// The options every kernel is compiled with (besides the architecture): part of the cache key.
const std::vector<std::string>& nvrtc_options();

struct CompiledCuda {
  std::string image;      // a cubin, or PTX text when `ptx_only`
  bool ptx_only = false;  // true when the requested architecture is newer than NVRTC's newest
  std::string arch;       // what it was compiled for: "sm_90", or "compute_120" for PTX
  std::string ptx;        // the PTX NVRTC made on the way (also for a cubin)
  std::string log;        // NVRTC's warnings, and ptxas's report with --ptxas-options=-v
};

// Compiles CUDA C `source` for `sm_<arch>` (e.g. 90): a cubin, or PTX for the newest architecture
// NVRTC supports when `arch` is newer than that (the driver compiles it at load). Throws
// kiln::Error with `key` and NVRTC's log if the source does not compile (a code generation bug),
// and when NVRTC is unavailable. `extra_options` follow nvrtc_options().
CompiledCuda nvrtc_compile(const std::string& source, const std::string& program_name, int arch, const std::string& key,
                           const std::vector<std::string>& extra_options = {});

}  // namespace kiln::codegen::cuda
