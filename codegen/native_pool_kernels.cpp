// codegen/native_kernels.h's convolution and pooling kernels.
#include <algorithm>
#include <cmath>

#include "codegen/native_kernels.h"
#include "codegen/native_loops.h"
#include "runtime/parallel.h"

namespace kiln::codegen::native {
namespace {

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

// --- average pooling ---

template <typename T>
KILN_CLONES void avg_pool_planes(const T* x_all, T* y_all, const AvgPool2d& a, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const T* __restrict__ x = x_all + p * a.h * a.w;
    T* __restrict__ y = y_all + p * a.oh * a.ow;
    for (int64_t i = 0; i < a.oh; ++i)
      for (int64_t j = 0; j < a.ow; ++j) {
        double s = 0;  // a window may be a whole plane (adaptive pooling to 1 x 1)
        for (int64_t u = a.rows[2 * i]; u < a.rows[2 * i + 1]; ++u)
          for (int64_t v = a.cols[2 * j]; v < a.cols[2 * j + 1]; ++v) s += double(x[u * a.w + v]);
        y[i * a.ow + j] = T(s / a.divisor[i * a.ow + j]);
      }
  }
}

template <typename T>
KILN_CLONES void avg_pool_backward_planes(const T* dy_all, T* dx_all, const AvgPool2d& a, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const T* __restrict__ dy = dy_all + p * a.oh * a.ow;
    T* __restrict__ dx = dx_all + p * a.h * a.w;
    std::fill(dx, dx + a.h * a.w, T(0));
    for (int64_t i = 0; i < a.oh; ++i)
      for (int64_t j = 0; j < a.ow; ++j) {
        const T g = T(double(dy[i * a.ow + j]) / a.divisor[i * a.ow + j]);
        for (int64_t u = a.rows[2 * i]; u < a.rows[2 * i + 1]; ++u)
          for (int64_t v = a.cols[2 * j]; v < a.cols[2 * j + 1]; ++v) dx[u * a.w + v] += g;
      }
  }
}

}  // namespace

template <typename T>
void im2col(const T* x, T* cols, const Im2col& a) {
  const int64_t per_channel = a.kh * a.kw * a.n * a.oh * a.ow;
  parallel_for_ranges(a.c, row_grain(per_channel),
                      [&](int64_t c0, int64_t c1) { im2col_channels<T, false>(x, cols, a, c0, c1); });
}

template <typename T>
void col2im(const T* cols, T* x, const Im2col& a) {
  std::fill(x, x + a.n * a.c * a.h * a.w, T(0));
  const int64_t per_channel = a.kh * a.kw * a.n * a.oh * a.ow;
  parallel_for_ranges(a.c, row_grain(per_channel),
                      [&](int64_t c0, int64_t c1) { im2col_channels<T, true>(x, const_cast<T*>(cols), a, c0, c1); });
}

template <typename T>
void max_pool2d_forward(const T* x, T* y, int32_t* where, const Pool2d& a) {
  parallel_for_ranges(a.planes, row_grain(a.h * a.w),
                      [&](int64_t p0, int64_t p1) { max_pool_planes(x, y, where, a, p0, p1); });
}

template <typename T>
void max_pool2d_backward(const T* dy, const int32_t* where, T* dx, const Pool2d& a) {
  parallel_for_ranges(a.planes, row_grain(a.h * a.w), [&](int64_t p0, int64_t p1) {
    std::fill(dx + p0 * a.h * a.w, dx + p1 * a.h * a.w, T(0));
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t k = 0; k < a.oh * a.ow; ++k)
        if (where[p * a.oh * a.ow + k] >= 0) dx[p * a.h * a.w + where[p * a.oh * a.ow + k]] += dy[p * a.oh * a.ow + k];
  });
}

template <typename T>
void avg_pool2d_forward(const T* x, T* y, const AvgPool2d& a) {
  parallel_for_ranges(a.planes, row_grain(a.h * a.w),
                      [&](int64_t p0, int64_t p1) { avg_pool_planes(x, y, a, p0, p1); });
}

template <typename T>
void avg_pool2d_backward(const T* dy, T* dx, const AvgPool2d& a) {
  parallel_for_ranges(a.planes, row_grain(a.h * a.w),
                      [&](int64_t p0, int64_t p1) { avg_pool_backward_planes(dy, dx, a, p0, p1); });
}

#define KILN_NATIVE_POOL_KERNELS(T)                                                  \
  template void im2col<T>(const T*, T*, const Im2col&);                              \
  template void col2im<T>(const T*, T*, const Im2col&);                              \
  template void max_pool2d_forward<T>(const T*, T*, int32_t*, const Pool2d&);        \
  template void max_pool2d_backward<T>(const T*, const int32_t*, T*, const Pool2d&); \
  template void avg_pool2d_forward<T>(const T*, T*, const AvgPool2d&);               \
  template void avg_pool2d_backward<T>(const T*, T*, const AvgPool2d&);
KILN_NATIVE_POOL_KERNELS(float)
KILN_NATIVE_POOL_KERNELS(double)
#undef KILN_NATIVE_POOL_KERNELS

}  // namespace kiln::codegen::native
