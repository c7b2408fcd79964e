#include "frontend/native_ops.h"

#include <cmath>
#include <limits>
#include <vector>

#include "frontend/autograd.h"
#include "frontend/derivatives.h"
#include "frontend/nn/functional.h"
#include "frontend/ops.h"
#include "frontend/trace.h"
#include "runtime/config.h"
#include "runtime/stats.h"

namespace kiln::detail::native {

namespace nk = codegen::native;

namespace {

// Set while a backward recomputes a composite (create_graph): its ops are the composite's.
thread_local int t_off = 0;
struct Off {
  Off() { ++t_off; }
  ~Off() { --t_off; }
  Off(const Off&) = delete;
  Off& operator=(const Off&) = delete;
};

void count_kernel() {
  stats_add(&Stats::native_kernels, 1);
  stats_add(&Stats::kernel_launches, 1);
}

bool on_host(const Tensor& t) { return t.unsafeGetTensorImpl()->storage->cuda_device < 0; }
bool float_on_host(const Tensor& t) { return (t.dtype() == kFloat || t.dtype() == kDouble) && on_host(t); }

// A new contiguous tensor of `sizes` over a buffer the caller fills.
struct Out {
  BufferPtr buffer;
  Shape sizes;
  ScalarType dtype;
  Out(Shape s, ScalarType t)
      : buffer(make_buffer(size_t(numel_of(s)) * element_size(t))), sizes(std::move(s)), dtype(t) {}
  template <typename T>
  T* data() const {
    return buffer->as<T>();
  }
  Tensor tensor() const { return wrap(record_input(sizes, dtype, buffer)); }
};

template <typename T>
const T* read(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.const_data_ptr()) : nullptr;
}

// Calls f(T()) with T the C++ type of a float32 or float64 dtype.
template <typename F>
auto with_float(ScalarType t, F&& f) {
  return t == kDouble ? f(double()) : f(float());
}

// A new tensor of `sizes` and `dtype` that one native kernel fills: kernel(T(), out) with T the
// dtype's C++ type.
template <typename F>
Tensor filled(Shape sizes, ScalarType dtype, F&& kernel) {
  Out out(std::move(sizes), dtype);
  with_float(dtype, [&](auto zero) { kernel(zero, out); });
  count_kernel();
  return out.tensor();
}

// The backward node of a native op: inputs' edges, outputs' shapes, and the tensors it keeps.
class NativeBackward : public autograd::Node {
 public:
  explicit NativeBackward(const char* name) : name_(name) {}
  std::string name() const override { return name_; }
  void release_variables() override {
    for (auto& s : saved_) s.reset();
  }

 protected:
  // Attaches this node to `out` (output 0) with an edge to each of `inputs` (undefined ones too,
  // as invalid edges), and saves `keep` (inputs) for the backward.
  void attach(Tensor& out, Tensors inputs) {
    sequence_nr = next_sequence_nr();
    for (const auto& t : inputs) next_edges.push_back(gradient_edge(t));
    output_shapes = {Shape(out.sizes())};
    output_dtypes = {out.dtype()};
    output_devices = {out.device()};
    set_history(out, shared_from_this());
  }
  Tensor saved(size_t i) { return saved_[i].defined() ? saved_[i].unpack(shared_from_this()) : Tensor(); }
  bool needs(size_t i) const { return next_edges[i].valid(); }
  // Saves each of `inputs` (undefined ones as empty slots) for the backward.
  void save_inputs(Tensors inputs) {
    for (const Tensor& t : inputs)
      saved_.emplace_back(t.defined() ? autograd::SavedTensor(t, false) : autograd::SavedTensor());
  }
  // The gradients of a normalization's (x, weight, bias), shaped as they are: kernel(dx, dw, db)
  // writes them, a null pointer for an input that needs none.
  template <typename T, typename Kernel>
  tensor_list norm_gradients(const tensor_list& in, Kernel&& kernel) {
    std::optional<Out> out[3];
    T* data[3] = {nullptr, nullptr, nullptr};
    for (size_t i = 0; i < 3; ++i)
      if (needs(i)) data[i] = out[i].emplace(Shape(in[i].sizes()), in[0].dtype()).template data<T>();
    kernel(data[0], data[1], data[2]);
    count_kernel();
    tensor_list result(3);
    for (size_t i = 0; i < 3; ++i)
      if (out[i]) result[i] = out[i]->tensor();
    return result;
  }
  // The gradients of the inputs whose edges are valid, by the composite `forward` recomputed
  // over `inputs` (saved, so attached to their history) with autograd: differentiable again.
  template <typename F>
  tensor_list recompute(const tensor_list& inputs, const Tensor& grad, F&& forward) {
    Tensor out;
    {
      Off off;
      out = forward(inputs);
    }
    tensor_list wanted;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (needs(i)) wanted.push_back(inputs[i]);
    tensor_list grads = autograd::grad({out}, wanted, {grad}, /*retain_graph=*/true, /*create_graph=*/true,
                                       /*allow_unused=*/true);
    tensor_list result(inputs.size());
    for (size_t i = 0, k = 0; i < inputs.size(); ++i)
      if (needs(i)) result[i] = grads[k++];
    return result;
  }

  const char* name_;
  std::vector<autograd::SavedTensor> saved_;
};

bool wants_grad(Tensors inputs) { return autograd::GradMode::is_enabled() && any_requires_grad(inputs); }

// --- layer_norm ---

class LayerNormBackward final : public NativeBackward {
 public:
  LayerNormBackward() : NativeBackward("NativeLayerNormBackward0") {}
  static void attach_to(Tensor& out, const Tensor& x, const Tensor& w, const Tensor& b, Out mean, Out rstd,
                        int64_t normalized_dims, double eps) {
    auto node = std::make_shared<LayerNormBackward>();
    node->attach(out, {x, w, b});
    node->save_inputs({x, w, b});
    node->mean_ = std::move(mean.buffer);
    node->rstd_ = std::move(rstd.buffer);
    node->dims_ = normalized_dims;
    node->eps_ = eps;
  }

  tensor_list apply(tensor_list&& grads) override {
    tensor_list in = {saved(0), saved(1), saved(2)};
    const Tensor& x = in[0];
    if (autograd::GradMode::is_enabled())
      return recompute(in, grads[0], [&](const tensor_list& i) {
        std::vector<int64_t> shape(x.sizes().end() - dims_, x.sizes().end());
        return nn::functional::layer_norm(
            i[0], nn::functional::LayerNormFuncOptions(shape).weight(i[1]).bias(i[2]).eps(eps_));
      });
    const Tensor dy = grads[0].to(x.dtype()).contiguous();
    const int64_t cols = numel_of(Shape(x.sizes().end() - dims_, x.sizes().end()));
    const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
    return with_float(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      return norm_gradients<T>(in, [&](T* dx, T* dw, T* db) {
        nk::layer_norm_backward<T>(read<T>(dy), read<T>(x), mean_->as<T>(), rstd_->as<T>(), read<T>(in[1]), dx, dw, db,
                                   rows, cols);
      });
    });
  }

 private:
  BufferPtr mean_, rstd_;
  int64_t dims_ = 1;
  double eps_ = 1e-5;
};

// --- batch_norm ---

class BatchNormBackward final : public NativeBackward {
 public:
  BatchNormBackward() : NativeBackward("NativeBatchNormBackward0") {}
  static void attach_to(Tensor& out, const Tensor& x, const Tensor& w, const Tensor& b, BufferPtr mean, BufferPtr rstd,
                        BatchNormComposite composite) {
    auto node = std::make_shared<BatchNormBackward>();
    node->attach(out, {x, w, b});
    node->save_inputs({x, w, b});
    node->mean_ = std::move(mean);
    node->rstd_ = std::move(rstd);
    node->composite_ = std::move(composite);
  }

  tensor_list apply(tensor_list&& grads) override {
    tensor_list in = {saved(0), saved(1), saved(2)};
    const Tensor& x = in[0];
    if (autograd::GradMode::is_enabled())
      return recompute(in, grads[0], [&](const tensor_list& i) { return composite_(i[0], i[1], i[2]); });
    const Tensor dy = grads[0].to(x.dtype()).contiguous();
    const int64_t n = x.size(0), c = x.size(1), inner = x.numel() / std::max<int64_t>(n * c, 1);
    return with_float(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      return norm_gradients<T>(in, [&](T* dx, T* dw, T* db) {
        nk::batch_norm_backward<T>(read<T>(dy), read<T>(x), mean_->as<T>(), rstd_->as<T>(), read<T>(in[1]), dx, dw, db,
                                   n, c, inner);
      });
    });
  }

 private:
  BufferPtr mean_, rstd_;
  BatchNormComposite composite_;
};

// --- softmax ---

// x's sizes as [outer, n, inner] around `dim`.
struct AlongDim {
  int64_t outer, n, inner;
  AlongDim(const Tensor& x, int64_t dim)
      : outer(numel_of(Shape(x.sizes().begin(), x.sizes().begin() + dim))),
        n(x.size(dim)),
        inner(numel_of(Shape(x.sizes().begin() + dim + 1, x.sizes().end()))) {}
};

class SoftmaxBackward final : public NativeBackward {
 public:
  SoftmaxBackward(bool log, int64_t dim)
      : NativeBackward(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0"), log_(log), dim_(dim) {}
  static void attach_to(Tensor& out, const Tensor& x, bool log, int64_t dim) {
    auto node = std::make_shared<SoftmaxBackward>(log, dim);
    node->attach(out, {x});
    node->saved_.emplace_back(out, true);
  }

  tensor_list apply(tensor_list&& grads) override {
    const Tensor y = saved(0);
    const int64_t d = dim_;
    const Tensor& g = grads[0];
    if (autograd::GradMode::is_enabled())  // the formulas differentiate again through y
      return {log_ ? g - exp(y) * g.sum({d}, true) : y * (g - (g * y).sum({d}, true))};
    const Tensor dy = g.to(y.dtype()).contiguous();
    const AlongDim a(y, d);
    return {filled(Shape(y.sizes()), y.dtype(), [&](auto zero, const Out& dx) {
      using T = decltype(zero);
      nk::softmax_backward<T>(read<T>(dy), read<T>(y), dx.data<T>(), a.outer, a.n, a.inner, log_);
    })};
  }

 private:
  bool log_;
  int64_t dim_;
};

// The backward node of a native op of one input x with a composite (recomputed where
// create_graph asks for a graph): gradient() runs the op's backward kernel on the output's
// gradient, in x's dtype and contiguous.
class OneInputBackward : public NativeBackward {
 public:
  tensor_list apply(tensor_list&& grads) override {
    if (autograd::GradMode::is_enabled())
      return recompute({saved(0)}, grads[0], [&](const tensor_list& i) { return composite_(i[0]); });
    return {gradient(grads[0].to(output_dtypes[0]).contiguous())};
  }

 protected:
  using NativeBackward::NativeBackward;
  void attach_input(Tensor& out, const Tensor& x, std::function<Tensor(const Tensor&)> composite) {
    attach(out, {x});
    saved_.emplace_back(x, false);
    composite_ = std::move(composite);
    in_shape_ = Shape(x.sizes());
  }
  virtual Tensor gradient(const Tensor& g) = 0;

  Shape in_shape_;
  std::function<Tensor(const Tensor&)> composite_;
};

// --- im2col ---

class Im2colBackward final : public OneInputBackward {
 public:
  Im2colBackward() : OneInputBackward("Im2ColBackward0") {}
  static void attach_to(Tensor& out, const Tensor& x, const nk::Im2col& args,
                        std::function<Tensor(const Tensor&)> composite) {
    auto node = std::make_shared<Im2colBackward>();
    node->attach_input(out, x, std::move(composite));
    node->args_ = args;
  }

 private:
  Tensor gradient(const Tensor& g) override {
    return filled(in_shape_, g.dtype(), [&](auto zero, const Out& dx) {
      using T = decltype(zero);
      nk::col2im<T>(read<T>(g), dx.data<T>(), args_);
    });
  }
  nk::Im2col args_{};
};

// --- max_pool2d ---

class MaxPoolBackward final : public OneInputBackward {
 public:
  MaxPoolBackward() : OneInputBackward("MaxPool2DWithIndicesBackward0") {}
  static void attach_to(Tensor& out, const Tensor& x, const nk::Pool2d& args, BufferPtr where,
                        std::function<Tensor(const Tensor&)> composite) {
    auto node = std::make_shared<MaxPoolBackward>();
    node->attach_input(out, x, std::move(composite));
    node->args_ = args;
    node->where_ = std::move(where);
  }

  void release_variables() override {
    NativeBackward::release_variables();
    where_.reset();
  }

 private:
  Tensor gradient(const Tensor& g) override {
    return filled(in_shape_, g.dtype(), [&](auto zero, const Out& dx) {
      using T = decltype(zero);
      nk::max_pool2d_backward<T>(read<T>(g), where_->as<int32_t>(), dx.data<T>(), args_);
    });
  }
  nk::Pool2d args_{};
  BufferPtr where_;
};

// --- avg_pool2d and adaptive_avg_pool2d ---

class AvgPoolBackward final : public OneInputBackward {
 public:
  explicit AvgPoolBackward(const char* name) : OneInputBackward(name) {}
  static void attach_to(Tensor& out, const Tensor& x, const char* name, AvgPoolWindows windows,
                        std::function<Tensor(const Tensor&)> composite) {
    auto node = std::make_shared<AvgPoolBackward>(name);
    node->attach_input(out, x, std::move(composite));
    node->windows_ = std::move(windows);
  }

  // The kernels' view of `w` over x of `sizes` [N, C, H, W].
  static nk::AvgPool2d kernel_args(const AvgPoolWindows& w, const Shape& sizes) {
    return {sizes[0] * sizes[1],        sizes[2],      sizes[3],      int64_t(w.rows.size() / 2),
            int64_t(w.cols.size() / 2), w.rows.data(), w.cols.data(), w.divisor.data()};
  }

 private:
  Tensor gradient(const Tensor& g) override {
    const nk::AvgPool2d args = kernel_args(windows_, in_shape_);
    return filled(in_shape_, g.dtype(), [&](auto zero, const Out& dx) {
      using T = decltype(zero);
      nk::avg_pool2d_backward<T>(read<T>(g), dx.data<T>(), args);
    });
  }
  AvgPoolWindows windows_;
};

// --- gelu ---

class GeluBackward final : public NativeBackward {
 public:
  explicit GeluBackward(bool tanh_form) : NativeBackward("GeluBackward0"), tanh_form_(tanh_form) {}
  static void attach_to(Tensor& out, const Tensor& x, bool tanh_form) {
    auto node = std::make_shared<GeluBackward>(tanh_form);
    node->attach(out, {x});
    node->saved_.emplace_back(x, false);
  }

  tensor_list apply(tensor_list&& grads) override {
    const Tensor x = saved(0);
    if (autograd::GradMode::is_enabled())
      return recompute({x}, grads[0],
                       [&](const tensor_list& i) { return kiln::gelu(i[0], tanh_form_ ? "tanh" : "none"); });
    const Tensor dy = grads[0].to(x.dtype()).contiguous();
    return {filled(Shape(x.sizes()), x.dtype(), [&](auto zero, const Out& dx) {
      using T = decltype(zero);
      nk::gelu_backward<T>(read<T>(dy), read<T>(x), dx.data<T>(), x.numel(), tanh_form_);
    })};
  }

 private:
  bool tanh_form_;
};

// --- cross_entropy ---

class CrossEntropyBackward final : public NativeBackward {
 public:
  CrossEntropyBackward() : NativeBackward("NllLossBackward0") {}
  static void attach_to(Tensor& out, const Tensor& x, const Tensor& target, std::vector<double> lse,
                        std::string reduction, int64_t ignore_index, double count) {
    auto node = std::make_shared<CrossEntropyBackward>();
    node->attach(out, {x});
    node->saved_.emplace_back(x, false);
    node->target_ = target;
    node->lse_ = std::move(lse);
    node->reduction_ = std::move(reduction);
    node->ignore_index_ = ignore_index;
    node->count_ = count;
  }

  tensor_list apply(tensor_list&& grads) override {
    const Tensor x = saved(0);
    if (autograd::GradMode::is_enabled())
      return recompute({x}, grads[0], [&](const tensor_list& i) {
        return cross_entropy_loss(i[0], target_, Tensor(), reduction_, ignore_index_, 0.0);
      });
    const int64_t rows = x.size(0), cols = x.size(1);
    std::vector<double> scale(static_cast<size_t>(rows));
    const Tensor g = grads[0].to(kDouble).contiguous();
    const double* gv = read<double>(g);
    for (int64_t i = 0; i < rows; ++i)
      scale[size_t(i)] = reduction_ == "none" ? gv[i] : reduction_ == "mean" ? gv[0] / count_ : gv[0];
    return {filled(Shape(x.sizes()), x.dtype(), [&](auto zero, const Out& dx) {
      using T = decltype(zero);
      nk::cross_entropy_backward<T>(read<T>(x), read<int64_t>(target_), lse_.data(), scale.data(), dx.data<T>(), rows,
                                    cols, ignore_index_);
    })};
  }

  void release_variables() override {
    NativeBackward::release_variables();
    target_ = Tensor();
  }

 private:
  Tensor target_;
  std::vector<double> lse_;
  std::string reduction_;
  int64_t ignore_index_ = -100;
  double count_ = 0;
};

// Whether `t` is all of its storage, contiguous, on the host, in memory of kiln's own: an
// optimizer's state or parameter that its update may write in place.
bool whole_storage(const Tensor& t, ScalarType dtype) {
  const TensorImpl& impl = *t.unsafeGetTensorImpl();
  return t.defined() && t.dtype() == dtype && on_host(t) && impl.offset == 0 && t.is_contiguous() &&
         impl.storage->numel == t.numel() && !impl.storage->memory;
}

// Memory of `t` (whole_storage) to write in place; its version is bumped, as an in-place op's.
template <typename T>
T* write_in_place(Tensor& t) {
  T* p = static_cast<T*>(t.data_ptr());
  ++t.unsafeGetTensorImpl()->storage->version;
  return p;
}

}  // namespace

bool enabled() { return !config().lazy && t_off == 0; }

std::optional<Tensor> layer_norm(const Tensor& input, int64_t normalized_dims, const Tensor& w, const Tensor& b,
                                 double eps) {
  if (!enabled() || !float_on_host(input) || input.numel() == 0) return std::nullopt;
  for (const Tensor* p : {&w, &b})
    if (p->defined() && (p->dtype() != input.dtype() || !on_host(*p))) return std::nullopt;
  const Tensor x = input.contiguous(), wc = w.defined() ? w.contiguous() : w, bc = b.defined() ? b.contiguous() : b;
  const int64_t cols = numel_of(Shape(x.sizes().end() - normalized_dims, x.sizes().end()));
  const int64_t rows = x.numel() / cols;
  Out mean({rows}, x.dtype()), rstd({rows}, x.dtype());
  Tensor out = filled(Shape(x.sizes()), x.dtype(), [&](auto zero, const Out& y) {
    using T = decltype(zero);
    nk::layer_norm_forward<T>(read<T>(x), read<T>(wc), read<T>(bc), y.data<T>(), mean.data<T>(), rstd.data<T>(), rows,
                              cols, eps);
  });
  if (wants_grad({x, wc, bc}))
    LayerNormBackward::attach_to(out, x, wc, bc, std::move(mean), std::move(rstd), normalized_dims, eps);
  return out;
}

std::optional<Tensor> batch_norm(const Tensor& input, const Tensor& w, const Tensor& b, const Tensor& running_mean,
                                 const Tensor& running_var, double momentum, double eps, BatchNormComposite composite) {
  if (!enabled() || !float_on_host(input) || input.numel() == 0) return std::nullopt;
  for (const Tensor* p : {&w, &b})
    if (p->defined() && (p->dtype() != input.dtype() || !on_host(*p))) return std::nullopt;
  const Tensor x = input.contiguous(), wc = w.defined() ? w.contiguous() : w, bc = b.defined() ? b.contiguous() : b;
  const int64_t n = x.size(0), c = x.size(1), inner = x.numel() / (n * c);
  Out y(Shape(x.sizes()), x.dtype()), mean({c}, x.dtype()), rstd({c}, x.dtype());
  Out var({c}, kDouble);
  with_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    nk::batch_norm_forward<T>(read<T>(x), read<T>(wc), read<T>(bc), y.data<T>(), mean.data<T>(), rstd.data<T>(),
                              var.data<double>(), n, c, inner, eps);
  });
  count_kernel();
  if (running_mean.defined() || running_var.defined()) {
    autograd::NoGradGuard no_grad;
    const double count = double(n * inner);
    if (running_mean.defined())
      Tensor(running_mean).mul_(1 - momentum).add_(mean.tensor().to(running_mean.dtype()) * momentum);
    if (running_var.defined())
      Tensor(running_var)
          .mul_(1 - momentum)
          .add_(var.tensor().to(running_var.dtype()) * (momentum * count / (count - 1)));
  }
  Tensor out = y.tensor();
  if (wants_grad({x, wc, bc}))
    BatchNormBackward::attach_to(out, x, wc, bc, mean.buffer, rstd.buffer, std::move(composite));
  return out;
}

std::optional<Tensor> softmax(const Tensor& input, int64_t dim, bool log) {
  if (!enabled() || !float_on_host(input) || input.dim() == 0 || input.numel() == 0) return std::nullopt;
  const Tensor x = input.contiguous();
  const AlongDim a(x, dim);
  Tensor out = filled(Shape(x.sizes()), x.dtype(), [&](auto zero, const Out& y) {
    using T = decltype(zero);
    nk::softmax_forward<T>(read<T>(x), y.data<T>(), a.outer, a.n, a.inner, log);
  });
  if (wants_grad({x})) SoftmaxBackward::attach_to(out, x, log, dim);
  return out;
}

std::optional<Tensor> im2col(const Tensor& input, const nk::Im2col& args, Shape sizes,
                             std::function<Tensor(const Tensor&)> composite) {
  if (!enabled() || !float_on_host(input) || input.numel() == 0) return std::nullopt;
  const Tensor x = input.contiguous();
  Tensor out = filled(std::move(sizes), x.dtype(), [&](auto zero, const Out& cols) {
    using T = decltype(zero);
    nk::im2col<T>(read<T>(x), cols.data<T>(), args);
  });
  if (wants_grad({x})) Im2colBackward::attach_to(out, x, args, std::move(composite));
  return out;
}

std::optional<Tensor> max_pool2d(const Tensor& input, const nk::Pool2d& args,
                                 std::function<Tensor(const Tensor&)> composite) {
  if (!enabled() || !float_on_host(input) || input.numel() == 0 || input.size(2) * input.size(3) > INT32_MAX)
    return std::nullopt;
  const Tensor x = input.contiguous();
  Out y(Shape{x.size(0), x.size(1), args.oh, args.ow}, x.dtype());
  BufferPtr where = make_buffer(size_t(args.planes * args.oh * args.ow) * sizeof(int32_t));
  with_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    nk::max_pool2d_forward<T>(read<T>(x), y.data<T>(), where->as<int32_t>(), args);
  });
  count_kernel();
  Tensor out = y.tensor();
  if (wants_grad({x})) MaxPoolBackward::attach_to(out, x, args, std::move(where), std::move(composite));
  return out;
}

std::optional<Tensor> avg_pool2d(const Tensor& input, AvgPoolWindows windows, const char* name,
                                 std::function<Tensor(const Tensor&)> composite) {
  if (!enabled() || !float_on_host(input) || input.numel() == 0) return std::nullopt;
  const Tensor x = input.contiguous();
  const nk::AvgPool2d args = AvgPoolBackward::kernel_args(windows, Shape(x.sizes()));
  Tensor out = filled(Shape{x.size(0), x.size(1), args.oh, args.ow}, x.dtype(), [&](auto zero, const Out& y) {
    using T = decltype(zero);
    nk::avg_pool2d_forward<T>(read<T>(x), y.data<T>(), args);
  });
  if (wants_grad({x})) AvgPoolBackward::attach_to(out, x, name, std::move(windows), std::move(composite));
  return out;
}

std::optional<Tensor> gelu(const Tensor& input, bool tanh_form) {
  if (!enabled() || !float_on_host(input) || input.numel() == 0) return std::nullopt;
  const Tensor x = input.contiguous();
  Tensor out = filled(Shape(x.sizes()), x.dtype(), [&](auto zero, const Out& y) {
    using T = decltype(zero);
    nk::gelu_forward<T>(read<T>(x), y.data<T>(), x.numel(), tanh_form);
  });
  if (wants_grad({x})) GeluBackward::attach_to(out, x, tanh_form);
  return out;
}

std::optional<Tensor> cross_entropy(const Tensor& logits, const Tensor& target, const std::string& reduction,
                                    int64_t ignore_index) {
  if (!enabled() || !float_on_host(logits) || logits.dim() != 2 || !on_host(target) || logits.numel() == 0)
    return std::nullopt;
  const Tensor x = logits.contiguous(), t = target.contiguous();
  const int64_t rows = x.size(0), cols = x.size(1);
  const int64_t* tv = read<int64_t>(t);
  double count = 0;
  for (int64_t i = 0; i < rows; ++i) {
    KILN_CHECK(tv[i] == ignore_index || (tv[i] >= 0 && tv[i] < cols), "cross_entropy: target ", tv[i],
               " is out of bounds for ", cols, " classes (input ", shape_str(logits), ", target ", shape_str(target),
               ")");
    count += tv[i] != ignore_index;
  }
  std::vector<double> lse(static_cast<size_t>(rows));
  Out loss({rows}, x.dtype());
  Tensor out;
  with_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* l = loss.data<T>();
    nk::cross_entropy_forward<T>(read<T>(x), tv, l, lse.data(), rows, cols, ignore_index);
    if (reduction == "none") {
      out = loss.tensor();
      return;
    }
    double total = 0;
    for (int64_t i = 0; i < rows; ++i) total += double(l[i]);
    Out reduced({}, x.dtype());
    *reduced.data<T>() = T(reduction == "sum" ? total
                           : count == 0       ? std::numeric_limits<double>::quiet_NaN()
                                              : total / count);
    out = reduced.tensor();
  });
  count_kernel();
  if (wants_grad({x})) CrossEntropyBackward::attach_to(out, x, t, std::move(lse), reduction, ignore_index, count);
  return out;
}

bool adam_step(Tensor& p, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, const nk::AdamArgs& args) {
  const ScalarType dtype = p.dtype();
  if (!enabled() || (dtype != kFloat && dtype != kDouble) || !whole_storage(p, dtype) ||
      !whole_storage(exp_avg, dtype) || !whole_storage(exp_avg_sq, dtype) || grad.dtype() != dtype || !on_host(grad) ||
      grad.sizes() != p.sizes())
    return false;
  const Tensor g = grad.contiguous();
  with_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* gv = read<T>(g);
    nk::adam_step<T>(write_in_place<T>(p), gv, write_in_place<T>(exp_avg), write_in_place<T>(exp_avg_sq), p.numel(),
                     args);
  });
  count_kernel();
  return true;
}

bool sgd_step(Tensor& p, const Tensor& grad, Tensor& momentum_buffer, const nk::SgdArgs& args) {
  const ScalarType dtype = p.dtype();
  if (!enabled() || (dtype != kFloat && dtype != kDouble) || !whole_storage(p, dtype) ||
      (momentum_buffer.defined() && !whole_storage(momentum_buffer, dtype)) || grad.dtype() != dtype ||
      !on_host(grad) || grad.sizes() != p.sizes())
    return false;
  const Tensor g = grad.contiguous();
  with_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* gv = read<T>(g);
    T* buf = momentum_buffer.defined() ? write_in_place<T>(momentum_buffer) : nullptr;
    nk::sgd_step<T>(write_in_place<T>(p), gv, buf, p.numel(), args);
  });
  count_kernel();
  return true;
}

}  // namespace kiln::detail::native
