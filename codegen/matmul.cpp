#include "codegen/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/parallel.h"

namespace kiln::codegen {
namespace {

// One operand as BLAS sees it: a pointer per batch, a transpose flag and a leading dimension.
template <typename T>
struct Operand {
  std::vector<T> packed;  // used when the view's layout is not one BLAS takes
  const T* base = nullptr;
  int64_t batch_stride = 0, ld = 0;
  bool transposed = false;

  Operand(const ir::Operand& o) {
    const auto& s = o.view.sizes;
    auto st = o.view.strides;
    const int64_t rows = s[1], cols = s[2];
    // Strides of size-1 dims are arbitrary: give them the value that makes the layout standard.
    if (cols == 1) st[2] = 1;
    if (rows == 1) st[1] = cols;
    const T* data = static_cast<const T*>(o.node->result->data()) + o.view.offset;
    if (st[2] == 1 && st[1] >= std::max<int64_t>(cols, 1)) {
      base = data, ld = st[1], batch_stride = st[0];
    } else if (st[1] == 1 && st[2] >= std::max<int64_t>(rows, 1)) {
      base = data, ld = st[2], batch_stride = st[0], transposed = true;
    } else {  // pack to contiguous [B, rows, cols]
      packed.resize(s[0] * rows * cols);
      for (int64_t b = 0; b < s[0]; ++b)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j)
            packed[(b * rows + i) * cols + j] = data[b * st[0] + i * st[1] + j * st[2]];
      base = packed.data(), ld = std::max<int64_t>(cols, 1), batch_stride = rows * cols;
    }
  }
};

// C += op(A) op(B).
void accumulate(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b,
                int64_t ldb, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(N), int(K),
              1.0f, a, int(lda), b, int(ldb), 1.0f, c, int(ldc));
}
void accumulate(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* a, int64_t lda, const double* b,
                int64_t ldb, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(N), int(K),
              1.0, a, int(lda), b, int(ldb), 1.0, c, int(ldc));
}
// C = op(A) op(B): C zeroed by memset, then accumulated into. Given beta = 0, OpenBLAS zeroes C
// itself, slowly (sgemm_beta_ZEN: 6.5% of MlpStep's samples; 5-7% of a large product alone, half
// of one with K = 10, where a memset of the same C takes a fifth to a tenth of that time).
template <typename T>
void blas(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
          int64_t ldc) {
  if (ldc == N)
    std::memset(c, 0, size_t(M * N) * sizeof(T));
  else
    for (int64_t i = 0; i < M; ++i) std::memset(c + i * ldc, 0, size_t(N) * sizeof(T));
  accumulate(ta, tb, M, N, K, a, lda, b, ldb, c, ldc);
}

// C = op(A) op(B), row-major, split into pieces of rows of C (or of columns, when C has few rows)
// run on kiln's threads (runtime/parallel.h); one piece per thread, each a single-threaded
// BLAS call (OpenBLAS's own pool, spinning for the same cores between every GEMM and the kernels
// around it, is never started: handing MlpStep's GEMMs to it measured 8.0-8.5 ms a step against
// 7.2-8.7). Products under 2 MFLOP are one call. OpenBLAS is slow on a dimension of 10 (an MLP's
// last layer: 2.6 MFLOP in 75-90 us), and two pieces of those halve it (40-60 us).
template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* a, int64_t lda, const T* b, int64_t ldb, T* c) {
  static const bool single_threaded_blas = (openblas_set_num_threads(1), true);
  (void)single_threaded_blas;
  constexpr int64_t kMinFlopsPerPiece = int64_t(1) << 20;
  const int64_t by_size = std::max<int64_t>(1, 2 * M * N * K / kMinFlopsPerPiece);
  const bool split_rows = M >= N;
  const int64_t extent = split_rows ? M : N;
  // Pieces of at least 16 rows (columns), at most by_size of them.
  parallel_for_ranges(extent, std::max<int64_t>(16, (extent + by_size - 1) / by_size), [&](int64_t lo, int64_t hi) {
    if (split_rows)  // rows lo..hi of op(A) and of C
      blas(ta, tb, hi - lo, N, K, a + (ta ? lo : lo * lda), lda, b, ldb, c + lo * N, N);
    else  // columns lo..hi of op(B) and of C
      blas(ta, tb, M, hi - lo, K, a, lda, b + (tb ? lo * ldb : lo), ldb, c + lo, N);
  });
}

template <typename T>
void run(ir::Node& n) {
  Operand<T> a(n.inputs[0]), b(n.inputs[1]);
  const int64_t B = n.shape[0], M = n.shape[1], N = n.shape[2], K = n.inputs[0].view.sizes[2];
  n.result = make_buffer(B * M * N * sizeof(T));
  T* out = n.result->as<T>();
  if (K == 0 || M == 0 || N == 0) {
    std::memset(out, 0, B * M * N * sizeof(T));
    return;
  }
  for (int64_t i = 0; i < B; ++i)
    gemm(a.transposed, b.transposed, M, N, K, a.base + i * a.batch_stride, a.ld, b.base + i * b.batch_stride, b.ld,
         out + i * M * N);
}

}  // namespace

bool blas_matmul(ir::Node& n) {
  if (n.dtype == kFloat) return run<float>(n), true;
  if (n.dtype == kDouble) return run<double>(n), true;
  return false;
}

}  // namespace kiln::codegen
