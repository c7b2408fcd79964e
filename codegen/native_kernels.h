// Kernels of whole libtorch ops, compiled when kiln is built, that eager mode (KILN_LAZY=0) runs
// in place of a composite's unfused kernels (frontend/native_ops.cpp): layer norm, softmax and
// log-softmax along any dim, cross-entropy over contiguous rows, GELU, a convolution's im2col and
// col2im, max and average pooling, each forward and backward in one pass over a row that stays in
// cache, saving per-row statistics only (as libtorch's native kernels do); and the optimizers'
// per-parameter updates as one loop over the parameter and its state. Lazy mode never runs them:
// it fuses the composites. T is float or double; float rows are computed in float with blocked
// sums added in double, float64 rows in double. Rows are split across kiln's threads.
#pragma once
#include <cstdint>

namespace kiln::codegen::native {

// y = (x - mean) * rstd * w + b over rows of `cols`; mean and rstd (1 / sqrt(var + eps), the
// biased variance) per row. w and b may be null.
template <typename T>
void layer_norm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t rows, int64_t cols,
                        double eps);
// The gradients from dy and the saved statistics: dx (if not null), and dw and db (if not null:
// sums over the rows of dy * xhat and of dy). w may be null.
template <typename T>
void layer_norm_backward(const T* dy, const T* x, const T* mean, const T* rstd, const T* w, T* dx, T* dw, T* db,
                         int64_t rows, int64_t cols);

// Batch norm in training over x [N, C, inner]: each channel's statistics over its N * inner values
// (mean, rstd = 1 / sqrt(var + eps), and the biased variance var, for the running statistics),
// y = (x - mean) * rstd * w + b; and the gradients (dx, dw, db as for layer norm, per channel).
template <typename T>
void batch_norm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, double* var, int64_t n, int64_t c,
                        int64_t inner, double eps);
template <typename T>
void batch_norm_backward(const T* dy, const T* x, const T* mean, const T* rstd, const T* w, T* dx, T* dw, T* db,
                         int64_t n, int64_t c, int64_t inner);

// softmax (log: log_softmax) of x [outer, n, inner] along its middle axis (rows of n where
// inner is 1).
template <typename T>
void softmax_forward(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log);
// dx from dy and the saved output y: y * (dy - sum(dy * y)), or (log) dy - exp(y) * sum(dy).
template <typename T>
void softmax_backward(const T* dy, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner, bool log);

// Cross-entropy with class indices: loss[i] = logsumexp(x[i]) - x[i][target[i]], 0 where the
// target is ignore_index; lse[i] saved (float64). Targets are in range (the caller checked).
template <typename T>
void cross_entropy_forward(const T* x, const int64_t* target, T* loss, double* lse, int64_t rows, int64_t cols,
                           int64_t ignore_index);
// dx[i] = scale[i] * (softmax(x[i]) - onehot(target[i])), zero where the target is ignored.
template <typename T>
void cross_entropy_backward(const T* x, const int64_t* target, const double* lse, const double* scale, T* dx,
                            int64_t rows, int64_t cols, int64_t ignore_index);

// The columns of a 2-D convolution (im2col) of x [N, C, H, W]: cols [C, KH, KW, N, OH, OW], where
// cols[c][i][j][n][y][z] = x[n][c][y * sh + i * dh - ph][z * sw + j * dw - pw] (0 outside x); and
// its adjoint (col2im), which sums the columns back into x's positions (x is overwritten).
struct Im2col {
  int64_t n, c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
};
template <typename T>
void im2col(const T* x, T* cols, const Im2col& a);
template <typename T>
void col2im(const T* cols, T* x, const Im2col& a);

// Max pooling over `planes` planes of h x w (windows kh x kw, strides, padding, dilation as
// conv2d's; the output oh x ow): each window's first maximum (its last NaN, as libtorch picks) and
// where it is in its plane; and the gradient, each output's sent to that place (dx overwritten).
struct Pool2d {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
};
template <typename T>
void max_pool2d_forward(const T* x, T* y, int32_t* where, const Pool2d& a);
template <typename T>
void max_pool2d_backward(const T* dy, const int32_t* where, T* dx, const Pool2d& a);

// Average pooling over `planes` planes of h x w into oh x ow: output (i, j) is the sum of input
// rows [rows[2i], rows[2i + 1]) and columns [cols[2j], cols[2j + 1]) over divisor[i * ow + j]
// (avg_pool2d's windows clipped to the input, or adaptive pooling's); and the gradient, each
// output's spread evenly over its window (dx overwritten).
struct AvgPool2d {
  int64_t planes, h, w, oh, ow;
  const int64_t *rows, *cols;
  const double* divisor;
};
template <typename T>
void avg_pool2d_forward(const T* x, T* y, const AvgPool2d& a);
template <typename T>
void avg_pool2d_backward(const T* dy, T* dx, const AvgPool2d& a);

// GELU (tanh_form: its tanh approximation) of n elements, and its gradient from dy and x.
template <typename T>
void gelu_forward(const T* x, T* y, int64_t n, bool tanh_form);
template <typename T>
void gelu_backward(const T* dy, const T* x, T* dx, int64_t n, bool tanh_form);

// One Adam (AdamW) step over n elements, updated in place as libtorch 1.13's Adam does it op by
// op (in T): p *= decay; g += weight_decay * p; m = m * beta1 + (1 - beta1) * g;
// v = v * beta2 + (1 - beta2) * g * g; p += -step_size * m / (sqrt(v) / sqrt(bias_correction2) + eps).
struct AdamArgs {
  double decay = 1, weight_decay = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, step_size = 1e-3,
         sqrt_bias_correction2 = 1;
};
template <typename T>
void adam_step(T* p, const T* g, T* m, T* v, int64_t n, const AdamArgs& a);
// One SGD step in place, as libtorch 1.13's: g += weight_decay * p; with momentum
// buf = buf * momentum + (1 - dampening) * g, g = nesterov ? g + momentum * buf : buf;
// p += -lr * g. buf null: no momentum (the first step, which starts buf at g, is the caller's).
struct SgdArgs {
  double lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};
template <typename T>
void sgd_step(T* p, const T* g, T* buf, int64_t n, const SgdArgs& a);

}  // namespace kiln::codegen::native
