#include "codegen/cuda/cublas.h"

#include <dlfcn.h>

#include <atomic>

#include "runtime/cuda/driver.h"
#include "runtime/error.h"

namespace kiln::codegen::cuda {
namespace {

struct Library {
  CublasApi api{};
  bool loaded = false;
  std::string reason;
};

template <typename F>
void resolve(void* lib, const char* name, F*& f, std::string& missing) {
  f = reinterpret_cast<F*>(dlsym(lib, name));
  if (!f) missing += missing.empty() ? name : std::string(", ") + name;
}

const Library& library() {
  static const Library l = [] {
    Library l;
    void* lib = nullptr;
    for (const char* path : {"libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13"})
      if ((lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
      const char* err = dlerror();
      l.reason = std::string("libcublas.so.13 could not be opened (") + (err ? err : "not found") + ")";
      return l;
    }
    std::string missing;
    resolve(lib, "cublasCreate_v2", l.api.cublasCreate_v2, missing);
    resolve(lib, "cublasSetStream_v2", l.api.cublasSetStream_v2, missing);
    resolve(lib, "cublasSgemmStridedBatched", l.api.cublasSgemmStridedBatched, missing);
    resolve(lib, "cublasDgemmStridedBatched", l.api.cublasDgemmStridedBatched, missing);
    if (!missing.empty()) {
      l.reason = "libcublas.so.13 lacks " + missing;
      return l;
    }
    l.loaded = true;
    return l;
  }();
  return l;
}

std::atomic<const CublasApi*> g_fake{nullptr};

}  // namespace

void use_fake_cublas(const CublasApi* fake) { g_fake = fake; }

bool cublas_available(std::string* reason) {
  if (cuda_driver::fake_device() && g_fake.load()) return true;
  if (!library().loaded && reason) *reason = library().reason;
  return library().loaded;
}

const CublasApi& cublas() {
  if (cuda_driver::fake_device()) {
    const CublasApi* fake = g_fake;
    KILN_CHECK(fake, "cuBLAS: the fake CUDA device has no cuBLAS table (use_fake_cublas)");
    return *fake;
  }
  KILN_CHECK(library().loaded, "cuBLAS is not available: ", library().reason);
  return library().api;
}

void cublas_check(cublasStatus status, const char* call) {
  KILN_CHECK(status == 0, call, " failed: cublasStatus_t ", status);
}

}  // namespace kiln::codegen::cuda
