// cuBLAS, opened with dlopen at first use (libcublas.so.13, never linked), for matmul and bmm on
// a CUDA device. Only the strided-batched GEMMs are used; their few declarations are here, so that
// kiln builds without the toolkit's headers. On the fake device (cuda_driver::use_fake_device) a
// test's table stands in for it (tests/cuda_fake_driver.h).
#pragma once
#include <string>

namespace kiln::codegen::cuda {

using cublasStatus = int;  // cublasStatus_t: 0 is CUBLAS_STATUS_SUCCESS
using cublasHandle = struct CublasContextOpaque*;
inline constexpr int kCublasOpN = 0;  // CUBLAS_OP_N
inline constexpr int kCublasOpT = 1;  // CUBLAS_OP_T

// The entry points, as cublas_api.h declares them (column-major; the stream is a CUstream).
struct CublasApi {
  cublasStatus (*cublasCreate_v2)(cublasHandle* handle);
  cublasStatus (*cublasSetStream_v2)(cublasHandle handle, void* stream);
  cublasStatus (*cublasSgemmStridedBatched)(cublasHandle handle, int transa, int transb, int m, int n, int k,
                                            const float* alpha, const float* a, int lda, long long stride_a,
                                            const float* b, int ldb, long long stride_b, const float* beta, float* c,
                                            int ldc, long long stride_c, int batch);
  cublasStatus (*cublasDgemmStridedBatched)(cublasHandle handle, int transa, int transb, int m, int n, int k,
                                            const double* alpha, const double* a, int lda, long long stride_a,
                                            const double* b, int ldb, long long stride_b, const double* beta, double* c,
                                            int ldc, long long stride_c, int batch);
};

// The fake device's table (null: none); read while the fake device is on.
void use_fake_cublas(const CublasApi* fake);

// cuBLAS's entry points (the fake's on the fake device); throws kiln::Error saying why where
// libcublas.so.13 cannot be opened.
const CublasApi& cublas();
// Whether cuBLAS can be used; else `reason` says why.
bool cublas_available(std::string* reason = nullptr);
// Throws kiln::Error naming the call unless `status` is success.
void cublas_check(cublasStatus status, const char* call);

}  // namespace kiln::codegen::cuda
