#include "codegen/cuda/cublas.h"

#include <atomic>

#include "runtime/cuda/driver.h"
#include "runtime/error.h"
#include "runtime/shared_library.h"

namespace kiln::codegen::cuda {
namespace {

struct Library {
  CublasApi api{};
  bool loaded = false;
  std::string reason;
};

const Library& library() {
  static const Library l = [] {
    Library l;
    SharedLibrary lib({"libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13"});
    if (!lib.opened()) {
      l.reason = "libcublas.so.13 could not be opened (" + lib.open_error() + ")";
      return l;
    }
    lib.bind(l.api.cublasCreate_v2, {"cublasCreate_v2"});
    lib.bind(l.api.cublasSetStream_v2, {"cublasSetStream_v2"});
    lib.bind(l.api.cublasSgemmStridedBatched, {"cublasSgemmStridedBatched"});
    lib.bind(l.api.cublasDgemmStridedBatched, {"cublasDgemmStridedBatched"});
    if (!lib.missing().empty()) {
      l.reason = "libcublas.so.13 lacks " + lib.missing();
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
