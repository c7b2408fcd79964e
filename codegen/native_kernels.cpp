#include "codegen/native_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "codegen/native_loops.h"
#include "runtime/parallel.h"

namespace kiln::codegen::native {
namespace {

// --- layer norm ---

template <typename T>
struct LayerNormArgs {
  const T *x, *w, *b, *dy, *mean, *rstd;
  T *y, *mean_out, *rstd_out, *dx;
  double* partial;  // the backward's dw and db sums, 2 * cols per task
  int64_t cols;
  double eps;
};

template <typename T>
KILN_CLONES void layer_norm_rows(const LayerNormArgs<T>& a, int64_t r0, int64_t r1) {
  const int64_t n = a.cols;
  for (int64_t r = r0; r < r1; ++r) {
    const T* __restrict__ x = a.x + r * n;
    T* __restrict__ y = a.y + r * n;
    const T mean = T(blocked_sum<T>(n, [&](int64_t i) { return x[i]; }) / double(n));
    const double var = blocked_sum<T>(n,
                                      [&](int64_t i) {
                                        const T d = x[i] - mean;
                                        return d * d;
                                      }) /
                       double(n);
    const T rstd = T(1 / std::sqrt(var + a.eps));
    a.mean_out[r] = mean;
    a.rstd_out[r] = rstd;
    const T* __restrict__ w = a.w;
    const T* __restrict__ b = a.b;
    if (w && b)
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * w[i] + b[i];
    else if (w)
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * w[i];
    else if (b)
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd + b[i];
    else
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd;
  }
}

// dw and db sum over rows in T, 32 rows at a time (`block`: 2 * cols), then into the task's
// float64 sums.
constexpr int64_t kRowBlock = 32;

template <typename T>
KILN_CLONES void layer_norm_backward_rows(const LayerNormArgs<T>& a, T* __restrict__ block, int64_t task, int64_t r0,
                                          int64_t r1) {
  const int64_t n = a.cols;
  double* __restrict__ dw = a.partial ? a.partial + 2 * n * task : nullptr;
  T* __restrict__ block_dw = block;
  T* __restrict__ block_db = block ? block + n : nullptr;
  const T* __restrict__ w = a.w;
  for (int64_t r = r0; r < r1; ++r) {
    const T* __restrict__ x = a.x + r * n;
    const T* __restrict__ dy = a.dy + r * n;
    const T mean = a.mean[r], rstd = a.rstd[r];
    if (dw) {
      for (int64_t i = 0; i < n; ++i) {
        const T g = dy[i];
        block_dw[i] += g * ((x[i] - mean) * rstd);
        block_db[i] += g;
      }
      if ((r - r0) % kRowBlock == kRowBlock - 1 || r == r1 - 1)
        for (int64_t i = 0; i < 2 * n; ++i) {
          dw[i] += double(block[i]);
          block[i] = T(0);
        }
    }
    if (!a.dx) continue;
    T* __restrict__ dx = a.dx + r * n;
    double sum_g, sum_gx;
    if (w) {
      sum_g = blocked_sum<T>(n, [&](int64_t i) { return dy[i] * w[i]; });
      sum_gx = blocked_sum<T>(n, [&](int64_t i) { return dy[i] * w[i] * ((x[i] - mean) * rstd); });
    } else {
      sum_g = blocked_sum<T>(n, [&](int64_t i) { return dy[i]; });
      sum_gx = blocked_sum<T>(n, [&](int64_t i) { return dy[i] * ((x[i] - mean) * rstd); });
    }
    const T mean_g = T(sum_g / double(n)), mean_gx = T(sum_gx / double(n));
    if (w)
      for (int64_t i = 0; i < n; ++i) dx[i] = rstd * (dy[i] * w[i] - mean_g - (x[i] - mean) * rstd * mean_gx);
    else
      for (int64_t i = 0; i < n; ++i) dx[i] = rstd * (dy[i] - mean_g - (x[i] - mean) * rstd * mean_gx);
  }
}

// --- batch norm ---

template <typename T>
struct BatchNormArgs {
  const T *x, *w, *b, *dy, *mean, *rstd;
  T *y, *mean_out, *rstd_out, *dx, *dw, *db;
  double* var;
  int64_t n, c, inner;
  double eps;
};

// The sum of f over channel k's values: n planes of `inner` contiguous values.
template <typename T, typename F>
[[gnu::always_inline]] inline double channel_sum(const BatchNormArgs<T>& a, int64_t k, F f) {
  double s = 0;
  for (int64_t i = 0; i < a.n; ++i) {
    const int64_t base = (i * a.c + k) * a.inner;
    s += blocked_sum<T>(a.inner, [&](int64_t j) { return f(base + j); });
  }
  return s;
}

template <typename T>
KILN_CLONES void batch_norm_channels(const BatchNormArgs<T>& a, int64_t k0, int64_t k1) {
  const double count = double(a.n * a.inner);
  const T* __restrict__ x = a.x;
  for (int64_t k = k0; k < k1; ++k) {
    const T mean = T(channel_sum(a, k, [&](int64_t i) { return x[i]; }) / count);
    const double var = channel_sum(a, k,
                                   [&](int64_t i) {
                                     const T d = x[i] - mean;
                                     return d * d;
                                   }) /
                       count;
    const T rstd = T(1 / std::sqrt(var + a.eps));
    a.mean_out[k] = mean;
    a.rstd_out[k] = rstd;
    a.var[k] = var;
    const T scale = a.w ? a.w[k] * rstd : rstd, shift = a.b ? a.b[k] : T(0);
    for (int64_t i = 0; i < a.n; ++i) {
      const T* __restrict__ xi = x + (i * a.c + k) * a.inner;
      T* __restrict__ yi = a.y + (i * a.c + k) * a.inner;
      for (int64_t j = 0; j < a.inner; ++j) yi[j] = (xi[j] - mean) * scale + shift;
    }
  }
}

template <typename T>
KILN_CLONES void batch_norm_backward_channels(const BatchNormArgs<T>& a, int64_t k0, int64_t k1) {
  const double count = double(a.n * a.inner);
  const T* __restrict__ x = a.x;
  const T* __restrict__ dy = a.dy;
  for (int64_t k = k0; k < k1; ++k) {
    const T mean = a.mean[k], rstd = a.rstd[k];
    const double sum_dy = channel_sum(a, k, [&](int64_t i) { return dy[i]; });
    const double sum_dy_xhat = channel_sum(a, k, [&](int64_t i) { return dy[i] * ((x[i] - mean) * rstd); });
    if (a.dw) a.dw[k] = T(sum_dy_xhat);
    if (a.db) a.db[k] = T(sum_dy);
    if (!a.dx) continue;
    const T w = a.w ? a.w[k] : T(1), mean_dy = T(sum_dy / count), mean_dy_xhat = T(sum_dy_xhat / count);
    for (int64_t i = 0; i < a.n; ++i) {
      const int64_t base = (i * a.c + k) * a.inner;
      const T* __restrict__ xi = x + base;
      const T* __restrict__ dyi = dy + base;
      T* __restrict__ dxi = a.dx + base;
      for (int64_t j = 0; j < a.inner; ++j)
        dxi[j] = w * rstd * (dyi[j] - mean_dy - (xi[j] - mean) * rstd * mean_dy_xhat);
    }
  }
}

// --- softmax and cross-entropy ---

template <typename T>
KILN_CLONES void softmax_rows(const T* x_all, T* y_all, int64_t n, bool log, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* __restrict__ x = x_all + r * n;
    T* __restrict__ y = y_all + r * n;
    const T m = row_max(x, n);
    for (int64_t i = 0; i < n; ++i) y[i] = vexp(x[i] - m);
    const double s = blocked_sum<T>(n, [&](int64_t i) { return y[i]; });
    if (log) {
      const T log_sum = T(std::log(s));
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_sum;
    } else {
      const T scale = T(1 / s);
      for (int64_t i = 0; i < n; ++i) y[i] *= scale;
    }
  }
}

template <typename T>
KILN_CLONES void softmax_backward_rows(const T* dy_all, const T* y_all, T* dx_all, int64_t n, bool log, int64_t r0,
                                       int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* __restrict__ dy = dy_all + r * n;
    const T* __restrict__ y = y_all + r * n;
    T* __restrict__ dx = dx_all + r * n;
    if (log) {
      const T s = T(blocked_sum<T>(n, [&](int64_t i) { return dy[i]; }));
      for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] - vexp(y[i]) * s;
    } else {
      const T s = T(blocked_sum<T>(n, [&](int64_t i) { return dy[i] * y[i]; }));
      for (int64_t i = 0; i < n; ++i) dx[i] = y[i] * (dy[i] - s);
    }
  }
}

// Along the middle axis of [outer, n, inner]: items of up to kColumns adjacent columns of one
// outer slice, each walked row by row (contiguous runs), with per-column statistics.
constexpr int64_t kColumns = 256;

template <typename T>
KILN_CLONES void softmax_columns(const T* x_all, T* y_all, int64_t n, int64_t inner, bool log, int64_t i0, int64_t i1) {
  const int64_t blocks = (inner + kColumns - 1) / kColumns;
  T m[kColumns], scale[kColumns];
  double s[kColumns];
  for (int64_t item = i0; item < i1; ++item) {
    const int64_t c0 = item % blocks * kColumns, w = std::min(kColumns, inner - c0);
    const T* x = x_all + item / blocks * n * inner + c0;
    T* y = y_all + item / blocks * n * inner + c0;
    std::fill(m, m + w, T(-INFINITY));
    std::fill(s, s + w, 0.0);
    for (int64_t k = 0; k < n; ++k) {
      const T* __restrict__ xk = x + k * inner;
      for (int64_t j = 0; j < w; ++j) m[j] = xk[j] > m[j] ? xk[j] : m[j];
    }
    for (int64_t k = 0; k < n; ++k) {
      const T* __restrict__ xk = x + k * inner;
      T* __restrict__ yk = y + k * inner;
      for (int64_t j = 0; j < w; ++j) {
        yk[j] = vexp(xk[j] - m[j]);
        s[j] += double(yk[j]);
      }
    }
    for (int64_t j = 0; j < w; ++j) scale[j] = log ? T(std::log(s[j])) : T(1 / s[j]);
    for (int64_t k = 0; k < n; ++k) {
      const T* __restrict__ xk = x + k * inner;
      T* __restrict__ yk = y + k * inner;
      if (log)
        for (int64_t j = 0; j < w; ++j) yk[j] = (xk[j] - m[j]) - scale[j];
      else
        for (int64_t j = 0; j < w; ++j) yk[j] *= scale[j];
    }
  }
}

template <typename T>
KILN_CLONES void softmax_backward_columns(const T* dy_all, const T* y_all, T* dx_all, int64_t n, int64_t inner,
                                          bool log, int64_t i0, int64_t i1) {
  const int64_t blocks = (inner + kColumns - 1) / kColumns;
  T sum[kColumns];
  double s[kColumns];
  for (int64_t item = i0; item < i1; ++item) {
    const int64_t c0 = item % blocks * kColumns, w = std::min(kColumns, inner - c0);
    const int64_t base = item / blocks * n * inner + c0;
    std::fill(s, s + w, 0.0);
    for (int64_t k = 0; k < n; ++k) {
      const T* __restrict__ dy = dy_all + base + k * inner;
      const T* __restrict__ y = y_all + base + k * inner;
      if (log)
        for (int64_t j = 0; j < w; ++j) s[j] += double(dy[j]);
      else
        for (int64_t j = 0; j < w; ++j) s[j] += double(dy[j] * y[j]);
    }
    for (int64_t j = 0; j < w; ++j) sum[j] = T(s[j]);
    for (int64_t k = 0; k < n; ++k) {
      const T* __restrict__ dy = dy_all + base + k * inner;
      const T* __restrict__ y = y_all + base + k * inner;
      T* __restrict__ dx = dx_all + base + k * inner;
      if (log)
        for (int64_t j = 0; j < w; ++j) dx[j] = dy[j] - vexp(y[j]) * sum[j];
      else
        for (int64_t j = 0; j < w; ++j) dx[j] = y[j] * (dy[j] - sum[j]);
    }
  }
}

template <typename T>
KILN_CLONES void cross_entropy_rows(const T* x_all, const int64_t* target, T* loss, double* lse, int64_t n,
                                    int64_t ignore_index, T* __restrict__ e, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* __restrict__ x = x_all + r * n;
    const T m = row_max(x, n);
    for (int64_t i = 0; i < n; ++i) e[i] = vexp(x[i] - m);
    const double log_sum = std::log(blocked_sum<T>(n, [&](int64_t i) { return e[i]; }));
    lse[r] = double(m) + log_sum;
    // Rounded as libtorch's log_softmax: (x[t] - max) - log(sum).
    loss[r] = target[r] == ignore_index ? T(0) : -((x[target[r]] - m) - T(log_sum));
  }
}

template <typename T>
KILN_CLONES void cross_entropy_backward_rows(const T* x_all, const int64_t* target, const double* lse,
                                             const double* scale, T* dx_all, int64_t n, int64_t ignore_index,
                                             int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* __restrict__ x = x_all + r * n;
    T* __restrict__ dx = dx_all + r * n;
    if (target[r] == ignore_index) {
      std::fill(dx, dx + n, T(0));
      continue;
    }
    const T s = T(scale[r]), l = T(lse[r]);
    for (int64_t i = 0; i < n; ++i) dx[i] = s * vexp(x[i] - l);
    dx[target[r]] -= s;
  }
}

// --- GELU ---

// As the composite (frontend/elementwise.cpp): x * (erf(x / sqrt(2)) * 0.5 + 0.5), or
// x * 0.5 * (tanh(k * (x + 0.044715 x^3)) + 1) with k = sqrt(2 / pi).
constexpr double kGeluTanhScale = 0.7978845608028654, kGeluCubic = 0.044715;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

template <typename T>
KILN_CLONES void gelu_range(const T* __restrict__ x, T* __restrict__ y, bool tanh_form, int64_t i0, int64_t i1) {
  const T half = T(0.5), k = T(kGeluTanhScale), c = T(kGeluCubic), r = T(M_SQRT1_2);
  if (tanh_form)
    for (int64_t i = i0; i < i1; ++i) y[i] = x[i] * half * (vtanh((x[i] + x[i] * x[i] * x[i] * c) * k) + T(1));
  else
    for (int64_t i = i0; i < i1; ++i) y[i] = x[i] * (verf(x[i] * r) * half + half);
}

template <typename T>
KILN_CLONES void gelu_backward_range(const T* __restrict__ dy, const T* __restrict__ x, T* __restrict__ dx,
                                     bool tanh_form, int64_t i0, int64_t i1) {
  const T half = T(0.5), k = T(kGeluTanhScale), c = T(kGeluCubic), r = T(M_SQRT1_2), p = T(kInvSqrt2Pi);
  if (tanh_form)
    for (int64_t i = i0; i < i1; ++i) {
      const T v = x[i], t = vtanh((v + v * v * v * c) * k);
      dx[i] = dy[i] * (half * (t + T(1)) + half * v * (T(1) - t * t) * k * (T(1) + T(3) * c * v * v));
    }
  else
    for (int64_t i = i0; i < i1; ++i) {
      const T v = x[i];
      dx[i] = dy[i] * (verf(v * r) * half + half + v * vexp(-half * v * v) * p);
    }
}

// --- optimizers ---

template <typename T, bool kDecay, bool kWeightDecay>
KILN_CLONES void adam_range(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m, T* __restrict__ v,
                            const AdamArgs& a, int64_t i0, int64_t i1) {
  const T decay = T(a.decay), weight_decay = T(a.weight_decay), beta1 = T(a.beta1), beta2 = T(a.beta2);
  const T one_minus_beta1 = T(1 - a.beta1), one_minus_beta2 = T(1 - a.beta2), eps = T(a.eps);
  const T correction = T(a.sqrt_bias_correction2), minus_step = T(-a.step_size);
  for (int64_t i = i0; i < i1; ++i) {
    T pi = p[i];
    if constexpr (kDecay) pi = pi * decay;
    T gi = g[i];
    if constexpr (kWeightDecay) gi = gi + pi * weight_decay;
    const T mi = m[i] * beta1 + gi * one_minus_beta1;
    const T vi = v[i] * beta2 + gi * gi * one_minus_beta2;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi + minus_step * (mi / (std::sqrt(vi) / correction + eps));
  }
}

template <typename T, bool kMomentum>
KILN_CLONES void sgd_range(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf, const SgdArgs& a,
                           int64_t i0, int64_t i1) {
  const T weight_decay = T(a.weight_decay), momentum = T(a.momentum), keep = T(1 - a.dampening), minus_lr = T(-a.lr);
  for (int64_t i = i0; i < i1; ++i) {
    T d = g[i];
    if (a.weight_decay != 0) d = d + p[i] * weight_decay;
    if constexpr (kMomentum) {
      const T b = buf[i] * momentum + d * keep;
      buf[i] = b;
      d = a.nesterov ? d + b * momentum : b;
    }
    p[i] = p[i] + d * minus_lr;
  }
}

}  // namespace

template <typename T>
void layer_norm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t rows, int64_t cols,
                        double eps) {
  LayerNormArgs<T> a{x, w, b, nullptr, nullptr, nullptr, y, mean, rstd, nullptr, nullptr, cols, eps};
  parallel_for_ranges(rows, row_grain(cols), [&](int64_t r0, int64_t r1) { layer_norm_rows(a, r0, r1); });
}

template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* mean, const T* rstd, const T* w, T* dx, T* dw, T* db,
                         int64_t rows, int64_t cols) {
  const int64_t grain = row_grain(cols);
  std::vector<double> partial(dw || db ? size_t(2 * cols * parallel_ranges(rows, grain)) : 0);
  LayerNormArgs<T> a{
      x,    w, nullptr, dy, mean, rstd, nullptr, nullptr, nullptr, dx, partial.empty() ? nullptr : partial.data(),
      cols, 0};
  parallel_for_ranges(rows, grain, [&](int64_t task, int64_t r0, int64_t r1) {
    std::vector<T> block(partial.empty() ? 0 : static_cast<size_t>(2 * cols));
    layer_norm_backward_rows(a, block.empty() ? nullptr : block.data(), task, r0, r1);
  });
  if (partial.empty()) return;
  const int64_t tasks = int64_t(partial.size()) / (2 * cols);
  for (int64_t i = 0; i < cols; ++i) {
    double sw = 0, sb = 0;
    for (int64_t t = 0; t < tasks; ++t) {
      sw += partial[size_t(2 * cols * t + i)];
      sb += partial[size_t(2 * cols * t + cols + i)];
    }
    if (dw) dw[i] = T(sw);
    if (db) db[i] = T(sb);
  }
}

template <typename T>
void batch_norm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, double* var, int64_t n, int64_t c,
                        int64_t inner, double eps) {
  BatchNormArgs<T> a{x,       w,       b,       nullptr, nullptr, nullptr, y,     mean, rstd,
                     nullptr, nullptr, nullptr, var,     n,       c,       inner, eps};
  parallel_for_ranges(c, row_grain(n * inner), [&](int64_t k0, int64_t k1) { batch_norm_channels(a, k0, k1); });
}

template <typename T>
void batch_norm_backward(const T* dy, const T* x, const T* mean, const T* rstd, const T* w, T* dx, T* dw, T* db,
                         int64_t n, int64_t c, int64_t inner) {
  BatchNormArgs<T> a{x, w, nullptr, dy, mean, rstd, nullptr, nullptr, nullptr, dx, dw, db, nullptr, n, c, inner, 0};
  parallel_for_ranges(c, row_grain(n * inner),
                      [&](int64_t k0, int64_t k1) { batch_norm_backward_channels(a, k0, k1); });
}

template <typename T>
void softmax_forward(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (inner == 1)
    return parallel_for_ranges(outer, row_grain(n),
                               [&](int64_t r0, int64_t r1) { softmax_rows(x, y, n, log, r0, r1); });
  const int64_t items = outer * ((inner + kColumns - 1) / kColumns);
  parallel_for_ranges(items, row_grain(n * std::min(inner, kColumns)),
                      [&](int64_t i0, int64_t i1) { softmax_columns(x, y, n, inner, log, i0, i1); });
}

template <typename T>
void softmax_backward(const T* dy, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (inner == 1)
    return parallel_for_ranges(outer, row_grain(n),
                               [&](int64_t r0, int64_t r1) { softmax_backward_rows(dy, y, dx, n, log, r0, r1); });
  const int64_t items = outer * ((inner + kColumns - 1) / kColumns);
  parallel_for_ranges(items, row_grain(n * std::min(inner, kColumns)),
                      [&](int64_t i0, int64_t i1) { softmax_backward_columns(dy, y, dx, n, inner, log, i0, i1); });
}

template <typename T>
void cross_entropy_forward(const T* x, const int64_t* target, T* loss, double* lse, int64_t rows, int64_t cols,
                           int64_t ignore_index) {
  parallel_for_ranges(rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    std::vector<T> e(static_cast<size_t>(cols));  // a row's exponentials
    cross_entropy_rows(x, target, loss, lse, cols, ignore_index, e.data(), r0, r1);
  });
}

template <typename T>
void cross_entropy_backward(const T* x, const int64_t* target, const double* lse, const double* scale, T* dx,
                            int64_t rows, int64_t cols, int64_t ignore_index) {
  parallel_for_ranges(rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    cross_entropy_backward_rows(x, target, lse, scale, dx, cols, ignore_index, r0, r1);
  });
}

template <typename T>
void gelu_forward(const T* x, T* y, int64_t n, bool tanh_form) {
  parallel_for_ranges(n, kGrain, [&](int64_t i0, int64_t i1) { gelu_range(x, y, tanh_form, i0, i1); });
}

template <typename T>
void gelu_backward(const T* dy, const T* x, T* dx, int64_t n, bool tanh_form) {
  parallel_for_ranges(n, kGrain, [&](int64_t i0, int64_t i1) { gelu_backward_range(dy, x, dx, tanh_form, i0, i1); });
}

template <typename T>
void adam_step(T* p, const T* g, T* m, T* v, int64_t n, const AdamArgs& a) {
  const bool decay = a.decay != 1, weight_decay = a.weight_decay != 0;
  parallel_for_ranges(n, kGrain, [&](int64_t i0, int64_t i1) {
    if (decay && weight_decay)
      adam_range<T, true, true>(p, g, m, v, a, i0, i1);
    else if (decay)
      adam_range<T, true, false>(p, g, m, v, a, i0, i1);
    else if (weight_decay)
      adam_range<T, false, true>(p, g, m, v, a, i0, i1);
    else
      adam_range<T, false, false>(p, g, m, v, a, i0, i1);
  });
}

template <typename T>
void sgd_step(T* p, const T* g, T* buf, int64_t n, const SgdArgs& a) {
  parallel_for_ranges(n, kGrain, [&](int64_t i0, int64_t i1) {
    if (buf)
      sgd_range<T, true>(p, g, buf, a, i0, i1);
    else
      sgd_range<T, false>(p, g, buf, a, i0, i1);
  });
}

#define KILN_NATIVE_KERNELS(T)                                                                                         \
  template void layer_norm_forward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, double);             \
  template void layer_norm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int64_t,          \
                                       int64_t);                                                                       \
  template void batch_norm_forward<T>(const T*, const T*, const T*, T*, T*, T*, double*, int64_t, int64_t, int64_t,    \
                                      double);                                                                         \
  template void batch_norm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, \
                                       int64_t);                                                                       \
  template void softmax_forward<T>(const T*, T*, int64_t, int64_t, int64_t, bool);                                     \
  template void softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, bool);                          \
  template void cross_entropy_forward<T>(const T*, const int64_t*, T*, double*, int64_t, int64_t, int64_t);            \
  template void cross_entropy_backward<T>(const T*, const int64_t*, const double*, const double*, T*, int64_t,         \
                                          int64_t, int64_t);                                                           \
  template void gelu_forward<T>(const T*, T*, int64_t, bool);                                                          \
  template void gelu_backward<T>(const T*, const T*, T*, int64_t, bool);                                               \
  template void adam_step<T>(T*, const T*, T*, T*, int64_t, const AdamArgs&);                                          \
  template void sgd_step<T>(T*, const T*, T*, int64_t, const SgdArgs&);
KILN_NATIVE_KERNELS(float)
KILN_NATIVE_KERNELS(double)
#undef KILN_NATIVE_KERNELS

}  // namespace kiln::codegen::native
