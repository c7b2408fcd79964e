#include "codegen/native_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/config.h"
#include "runtime/parallel.h"

// libmvec's vector forms (glibc's): loops over them call the 8-wide float forms with AVX2.
extern "C" double exp(double) noexcept __attribute__((simd("notinbranch")));
extern "C" float expf(float) noexcept __attribute__((simd("notinbranch")));
extern "C" double erf(double) noexcept __attribute__((simd("notinbranch")));
extern "C" float erff(float) noexcept __attribute__((simd("notinbranch")));
extern "C" double tanh(double) noexcept __attribute__((simd("notinbranch")));
extern "C" float tanhf(float) noexcept __attribute__((simd("notinbranch")));

namespace kiln::codegen::native {
namespace {

inline float vexp(float x) { return expf(x); }
inline double vexp(double x) { return exp(x); }
inline float verf(float x) { return erff(x); }
inline double verf(double x) { return erf(x); }
inline float vtanh(float x) { return tanhf(x); }
inline double vtanh(double x) { return tanh(x); }

// Elements per task below which a loop is not split (as the per-op kernels split theirs).
constexpr int64_t kGrain = int64_t(1) << 15;

// Runs f(task, first, end) over `tasks` contiguous ranges of [0, n), each at least `grain` long
// where n allows, on kiln's threads.
template <typename F>
void for_ranges(int64_t n, int64_t grain, F&& f) {
  int64_t tasks = std::min<int64_t>((n + grain - 1) / std::max<int64_t>(grain, 1), 4 * int64_t(get_num_threads()));
  if (tasks <= 1) {
    f(0, int64_t(0), n);
    return;
  }
  struct Ctx {
    F* f;
    int64_t n, tasks;
  } ctx{&f, n, tasks};
  parallel_for(
      int(tasks),
      [](void* c, int i) {
        auto& k = *static_cast<Ctx*>(c);
        (*k.f)(int64_t(i), k.n * i / k.tasks, k.n * (i + 1) / k.tasks);
      },
      &ctx);
}
// The number of ranges for_ranges makes of n.
int64_t ranges_of(int64_t n, int64_t grain) {
  return std::max<int64_t>(
      1, std::min<int64_t>((n + grain - 1) / std::max<int64_t>(grain, 1), 4 * int64_t(get_num_threads())));
}
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(cols, 1)); }

// The sum of f(0) ... f(n-1): blocks of 64 in 8 lanes of T (vectorized), blocks added in double:
// within a few ulps of the float64 sum, as the compiled kernels' blocked sums.
template <typename T, typename F>
[[gnu::always_inline]] inline double blocked_sum(int64_t n, F f) {
  constexpr int kLanes = 8;
  constexpr int64_t kBlock = 64;
  double total = 0;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    T lanes[kLanes] = {};
    for (int64_t k = 0; k < kBlock; k += kLanes)
      for (int j = 0; j < kLanes; ++j) lanes[j] += f(i + k + j);
    double block = 0;
    for (int j = 0; j < kLanes; ++j) block += double(lanes[j]);
    total += block;
  }
  for (; i < n; ++i) total += double(f(i));
  return total;
}

template <typename T>
[[gnu::always_inline]] inline T row_max(const T* __restrict__ x, int64_t n) {
  constexpr int kLanes = 8;
  T lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -INFINITY);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  T m = -INFINITY;
  for (int j = 0; j < kLanes; ++j) m = lanes[j] > m ? lanes[j] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// --- layer norm ---

template <typename T>
struct LayerNormArgs {
  const T *x, *w, *b, *dy, *mean, *rstd;
  T *y, *mean_out, *rstd_out, *dx;
  double* partial;  // the backward's dw and db sums, 2 * cols per task
  int64_t cols;
  double eps;
};

// Compiled twice, for every x86-64 and for AVX2 (x86-64-v3), the CPU choosing when kiln loads.
#define KILN_CLONES __attribute__((target_clones("default", "arch=x86-64-v3")))

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

// --- im2col ---

// Channels [c0, c1): each channel's columns read (or, adjoint, write) only its own plane of x, so
// channels run in parallel without sharing a write.
template <typename T, bool kAdjoint>
KILN_CLONES void im2col_channels(const T* x_all, T* cols_all, const Im2col& a, int64_t c0, int64_t c1) {
  const int64_t plane = a.h * a.w, per_tap = a.n * a.oh * a.ow;
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t i = 0; i < a.kh; ++i)
      for (int64_t j = 0; j < a.kw; ++j) {
        T* cols = cols_all + ((c * a.kh + i) * a.kw + j) * per_tap;
        // The output columns z whose input column z * sw + j * dw - pw lies inside [0, w).
        const int64_t shift = j * a.dw - a.pw;
        int64_t z0 = 0, z1 = a.ow;
        while (z0 < z1 && z0 * a.sw + shift < 0) ++z0;
        while (z1 > z0 && (z1 - 1) * a.sw + shift >= a.w) --z1;
        for (int64_t n = 0; n < a.n; ++n)
          for (int64_t y = 0; y < a.oh; ++y) {
            T* __restrict__ out = cols + (n * a.oh + y) * a.ow;
            const int64_t row = y * a.sh + i * a.dh - a.ph;
            const bool inside = row >= 0 && row < a.h;
            if constexpr (kAdjoint) {
              if (!inside) continue;
              T* __restrict__ in = const_cast<T*>(x_all) + (n * a.c + c) * plane + row * a.w + shift;
              if (a.sw == 1)
                for (int64_t z = z0; z < z1; ++z) in[z] += out[z];
              else
                for (int64_t z = z0; z < z1; ++z) in[z * a.sw] += out[z];
            } else {
              if (!inside) {
                std::fill(out, out + a.ow, T(0));
                continue;
              }
              const T* __restrict__ in = x_all + (n * a.c + c) * plane + row * a.w + shift;
              std::fill(out, out + z0, T(0));
              if (a.sw == 1)
                for (int64_t z = z0; z < z1; ++z) out[z] = in[z];
              else
                for (int64_t z = z0; z < z1; ++z) out[z] = in[z * a.sw];
              std::fill(out + z1, out + a.ow, T(0));
            }
          }
      }
}

// --- max pooling ---

// The usual 2x2 pool (stride 2, no padding or dilation): four candidates per output, no bounds.
template <typename T>
KILN_CLONES void max_pool_2x2_planes(const T* x_all, T* y_all, int32_t* where_all, const Pool2d& a, int64_t p0,
                                     int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const T* __restrict__ x = x_all + p * a.h * a.w;
    for (int64_t i = 0; i < a.oh; ++i) {
      T* __restrict__ y = y_all + (p * a.oh + i) * a.ow;
      int32_t* __restrict__ where = where_all + (p * a.oh + i) * a.ow;
      const T* __restrict__ top = x + 2 * i * a.w;
      const T* __restrict__ bottom = top + a.w;
      for (int64_t j = 0; j < a.ow; ++j) {
        const T c[4] = {top[2 * j], top[2 * j + 1], bottom[2 * j], bottom[2 * j + 1]};
        const int32_t at[4] = {int32_t(2 * i * a.w + 2 * j), int32_t(2 * i * a.w + 2 * j + 1),
                               int32_t((2 * i + 1) * a.w + 2 * j), int32_t((2 * i + 1) * a.w + 2 * j + 1)};
        T best = c[0];
        int32_t best_at = at[0];
        for (int k = 1; k < 4; ++k) {
          const bool take = c[k] > best || c[k] != c[k];  // the first maximum; the last NaN
          best = take ? c[k] : best;
          best_at = take ? at[k] : best_at;
        }
        y[j] = best;
        where[j] = best_at;
      }
    }
  }
}

template <typename T>
KILN_CLONES void max_pool_planes(const T* x_all, T* y_all, int32_t* where_all, const Pool2d& a, int64_t p0,
                                 int64_t p1) {
  if (a.kh == 2 && a.kw == 2 && a.sh == 2 && a.sw == 2 && a.ph == 0 && a.pw == 0 && a.dh == 1 && a.dw == 1 &&
      2 * a.oh <= a.h && 2 * a.ow <= a.w)
    return max_pool_2x2_planes(x_all, y_all, where_all, a, p0, p1);
  for (int64_t p = p0; p < p1; ++p) {
    const T* __restrict__ x = x_all + p * a.h * a.w;
    T* __restrict__ y = y_all + p * a.oh * a.ow;
    int32_t* __restrict__ where = where_all + p * a.oh * a.ow;
    for (int64_t i = 0; i < a.oh; ++i)
      for (int64_t j = 0; j < a.ow; ++j) {
        T best = -INFINITY;
        int64_t at = -1;
        for (int64_t u = 0; u < a.kh; ++u) {
          const int64_t row = i * a.sh - a.ph + u * a.dh;
          if (row < 0 || row >= a.h) continue;
          for (int64_t v = 0; v < a.kw; ++v) {
            const int64_t col = j * a.sw - a.pw + v * a.dw;
            if (col < 0 || col >= a.w) continue;
            const T value = x[row * a.w + col];
            if (at < 0 || value > best || std::isnan(value)) {
              best = value;
              at = row * a.w + col;
            }
          }
        }
        y[i * a.ow + j] = best;
        where[i * a.ow + j] = int32_t(at);
      }
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
  for_ranges(rows, row_grain(cols), [&](int64_t, int64_t r0, int64_t r1) { layer_norm_rows(a, r0, r1); });
}

template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* mean, const T* rstd, const T* w, T* dx, T* dw, T* db,
                         int64_t rows, int64_t cols) {
  const int64_t grain = row_grain(cols);
  std::vector<double> partial(dw || db ? size_t(2 * cols * ranges_of(rows, grain)) : 0);
  LayerNormArgs<T> a{
      x,    w, nullptr, dy, mean, rstd, nullptr, nullptr, nullptr, dx, partial.empty() ? nullptr : partial.data(),
      cols, 0};
  for_ranges(rows, grain, [&](int64_t task, int64_t r0, int64_t r1) {
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
  for_ranges(c, std::max<int64_t>(1, kGrain / std::max<int64_t>(n * inner, 1)),
             [&](int64_t, int64_t k0, int64_t k1) { batch_norm_channels(a, k0, k1); });
}

template <typename T>
void batch_norm_backward(const T* dy, const T* x, const T* mean, const T* rstd, const T* w, T* dx, T* dw, T* db,
                         int64_t n, int64_t c, int64_t inner) {
  BatchNormArgs<T> a{x, w, nullptr, dy, mean, rstd, nullptr, nullptr, nullptr, dx, dw, db, nullptr, n, c, inner, 0};
  for_ranges(c, std::max<int64_t>(1, kGrain / std::max<int64_t>(n * inner, 1)),
             [&](int64_t, int64_t k0, int64_t k1) { batch_norm_backward_channels(a, k0, k1); });
}

template <typename T>
void softmax_forward(const T* x, T* y, int64_t rows, int64_t cols, bool log) {
  for_ranges(rows, row_grain(cols), [&](int64_t, int64_t r0, int64_t r1) { softmax_rows(x, y, cols, log, r0, r1); });
}

template <typename T>
void softmax_backward(const T* dy, const T* y, T* dx, int64_t rows, int64_t cols, bool log) {
  for_ranges(rows, row_grain(cols),
             [&](int64_t, int64_t r0, int64_t r1) { softmax_backward_rows(dy, y, dx, cols, log, r0, r1); });
}

template <typename T>
void cross_entropy_forward(const T* x, const int64_t* target, T* loss, double* lse, int64_t rows, int64_t cols,
                           int64_t ignore_index) {
  for_ranges(rows, row_grain(cols), [&](int64_t, int64_t r0, int64_t r1) {
    std::vector<T> e(static_cast<size_t>(cols));  // a row's exponentials
    cross_entropy_rows(x, target, loss, lse, cols, ignore_index, e.data(), r0, r1);
  });
}

template <typename T>
void cross_entropy_backward(const T* x, const int64_t* target, const double* lse, const double* scale, T* dx,
                            int64_t rows, int64_t cols, int64_t ignore_index) {
  for_ranges(rows, row_grain(cols), [&](int64_t, int64_t r0, int64_t r1) {
    cross_entropy_backward_rows(x, target, lse, scale, dx, cols, ignore_index, r0, r1);
  });
}

template <typename T>
void im2col(const T* x, T* cols, const Im2col& a) {
  const int64_t per_channel = a.kh * a.kw * a.n * a.oh * a.ow;
  for_ranges(a.c, std::max<int64_t>(1, kGrain / std::max<int64_t>(per_channel, 1)),
             [&](int64_t, int64_t c0, int64_t c1) { im2col_channels<T, false>(x, cols, a, c0, c1); });
}

template <typename T>
void col2im(const T* cols, T* x, const Im2col& a) {
  std::fill(x, x + a.n * a.c * a.h * a.w, T(0));
  const int64_t per_channel = a.kh * a.kw * a.n * a.oh * a.ow;
  for_ranges(a.c, std::max<int64_t>(1, kGrain / std::max<int64_t>(per_channel, 1)),
             [&](int64_t, int64_t c0, int64_t c1) { im2col_channels<T, true>(x, const_cast<T*>(cols), a, c0, c1); });
}

template <typename T>
void max_pool2d_forward(const T* x, T* y, int32_t* where, const Pool2d& a) {
  for_ranges(a.planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(a.h * a.w, 1)),
             [&](int64_t, int64_t p0, int64_t p1) { max_pool_planes(x, y, where, a, p0, p1); });
}

template <typename T>
void max_pool2d_backward(const T* dy, const int32_t* where, T* dx, const Pool2d& a) {
  for_ranges(a.planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(a.h * a.w, 1)),
             [&](int64_t, int64_t p0, int64_t p1) {
               std::fill(dx + p0 * a.h * a.w, dx + p1 * a.h * a.w, T(0));
               for (int64_t p = p0; p < p1; ++p)
                 for (int64_t k = 0; k < a.oh * a.ow; ++k)
                   if (where[p * a.oh * a.ow + k] >= 0)
                     dx[p * a.h * a.w + where[p * a.oh * a.ow + k]] += dy[p * a.oh * a.ow + k];
             });
}

template <typename T>
void gelu_forward(const T* x, T* y, int64_t n, bool tanh_form) {
  for_ranges(n, kGrain, [&](int64_t, int64_t i0, int64_t i1) { gelu_range(x, y, tanh_form, i0, i1); });
}

template <typename T>
void gelu_backward(const T* dy, const T* x, T* dx, int64_t n, bool tanh_form) {
  for_ranges(n, kGrain, [&](int64_t, int64_t i0, int64_t i1) { gelu_backward_range(dy, x, dx, tanh_form, i0, i1); });
}

template <typename T>
void adam_step(T* p, const T* g, T* m, T* v, int64_t n, const AdamArgs& a) {
  const bool decay = a.decay != 1, weight_decay = a.weight_decay != 0;
  for_ranges(n, kGrain, [&](int64_t, int64_t i0, int64_t i1) {
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
  for_ranges(n, kGrain, [&](int64_t, int64_t i0, int64_t i1) {
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
  template void softmax_forward<T>(const T*, T*, int64_t, int64_t, bool);                                              \
  template void softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t, bool);                                   \
  template void cross_entropy_forward<T>(const T*, const int64_t*, T*, double*, int64_t, int64_t, int64_t);            \
  template void cross_entropy_backward<T>(const T*, const int64_t*, const double*, const double*, T*, int64_t,         \
                                          int64_t, int64_t);                                                           \
  template void im2col<T>(const T*, T*, const Im2col&);                                                                \
  template void col2im<T>(const T*, T*, const Im2col&);                                                                \
  template void max_pool2d_forward<T>(const T*, T*, int32_t*, const Pool2d&);                                          \
  template void max_pool2d_backward<T>(const T*, const int32_t*, T*, const Pool2d&);                                   \
  template void gelu_forward<T>(const T*, T*, int64_t, bool);                                                          \
  template void gelu_backward<T>(const T*, const T*, T*, int64_t, bool);                                               \
  template void adam_step<T>(T*, const T*, T*, T*, int64_t, const AdamArgs&);                                          \
  template void sgd_step<T>(T*, const T*, T*, int64_t, const SgdArgs&);
KILN_NATIVE_KERNELS(float)
KILN_NATIVE_KERNELS(double)
#undef KILN_NATIVE_KERNELS

}  // namespace kiln::codegen::native
