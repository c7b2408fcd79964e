// Creation ops. Constants are lazy Const nodes (a zeros() that is never read costs no memory);
// data from the user and random numbers are made on the host at once, with the same generator and
// transformations as libtorch's CPU generator, so a seeded program draws the same numbers.
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>

#include "frontend/autograd.h"
#include "frontend/derivatives.h"
#include "frontend/ops.h"
#include "frontend/tensor_data.h"

namespace kiln {

namespace {

void check_sizes(IntArrayRef size, const char* op) {
  KILN_CHECK(int(size.size()) <= kMaxDims, op, ": at most ", kMaxDims, " dimensions are supported, got ", size.vec());
  for (auto d : size) KILN_CHECK(d >= 0, op, ": negative dimension ", d, " in size ", size.vec());
}

// The options of a *_like function: t's dtype and device unless `o` names others.
TensorOptions like(const Tensor& t, TensorOptions o) {
  if (!o.has_dtype()) o = o.dtype(t.dtype());
  return o.has_device() ? o : o.device(t.device());
}

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.has_device() && options.device() != t.device()) t = t.to(options.device(), t.dtype());
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

// A tensor whose content is host data already computed (an Input node).
template <typename F>
Tensor from_host(IntArrayRef size, ScalarType dtype, F&& fill) {
  BufferPtr buffer = make_buffer(numel_of(size) * element_size(dtype));
  fill(buffer->data(), numel_of(size));
  return detail::wrap(detail::record_input(size, dtype, std::move(buffer)));
}

template <typename Src>
void convert_into(void* dst, ScalarType t, const Src* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_integral_v<Src>)
      write_integer_element(dst, t, i, int64_t(src[i]));
    else
      write_element(dst, t, i, double(src[i]));
  }
}

template <typename Src>
Tensor from_values(const Src* values, IntArrayRef size, ScalarType default_dtype, const TensorOptions& o) {
  ScalarType t = o.has_dtype() ? o.dtype() : default_dtype;
  return finish(from_host(size, t, [&](void* dst, int64_t n) { convert_into(dst, t, values, n); }), o);
}

ScalarType float_dtype(const TensorOptions& o) { return o.has_dtype() ? o.dtype() : get_default_dtype_as_scalartype(); }

// --- libtorch's CPU generator: mt19937, with its transformations to uniform and normal values ---
struct Generator {
  std::mt19937 engine{uint32_t(67280421310721ULL)};
  std::optional<double> next_double_normal;
  std::mutex mu;
  uint32_t random() { return engine(); }
  uint64_t random64() {
    uint64_t hi = engine(), lo = engine();
    return (hi << 32) | lo;
  }
  float uniform_float(float from, float to) {
    float x = float(random() & ((1u << 24) - 1)) * (1.0f / float(1u << 24));
    // Fused, as libtorch's AVX2/AVX512 kernels (built with FMA) compute it: a plain multiply-add
    // differs in the last bits, e.g. in every Linear's initial weights.
    return std::fma(x, to - from, from);
  }
  double uniform_double(double from, double to) {
    double x = double(random64() & ((uint64_t(1) << 53) - 1)) * (1.0 / double(uint64_t(1) << 53));
    return std::fma(x, to - from, from);
  }
  double normal_double(double mean, double stdv) {
    if (next_double_normal) {
      double r = *next_double_normal * stdv + mean;
      next_double_normal.reset();
      return r;
    }
    double u1 = uniform_double(0, 1), u2 = uniform_double(0, 1);
    double r = std::sqrt(-2.0 * std::log(1.0 - u2)), theta = 2.0 * M_PI * u1;
    next_double_normal = r * std::sin(theta);
    return r * std::cos(theta) * stdv + mean;
  }
};
Generator& generator() {
  static Generator g;
  return g;
}

template <typename T>
T uniform_value(Generator& g, T from, T to) {
  if constexpr (std::is_same_v<T, float>)
    return g.uniform_float(from, to);
  else
    return g.uniform_double(from, to);
}

// libtorch's normal_fill: uniforms for the whole tensor, then Box-Muller over blocks of 16.
template <typename T>
void normal_fill(Generator& g, T* data, int64_t n, T mean, T stdv) {
  auto fill16 = [&](T* d) {
    for (int j = 0; j < 8; ++j) {
      const T u1 = 1 - d[j], u2 = d[j + 8];
      const T radius = std::sqrt(-2 * std::log(u1));
      const T theta = T(2.0f * M_PI * u2);
      d[j] = radius * std::cos(theta) * stdv + mean;
      d[j + 8] = radius * std::sin(theta) * stdv + mean;
    }
  };
  for (int64_t i = 0; i < n; ++i) data[i] = uniform_value<T>(g, 0, 1);
  for (int64_t i = 0; i + 16 <= n; i += 16) fill16(data + i);
  if (n % 16 != 0) {
    T* tail = data + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = uniform_value<T>(g, 0, 1);
    fill16(tail);
  }
}

template <typename T>
void normal_into(T* data, int64_t n, double mean, double stdv) {
  auto& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  if (n >= 16) return normal_fill<T>(g, data, n, T(mean), T(stdv));
  for (int64_t i = 0; i < n; ++i) data[i] = T(g.normal_double(mean, stdv));
}

template <typename T>
void uniform_into(T* data, int64_t n, double from, double to) {
  auto& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  for (int64_t i = 0; i < n; ++i) data[i] = uniform_value<T>(g, T(from), T(to));
}

}  // namespace

namespace detail {
// Fills a host buffer of `dtype` with U(from, to) or N(mean, std) values (used by nn::init too).
// float16 and bfloat16 draw float32 values (one draw per element, as libtorch) and round them.
void round_floats_into(void* data, ScalarType dtype, const std::vector<float>& drawn) {
  for (size_t i = 0; i < drawn.size(); ++i) write_element(data, dtype, int64_t(i), drawn[i]);
}
void fill_uniform(void* data, ScalarType dtype, int64_t n, double from, double to) {
  KILN_CHECK(is_floating(dtype), "uniform_: expected a floating point tensor, got ", dtype);
  if (is_reduced_float(dtype)) {
    std::vector<float> drawn(size_t(std::max<int64_t>(n, 0)));
    uniform_into(drawn.data(), n, from, to);
    return round_floats_into(data, dtype, drawn);
  }
  dtype == kFloat ? uniform_into(static_cast<float*>(data), n, from, to)
                  : uniform_into(static_cast<double*>(data), n, from, to);
}
void fill_normal(void* data, ScalarType dtype, int64_t n, double mean, double stdv) {
  KILN_CHECK(is_floating(dtype), "normal_: expected a floating point tensor, got ", dtype);
  if (is_reduced_float(dtype)) {
    std::vector<float> drawn(size_t(std::max<int64_t>(n, 0)));
    normal_into(drawn.data(), n, mean, stdv);
    return round_floats_into(data, dtype, drawn);
  }
  dtype == kFloat ? normal_into(static_cast<float*>(data), n, mean, stdv)
                  : normal_into(static_cast<double*>(data), n, mean, stdv);
}
// 1 with probability p, else 0, as libtorch's CPU bernoulli_(double p) draws them (without MKL,
// as Debian builds it): one double uniform per element, in order.
void fill_bernoulli(float* data, int64_t n, double p) {
  auto& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  for (int64_t i = 0; i < n; ++i) data[i] = g.uniform_double(0, 1) < p ? 1.0f : 0.0f;
}
}  // namespace detail

void manual_seed(uint64_t seed) {
  auto& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  g.engine.seed(uint32_t(seed & 0xffffffff));
  g.next_double_normal.reset();
}

// The default float dtype whatever the value's type, as libtorch (full infers it from the value).
Tensor scalar_tensor(const Scalar& s, const TensorOptions& o) {
  return full({}, s, o.has_dtype() ? o : o.dtype(get_default_dtype_as_scalartype()));
}

Tensor full(IntArrayRef size, const Scalar& value, const TensorOptions& o) {
  check_sizes(size, "full");
  // libtorch infers full's dtype from the value: bool, int64 or the default float.
  ScalarType t = o.has_dtype() ? o.dtype() : value.type() == kDouble ? get_default_dtype_as_scalartype() : value.type();
  KILN_CHECK(detail::converts_without_overflow(value, t), "full: value ", value.toDouble(),
             " cannot be converted to type ", t, " without overflow (size ", size.vec(), ")");
  ir::Node n;
  n.op = ir::Op::Const;
  n.dtype = t;
  n.shape = size.vec();
  detail::set_const_value(n, value);
  return finish(detail::wrap(tracer::record(std::move(n))), o);
}
Tensor zeros(IntArrayRef size, const TensorOptions& o) { return full(size, 0.0, o.dtype(float_dtype(o))); }
Tensor ones(IntArrayRef size, const TensorOptions& o) { return full(size, 1.0, o.dtype(float_dtype(o))); }
Tensor empty(IntArrayRef size, const TensorOptions& o) { return zeros(size, o); }
Tensor zeros_like(const Tensor& t, const TensorOptions& o) { return zeros(t.sizes(), like(t, o)); }
Tensor ones_like(const Tensor& t, const TensorOptions& o) { return ones(t.sizes(), like(t, o)); }
Tensor empty_like(const Tensor& t, const TensorOptions& o) { return zeros_like(t, o); }
Tensor detail::zeros_in_memory(const Tensor& like) {
  Tensor zeros = from_host(like.sizes(), like.dtype(),
                           [&](void* dst, int64_t n) { std::memset(dst, 0, size_t(n) * element_size(like.dtype())); });
  // On like's device: its memory there is what the flush gives an Input node on that device.
  zeros.unsafeGetTensorImpl()->storage->cuda_device = like.unsafeGetTensorImpl()->storage->cuda_device;
  return zeros;
}
Tensor full_like(const Tensor& t, const Scalar& v, const TensorOptions& o) { return full(t.sizes(), v, like(t, o)); }

namespace {
// As libtorch computes an int64 arange: in int64, exact (through doubles, the values near 2^53 and
// above came out rounded), from the bounds and step truncated to integers (a step of 1.5 is 1).
Tensor arange_of_longs(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  for (const Scalar* bound : {&start, &end, &step})
    KILN_CHECK(detail::converts_without_overflow(*bound, kLong), "arange: value ", bound->toDouble(),
               " cannot be converted to type int64 without overflow (start ", start.toDouble(), ", end ",
               end.toDouble(), ", step ", step.toDouble(), ")");
  const int64_t s = start.toLong(), e = end.toLong(), st = step.toLong();
  KILN_CHECK(st != 0, "arange: step must be nonzero (step ", step.toDouble(), " as int64)");
  KILN_CHECK((st > 0 && e >= s) || (st < 0 && e <= s),
             "arange: upper bound and larger bound inconsistent with step sign (start ", s, ", end ", e, ", step ", st,
             ")");
  // In unsigned arithmetic, where the span from start to end always fits.
  const uint64_t span = st > 0 ? uint64_t(e) - uint64_t(s) : uint64_t(s) - uint64_t(e);
  const uint64_t stride = st > 0 ? uint64_t(st) : 0 - uint64_t(st);
  const int64_t n = int64_t(span / stride + (span % stride != 0));
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = int64_t(uint64_t(s) + uint64_t(i) * uint64_t(st));
  return from_values(v.data(), {n}, kLong, o);
}
}  // namespace

Tensor arange(const Scalar& end, const TensorOptions& o) { return arange(0, end, 1, o); }
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& o) { return arange(start, end, 1, o); }
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  const bool integral = start.isIntegral(true) && end.isIntegral(true) && step.isIntegral(true);
  ScalarType t = o.has_dtype() ? o.dtype() : integral ? kLong : get_default_dtype_as_scalartype();
  if (t == kLong) return arange_of_longs(start, end, step, o.dtype(t));
  const double s = start.toDouble(), e = end.toDouble(), st = step.toDouble();
  KILN_CHECK(st != 0, "arange: step must be nonzero");
  KILN_CHECK((st > 0 && e >= s) || (st < 0 && e <= s),
             "arange: upper bound and larger bound inconsistent with step sign (start ", s, ", end ", e, ", step ", st,
             ")");
  const int64_t n = int64_t(std::ceil((e - s) / st));
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = s + double(i) * st;
  return from_values(v.data(), {n}, t, o.dtype(t));
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o) {
  KILN_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got ", steps);
  // As libtorch: the first half counts up from start, the second half down from end, in the
  // result's precision (float32 arithmetic for float32), with the multiply-add fused as libtorch's
  // build fuses it.
  auto fill = [&](auto zero) {
    using T = decltype(zero);
    const T s = T(start.toDouble()), e = T(end.toDouble());
    const T step = steps > 1 ? (e - s) / T(steps - 1) : T(0);
    const int64_t half = steps == 1 ? 1 : steps / 2;  // one step is start
    std::vector<T> v(steps);
    for (int64_t i = 0; i < steps; ++i)
      v[i] = i < half ? std::fma(step, T(i), s) : std::fma(-step, T(steps - i - 1), e);
    return from_values(v.data(), {steps}, float_dtype(o), o);
  };
  return float_dtype(o) == kFloat ? fill(0.0f) : fill(0.0);
}

Tensor eye(int64_t n, const TensorOptions& o) { return eye(n, n, o); }
Tensor eye(int64_t n, int64_t m, const TensorOptions& o) {
  KILN_CHECK(n >= 0 && m >= 0, "eye: n and m must be non-negative, got ", n, " and ", m);
  std::vector<double> v(n * m, 0.0);
  for (int64_t i = 0; i < std::min(n, m); ++i) v[i * m + i] = 1;
  return from_values(v.data(), {n, m}, float_dtype(o), o);
}

Tensor rand(IntArrayRef size, const TensorOptions& o) {
  check_sizes(size, "rand");
  ScalarType t = float_dtype(o);
  return finish(from_host(size, t, [&](void* d, int64_t n) { detail::fill_uniform(d, t, n, 0, 1); }), o);
}

Tensor randn(IntArrayRef size, const TensorOptions& o) {
  check_sizes(size, "randn");
  ScalarType t = float_dtype(o);
  return finish(from_host(size, t, [&](void* d, int64_t n) { detail::fill_normal(d, t, n, 0, 1); }), o);
}

Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& o) { return randint(0, high, size, o); }
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& o) {
  check_sizes(size, "randint");
  KILN_CHECK(low < high, "randint: expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
  const uint64_t range = uint64_t(high - low);
  std::vector<int64_t> v(numel_of(size.vec()));
  auto& g = generator();
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (auto& x : v) x = int64_t((range >= (uint64_t(1) << 32) ? g.random64() : g.random()) % range) + low;
  }
  return from_values(v.data(), size, kLong, o);
}

Tensor randperm(int64_t n, const TensorOptions& o) {
  KILN_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  auto& g = generator();
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (int64_t i = 0; i + 1 < n; ++i) std::swap(v[i], v[i + int64_t(g.random() % uint64_t(n - i))]);
  }
  return from_values(v.data(), {n}, kLong, o);
}

Tensor bernoulli(const Tensor& probabilities) {
  KILN_CHECK(probabilities.is_floating_point(), "bernoulli: expected a floating point tensor of probabilities, got ",
             detail::shape_str(probabilities));
  const std::vector<float> p = probabilities.to(kFloat).to_vector<float>();
  for (float v : p)
    KILN_CHECK(v >= 0 && v <= 1, "bernoulli: expected all probabilities in [0, 1], got ", v, " (input ",
               detail::shape_str(probabilities), ")");
  std::vector<float> drawn(p.size());
  {
    auto& g = generator();  // libtorch draws a float uniform per element for tensor probabilities
    std::lock_guard<std::mutex> lock(g.mu);
    for (size_t i = 0; i < p.size(); ++i) drawn[i] = g.uniform_float(0, 1) < p[i] ? 1.0f : 0.0f;
  }
  return from_values(drawn.data(), probabilities.sizes(), kFloat, probabilities.dtype());
}
Tensor bernoulli(const Tensor& self, double p) { return empty_like(self).bernoulli_(p); }

Tensor rand_like(const Tensor& t, const TensorOptions& o) { return rand(t.sizes(), like(t, o)); }
Tensor randn_like(const Tensor& t, const TensorOptions& o) { return randn(t.sizes(), like(t, o)); }

Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& o) { return from_blob(data, sizes, Deleter(), o); }
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o) {
  return from_blob(data, sizes, strides, Deleter(), o);
}
Tensor from_blob(void* data, IntArrayRef sizes, const Deleter& deleter, const TensorOptions& o) {
  return from_blob(data, sizes, contiguous_strides(sizes.vec()), deleter, o);
}
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const Deleter& deleter, const TensorOptions& o) {
  KILN_CHECK(o.device_type() == kCPU, "from_blob: kiln takes host memory only, but the options name ", o.device(),
             " (make the tensor on the CPU, then .to(device))");
  check_sizes(sizes, "from_blob");
  KILN_CHECK(strides.size() == sizes.size(), "from_blob: sizes ", sizes.vec(), " and strides ", strides.vec(),
             " differ in length");
  int64_t extent = numel_of(sizes.vec()) > 0 ? 1 : 0;  // elements from the first to the last one used
  for (size_t d = 0; d < sizes.size(); ++d) {
    KILN_CHECK(strides[d] >= 0, "from_blob: negative stride ", strides[d], " (sizes ", sizes.vec(), ", strides ",
               strides.vec(), ")");
    if (extent > 0) extent += (sizes[d] - 1) * strides[d];
  }
  KILN_CHECK(data || extent == 0, "from_blob: data is null for sizes ", sizes.vec(), " and strides ", strides.vec());
  const ScalarType t = float_dtype(o);
  auto memory = std::make_shared<Buffer>(data, size_t(extent) * element_size(t), deleter);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = tracer::new_storage_over_memory(detail::record_input({extent}, t, std::move(memory)));
  impl->sizes = sizes;
  impl->strides = strides;
  impl->dtype = t;
  return finish(Tensor(std::move(impl)), o);
}

Tensor detail::copy_of_host_data(const void* data, IntArrayRef sizes, ScalarType dtype) {
  return from_host(sizes, dtype, [&](void* dst, int64_t n) {
    if (n > 0) std::memcpy(dst, data, size_t(n) * element_size(dtype));  // an empty vector's data may be null
  });
}

}  // namespace kiln
