#include "codegen/cuda/nvrtc.h"

#include <algorithm>
#include <mutex>

#include "runtime/error.h"
#include "runtime/shared_library.h"

namespace kiln::codegen::cuda {
namespace {

// The few declarations of nvrtc.h that kiln uses, so that kiln builds without the toolkit's
// headers: NVRTC's C ABI is stable across versions (nvrtcResult 0 is success).
using nvrtcResult = int;
using nvrtcProgram = struct NvrtcProgramOpaque*;

struct Nvrtc {
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int*, int*);
  nvrtcResult (*GetNumSupportedArchs)(int*);
  nvrtcResult (*GetSupportedArchs)(int*);
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  nvrtcResult (*DestroyProgram)(nvrtcProgram*);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetPTX)(nvrtcProgram, char*);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*);
  bool loaded = false;
  std::string reason;  // why not loaded
};

const Nvrtc& nvrtc() {
  static Nvrtc n = [] {
    Nvrtc n{};
    // By its soname (LD_LIBRARY_PATH, the system's paths), then where the toolkit installs.
    SharedLibrary lib({"libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13"});
    if (!lib.opened()) {
      n.reason = "libnvrtc.so.13 could not be opened (" + lib.open_error() +
                 "): install the CUDA 13 toolkit or add its lib64 folder to LD_LIBRARY_PATH";
      return n;
    }
    lib.bind(n.GetErrorString, {"nvrtcGetErrorString"});
    lib.bind(n.Version, {"nvrtcVersion"});
    lib.bind(n.GetNumSupportedArchs, {"nvrtcGetNumSupportedArchs"});
    lib.bind(n.GetSupportedArchs, {"nvrtcGetSupportedArchs"});
    lib.bind(n.CreateProgram, {"nvrtcCreateProgram"});
    lib.bind(n.DestroyProgram, {"nvrtcDestroyProgram"});
    lib.bind(n.CompileProgram, {"nvrtcCompileProgram"});
    lib.bind(n.GetPTXSize, {"nvrtcGetPTXSize"});
    lib.bind(n.GetPTX, {"nvrtcGetPTX"});
    lib.bind(n.GetCUBINSize, {"nvrtcGetCUBINSize"});
    lib.bind(n.GetCUBIN, {"nvrtcGetCUBIN"});
    lib.bind(n.GetProgramLogSize, {"nvrtcGetProgramLogSize"});
    lib.bind(n.GetProgramLog, {"nvrtcGetProgramLog"});
    if (!lib.missing().empty()) {
      n.reason = "libnvrtc.so.13 lacks " + lib.missing();
      return n;
    }
    n.loaded = true;
    return n;
  }();
  return n;
}

const Nvrtc& loaded_nvrtc() {
  const Nvrtc& n = nvrtc();
  KILN_CHECK(n.loaded, "cuda: NVRTC is unavailable: ", n.reason);
  return n;
}

void check(const Nvrtc& n, nvrtcResult r, const char* what) {
  KILN_CHECK(r == 0, "cuda: ", what, " failed: ", n.GetErrorString(r));
}

// Destroys the program however compile() leaves.
struct Program {
  const Nvrtc& n;
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) n.DestroyProgram(&p);
  }
  std::string log() const {
    size_t size = 0;
    if (n.GetProgramLogSize(p, &size) != 0 || size <= 1) return "";
    std::string text(size, '\0');
    if (n.GetProgramLog(p, text.data()) != 0) return "";
    text.resize(size - 1);  // the terminating NUL
    return text;
  }
};

}  // namespace

bool nvrtc_available(std::string* reason) {
  const Nvrtc& n = nvrtc();
  if (!n.loaded && reason) *reason = n.reason;
  return n.loaded;
}

std::string nvrtc_version() {
  const Nvrtc& n = nvrtc();
  int major = 0, minor = 0;
  if (!n.loaded || n.Version(&major, &minor) != 0) return "";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> nvrtc_supported_archs() {
  const Nvrtc& n = nvrtc();
  int count = 0;
  if (!n.loaded || n.GetNumSupportedArchs(&count) != 0 || count <= 0) return {};
  std::vector<int> archs(size_t(count), 0);
  if (n.GetSupportedArchs(archs.data()) != 0) return {};
  std::sort(archs.begin(), archs.end());
  return archs;
}

std::string nvrtc_summary() {
  std::string reason;
  if (!nvrtc_available(&reason)) return "NVRTC unavailable: " + reason;
  std::string line = "NVRTC " + nvrtc_version() + ", compiles for";
  for (int arch : nvrtc_supported_archs()) line += " sm_" + std::to_string(arch);
  return line;
}

// C++17 for the special functions' templates; -default-device makes functions without an
// execution space (tracer/special_functions.h's, written for the host too) device functions.
// IEEE division and square root and no flush to zero, as the CPU backends; products may contract
// into fma (DESIGN.md: numerics).
const std::vector<std::string>& nvrtc_options() {
  static const std::vector<std::string> options{"--std=c++17",     "-default-device",  "--ftz=false",
                                                "--prec-div=true", "--prec-sqrt=true", "--fmad=true"};
  return options;
}

CompiledCuda nvrtc_compile(const std::string& source, const std::string& program_name, int arch, const std::string& key,
                           const std::vector<std::string>& extra_options) {
  const Nvrtc& n = loaded_nvrtc();
  const std::vector<int> archs = nvrtc_supported_archs();
  KILN_CHECK(!archs.empty(), "cuda: NVRTC lists no supported architectures");
  CompiledCuda out;
  // Newer than NVRTC knows: PTX for its newest architecture, which the driver compiles further.
  out.ptx_only = arch > archs.back();
  out.arch = out.ptx_only ? "compute_" + std::to_string(archs.back()) : "sm_" + std::to_string(arch);
  std::vector<std::string> options = nvrtc_options();
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  options.push_back("--gpu-architecture=" + out.arch);
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());

  Program prog{n};
  check(n, n.CreateProgram(&prog.p, source.c_str(), program_name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  const nvrtcResult r = n.CompileProgram(prog.p, int(argv.size()), argv.data());
  out.log = prog.log();
  KILN_CHECK(r == 0, "cuda: NVRTC could not compile kernel ", program_name, " (", n.GetErrorString(r), ") for key ",
             key, ":\n", out.log);
  size_t size = 0;
  check(n, n.GetPTXSize(prog.p, &size), "nvrtcGetPTXSize");
  out.ptx.resize(size);
  check(n, n.GetPTX(prog.p, out.ptx.data()), "nvrtcGetPTX");
  if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  if (out.ptx_only) {
    out.image = out.ptx;
    return out;
  }
  check(n, n.GetCUBINSize(prog.p, &size), "nvrtcGetCUBINSize");
  out.image.resize(size);
  check(n, n.GetCUBIN(prog.p, out.image.data()), "nvrtcGetCUBIN");
  return out;
}

}  // namespace kiln::codegen::cuda
