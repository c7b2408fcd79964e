#include "random_program.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace kiln::fuzz {
namespace {

// The ops a program draws from, by family. Elementwise ops come from the frontend's op list
// (frontend/elementwise_ops.def, which names every elementwise table op and composite), a one-operand
// op applied to its operand squashed into (-2, 2) (tanh(x) * 2, see squashed_for), so that exp,
// reciprocal or lgamma do not overflow chains of them: outside an op's domain both backends give NaN, which compare()
// accepts on both sides. Below them, the ops with parameters or domains of their own.
struct ListedUnary {
  const char* name;
  Tensor (*apply)(const Tensor&);
};
const ListedUnary kListedUnary[] = {
#define KILN_UNARY(name) {#name, [](const Tensor& x) { return x.name(); }},
#include "frontend/elementwise_ops.def"
};
struct ListedBinary {
  const char* name;
  Tensor (*apply)(const Tensor&, const Tensor&);
};
const ListedBinary kListedBinary[] = {
#define KILN_BINARY(name) {#name, [](const Tensor& a, const Tensor& b) { return a.name(b); }},
#include "frontend/elementwise_ops.def"
};
const char* kUnary[] = {"exp_tanh", "log_abs", "sqrt_abs", "gelu", "gelu_tanh", "clamp", "reciprocal_abs"};
const char* kBinary[] = {"add", "sub", "mul", "div_safe", "maximum", "minimum", "pow_abs", "where_gt"};
const char* kReduce[] = {
    "sum",  "mean",   "amax",    "amin",         "var",  "logsumexp", "softmax", "log_softmax",
    "prod", "cumsum", "cumprod", "logcumsumexp", "sort", "cummax"};  // the last five: scans along a dim
// Integer programs draw from these: ops exact on integers, wrapping alike on every backend, with
// shift counts kept in [0, 15] (past an int8's or int16's width: the bits shifted out are lost).
const char* kIntegerUnary[] = {"neg", "abs", "bitwise_not", "sign", "add_scalar", "mul_scalar", "cast"};
const char* kIntegerBinary[] = {"add",          "sub",        "mul",         "maximum",    "minimum",
                                "bitwise_and",  "bitwise_or", "bitwise_xor", "shift_left", "shift_right",
                                "floor_divide", "fmod",       "where_gt"};
const ScalarType kIntegerDtypes[] = {kLong, kInt, kShort, kChar, kByte};
// nn programs draw these besides the float ops; conv2d and the pools see the value as a batch of
// one-channel images of its last two dims.
const char* kNnOps[] = {"layer_norm", "linear", "conv2d", "max_pool2d", "avg_pool2d", "gather", "cross_entropy"};
const char* kIntegerReduce[] = {"sum", "amax", "amin", "cumsum", "cummax"};
const char* kView[] = {"transpose", "permute", "narrow", "select", "unsqueeze", "expand", "flatten", "slice2"};

template <size_t N>
const char* pick(std::mt19937_64& rng, const char* const (&options)[N]) {
  return options[rng() % N];
}
// A listed op (as "unary:name" or "binary:name") or one of `own`, each equally likely.
template <typename Listed, size_t L, size_t N>
std::string pick_op(std::mt19937_64& rng, const Listed (&listed)[L], const char* prefix, const char* const (&own)[N]) {
  const size_t i = rng() % (L + N);
  return i < L ? std::string(prefix) + listed[i].name : std::string(own[i - L]);
}
template <typename Listed, size_t L>
const Listed* find_listed(const Listed (&listed)[L], const std::string& name) {
  for (const auto& l : listed)
    if (name == l.name) return &l;
  return nullptr;
}

// A one-operand op's operand, squashed into (-2, 2); into (0.5, 2.5) for the gamma family, whose
// poles at 0 and -1 make any float32 rounding difference near them a large one in the gradient.
Tensor squashed_for(const std::string& name, const Tensor& x) {
  if (name == "lgamma" || name == "digamma") return x.tanh() + 1.5;
  return x.tanh() * 2;
}

// A value as a batch of one-channel images [B, 1, H, W] of its last two dims.
Tensor as_images(const Tensor& x) {
  const int64_t r = x.dim();
  return x.reshape({-1, 1, r >= 2 ? x.size(-2) : 1, r >= 1 ? x.size(-1) : 1});
}

// An "input" instruction's dtype: its own where it names one (a partner of another dtype).
ScalarType input_dtype(const Instr& in, ScalarType program_dtype) {
  return in.ints.empty() ? program_dtype : ScalarType(in.ints[0]);
}

Tensor apply_instr(const Instr& in, const std::vector<Tensor>& v) {
  auto a = [&](int i) { return v[in.args[i]]; };
  const std::string& op = in.op;
  const auto& k = in.ints;
  auto tail = [&](size_t from) { return std::vector<int64_t>(k.begin() + long(from), k.end()); };
  if (op.rfind("unary:", 0) == 0)
    if (const auto* u = find_listed(kListedUnary, op.substr(6))) return u->apply(squashed_for(op.substr(6), a(0)));
  if (op.rfind("binary:", 0) == 0)
    if (const auto* b = find_listed(kListedBinary, op.substr(7))) return b->apply(a(0), a(1));
  if (op == "neg") return a(0).neg();
  if (op == "abs") return a(0).abs();
  if (op == "sign") return a(0).sign();
  if (op == "bitwise_not") return ~a(0);
  if (op == "bitwise_and") return a(0) & a(1);
  if (op == "bitwise_or") return a(0) | a(1);
  if (op == "bitwise_xor") return a(0) ^ a(1);
  if (op == "shift_left") return a(0).__lshift__(a(1) & 15);
  if (op == "shift_right") return a(0).__rshift__(a(1) & 15);
  if (op == "add_scalar") return a(0) + 3;  // a scalar keeps the tensor's dtype
  if (op == "mul_scalar") return a(0) * 3;
  if (op == "cast") return a(0).to(ScalarType(k[0]));
  if (op == "layer_norm")
    return nn::functional::layer_norm(a(0),
                                      nn::functional::LayerNormFuncOptions({a(0).size(-1)}).weight(a(1)).bias(a(2)));
  if (op == "linear") return linear(a(0), a(1), a(2));
  if (op == "conv2d") return conv2d(as_images(a(0)), a(1), {}, k[0], 1);
  if (op == "max_pool2d") return max_pool2d(as_images(a(0)), 2, k[0], 1);
  if (op == "avg_pool2d") return avg_pool2d(as_images(a(0)), 2, k[0], 1, false, k[1] != 0);
  if (op == "gather") {  // k: dim, the index's shape (rank of a(0)), its values
    const size_t r = size_t(a(0).dim());
    const std::vector<int64_t> shape(k.begin() + 1, k.begin() + 1 + long(r));
    return a(0).gather(k[0], tensor(tail(1 + r)).reshape(shape));
  }
  if (op == "cross_entropy") {  // k: mean or none, the class of each row of a(0) as [rows, last dim]
    const Tensor logits = a(0).reshape({-1, a(0).size(-1)});
    return cross_entropy(logits, tensor(tail(1)), k[0] ? Reduction::Mean : Reduction::None);
  }
  if (op == "floor_divide") return a(0).floor_divide(a(1));  // by zero: 0 on every backend
  if (op == "fmod") return a(0).fmod(a(1));
  if (op == "exp_tanh") return (a(0).tanh() * 2).exp();
  if (op == "log_abs") return (a(0).abs() + 0.5).log();
  if (op == "sqrt_abs") return (a(0).abs() + 0.25).sqrt();
  if (op == "gelu") return a(0).gelu();
  if (op == "gelu_tanh") return a(0).gelu("tanh");
  if (op == "clamp") return a(0).clamp(-0.5, 0.7);
  if (op == "reciprocal_abs") return (a(0).abs() + 0.5).reciprocal();
  if (op == "add") return a(0) + a(1);
  if (op == "sub") return a(0) - a(1);
  if (op == "mul") return a(0) * a(1);
  if (op == "div_safe") return a(0) / (a(1).abs() + 0.5);
  if (op == "maximum") return maximum(a(0), a(1));
  if (op == "minimum") return minimum(a(0), a(1));
  if (op == "pow_abs") return (a(0).abs() + 0.5).pow(a(1).tanh() + 1.5);
  if (op == "where_gt") return where(a(0) > a(1), a(0) * 2, a(1));
  if (op == "sum") return a(0).sum(std::vector<int64_t>(k.begin() + 1, k.end()), k[0] != 0);
  if (op == "mean") return a(0).mean(std::vector<int64_t>(k.begin() + 1, k.end()), k[0] != 0);
  if (op == "amax") return a(0).amax(std::vector<int64_t>(k.begin() + 1, k.end()), k[0] != 0);
  if (op == "amin") return a(0).amin(std::vector<int64_t>(k.begin() + 1, k.end()), k[0] != 0);
  if (op == "prod") return (a(0).tanh() * 0.5 + 1).prod(k[1], k[0] != 0);
  // Biased: an unbiased variance over a size-1 dim is 0/0, and special values are not compared.
  if (op == "var") return a(0).var(std::vector<int64_t>(k.begin() + 1, k.end()), false, k[0] != 0);
  if (op == "logsumexp") return a(0).logsumexp(std::vector<int64_t>(k.begin() + 1, k.end()), k[0] != 0);
  if (op == "softmax") return a(0).softmax(k[1]);
  if (op == "log_softmax") return a(0).log_softmax(k[1]);
  if (op == "cumsum") return a(0).cumsum(k[1]);
  if (op == "cumprod") return (a(0).tanh() * 0.5 + 1).cumprod(k[1]);
  if (op == "logcumsumexp") return a(0).logcumsumexp(k[1]);
  if (op == "sort") return std::get<0>(a(0).sort(k[1], k[0] != 0));
  if (op == "cummax") return std::get<0>(a(0).cummax(k[1]));
  if (op == "transpose") return a(0).transpose(k[0], k[1]);
  if (op == "permute") return a(0).permute(k);
  if (op == "narrow") return a(0).narrow(k[0], k[1], k[2]);
  if (op == "select") return a(0).select(k[0], k[1]);
  if (op == "unsqueeze") return a(0).unsqueeze(k[0]);
  if (op == "expand") return a(0).expand(k);
  if (op == "flatten") return a(0).flatten();
  if (op == "slice2") return a(0).slice(k[0], 0, a(0).size(k[0]), 2);
  if (op == "matmul") return a(0).matmul(a(1));
  if (op == "cat") return cat({a(0), a(1)}, k[0]);
  if (op == "index_select") return a(0).index_select(k[0], tensor(std::vector<int64_t>(k.begin() + 1, k.end())));
  if (op == "inplace_add") {  // an in-place write through a fresh copy, then a view of it
    Tensor c = a(0).clone();
    c.add_(a(1));
    c.mul_(0.5);
    return c;
  }
  if (op == "inplace_view") {  // write into a narrow window of a copy
    Tensor c = a(0).clone();
    c.narrow(k[0], 0, 1).mul_(3.0);
    return c;
  }
  throw Error("random program: unknown op " + op);
}

}  // namespace

std::string Program::to_string() const {
  std::ostringstream os;
  os << "program (" << dtype_name(dtype) << ", data seed " << data_seed
     << (special_values ? ", inputs' elements 0 and 2 NaN and -inf" : "") << "):\n";
  for (size_t i = 0; i < instrs.size(); ++i) {
    const Instr& in = instrs[i];
    os << "  v" << i << " = " << in.op << "(";
    for (size_t a = 0; a < in.args.size(); ++a) os << (a ? ", " : "") << "v" << in.args[a];
    if (!in.ints.empty()) os << (in.args.empty() ? "" : ", ") << in.ints;
    if (in.op == "input") os << in.shape;
    os << ")\n";
  }
  os << "  outputs:";
  for (int o : outputs) os << " v" << o;
  return os.str();
}

Program generate(uint64_t structure_seed, uint64_t size_seed, int length, Draw draw) {
  std::mt19937_64 rng(structure_seed), sizes(size_seed);
  Program p;
  // float64 in a quarter of the programs; float16 and bfloat16 (computed in float32, each node
  // rounded) in one in eight each.
  const uint64_t dtype_draw = rng() % 8;
  p.dtype = dtype_draw < 2 ? kDouble : dtype_draw == 2 ? kHalf : dtype_draw == 3 ? kBFloat16 : kFloat;
  // What only integer and nn programs draw comes from a stream of its own, so that the float
  // programs stay as they were.
  std::mt19937_64 own(structure_seed * 0x9e3779b97f4a7c15ull + 7);
  if (draw == Draw::kIntegers) p.dtype = kIntegerDtypes[own() % 5];
  if (draw == Draw::kNn && (p.dtype == kHalf || p.dtype == kBFloat16)) p.dtype = kFloat;
  const bool integer = is_integer(p.dtype);
  p.data_seed = size_seed;
  std::vector<Tensor> v;  // shapes only: tracing without flushing
  auto add = [&](Instr in) {
    Tensor t;
    try {
      t = in.op == "input" ? zeros(in.shape, input_dtype(in, p.dtype)) : apply_instr(in, v);
    } catch (const Error&) {  // parameters that don't fit this shape: a unary op instead
      in = {integer ? "neg" : "unary:tanh", {in.args.empty() ? 0 : in.args[0]}, {}, {}};
      t = apply_instr(in, v);
    }
    v.push_back(t);
    p.instrs.push_back(std::move(in));
    return int(v.size()) - 1;
  };
  auto extent = [&]() { return int64_t(2 + sizes() % 5); };
  auto new_input = [&](Shape shape) { return add({"input", {}, {}, shape}); };
  // An integer program's partner is of another integer dtype one time in three.
  auto new_partner = [&](Shape shape) {
    if (!integer || own() % 3) return new_input(shape);
    return add({"input", {}, {int64_t(kIntegerDtypes[own() % 5])}, shape});
  };
  // An nn op on value a of shape s (rank 1 or more), its weights new inputs: its parameters come
  // from the structure, index values from the sizes.
  auto nn_instr = [&](const std::string& op, int a, const Shape& s) -> Instr {
    const int64_t last = s.back();
    if (op == "layer_norm") return {op, {a, new_input({last}), new_input({last})}, {}, {}};
    if (op == "linear") {
      const int64_t n = extent();
      return {op, {a, new_input({n, last}), new_input({n})}, {}, {}};
    }
    if (op == "conv2d") {
      const int64_t k = 1 + int64_t(own() % 3);
      return {op, {a, new_input({2, 1, k, k})}, {1 + int64_t(own() % 2)}, {}};
    }
    if (op == "max_pool2d") return {op, {a}, {1 + int64_t(own() % 2)}, {}};
    if (op == "avg_pool2d") return {op, {a}, {1 + int64_t(own() % 2), int64_t(own() % 2)}, {}};
    if (op == "gather") {
      const int64_t d = int64_t(own() % s.size());
      Shape index = s;
      index[size_t(d)] = 1 + int64_t(sizes() % 3);
      std::vector<int64_t> ints{d};
      ints.insert(ints.end(), index.begin(), index.end());
      int64_t n = 1;
      for (int64_t e : index) n *= e;
      for (int64_t i = 0; i < n; ++i) ints.push_back(int64_t(sizes() % s[size_t(d)]));
      return {op, {a}, ints, {}};
    }
    int64_t rows = 1;  // cross_entropy
    for (size_t i = 0; i + 1 < s.size(); ++i) rows *= s[i];
    std::vector<int64_t> ints{int64_t(own() % 2)};
    for (int64_t i = 0; i < rows; ++i) ints.push_back(int64_t(sizes() % last));
    return {op, {a}, ints, {}};
  };
  // A shape broadcastable against `s`: some dims become 1, some leading dims dropped.
  auto broadcast_like = [&](const Shape& s) {
    Shape out(s.begin() + (s.size() > 1 && rng() % 3 == 0 ? 1 : 0), s.end());
    for (auto& d : out)
      if (rng() % 3 == 0) d = 1;
    return out;
  };
  const int rank = 1 + int(rng() % 3);
  Shape first;
  for (int i = 0; i < rank; ++i) first.push_back(rng() % 5 == 0 ? 1 : extent());
  new_input(first);
  for (int step = 0; step < length; ++step) {
    const int a = int(rng() % v.size());
    const Shape s = v[a].sizes().vec();
    const int64_t r = int64_t(s.size());
    const int family = int(rng() % 10);
    Instr in;
    if (draw == Draw::kNn && r > 0 && own() % 3 == 0) {
      in = nn_instr(pick(own, kNnOps), a, s);
    } else if (integer && (family <= 2 || r == 0)) {
      in = {pick(rng, kIntegerUnary), {a}, {}, {}};
      if (in.op == "cast") in.ints = {int64_t(kIntegerDtypes[own() % 5])};
    } else if (family <= 2 || r == 0) {
      in = {pick_op(rng, kListedUnary, "unary:", kUnary), {a}, {}, {}};
    } else if (family <= 4) {
      // A partner value: an existing one that broadcasts, or a new input.
      int b = -1;
      for (int tries = 0; tries < 4 && b < 0; ++tries) {
        int c = int(rng() % v.size());
        try {
          broadcast_shapes(s, v[c].sizes());
          b = c;
        } catch (const Error&) {
        }
      }
      if (b < 0 || rng() % 2 == 0) b = new_partner(broadcast_like(s));
      in = {integer ? std::string(pick(rng, kIntegerBinary)) : pick_op(rng, kListedBinary, "binary:", kBinary),
            {a, b},
            {},
            {}};
      if (rng() % 2) std::swap(in.args[0], in.args[1]);
    } else if (family <= 6) {
      std::string op = integer ? pick(rng, kIntegerReduce) : pick(rng, kReduce);
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < r; ++d)
        if (rng() % 2) dims.push_back(rng() % 2 ? d : d - r);
      if (dims.empty()) dims.push_back(int64_t(rng() % r));
      if (op == "softmax" || op == "log_softmax" || op == "prod" || op.rfind("cum", 0) == 0 || op == "logcumsumexp" ||
          op == "sort")
        dims.resize(1);
      std::vector<int64_t> ints{int64_t(rng() % 2)};
      ints.insert(ints.end(), dims.begin(), dims.end());
      in = {op, {a}, ints, {}};
    } else if (family <= 8) {
      std::string op = pick(rng, kView);
      const int64_t d = int64_t(rng() % r), d2 = int64_t(rng() % r);
      if (op == "transpose") in = {op, {a}, {d, d2}, {}};
      if (op == "permute") {
        std::vector<int64_t> perm(r);
        for (int64_t i = 0; i < r; ++i) perm[i] = i;
        std::shuffle(perm.begin(), perm.end(), rng);
        in = {op, {a}, perm, {}};
      }
      if (op == "narrow") in = {op, {a}, {d, int64_t(sizes() % s[d]) / 2, std::max<int64_t>(1, s[d] / 2)}, {}};
      if (op == "select") in = {op, {a}, {d, int64_t(sizes() % s[d])}, {}};
      if (op == "unsqueeze") in = {op, {a}, {int64_t(rng() % (r + 1))}, {}};
      if (op == "flatten") in = {op, {a}, {}, {}};
      if (op == "slice2") in = {op, {a}, {d}, {}};
      if (op == "expand") {
        Shape target = s;
        for (auto& x : target)
          if (x == 1) x = extent();
        if (rng() % 2) target.insert(target.begin(), 2);
        in = {op, {a}, target, {}};
      }
    } else {
      const int kind = int(rng() % 5);
      if (kind == 0) {  // matmul against a new [K, N] input
        const int64_t n = extent();
        in = {"matmul", {a, new_input({s.back(), n})}, {}, {}};
      } else if (kind == 1) {
        in = {"cat", {a, new_input(s)}, {int64_t(rng() % r)}, {}};
      } else if (kind == 2) {
        const int64_t d = int64_t(rng() % r);
        std::vector<int64_t> ints{d};
        for (int i = 0; i < 3; ++i) ints.push_back(int64_t(sizes() % s[d]));
        in = {"index_select", {a}, ints, {}};
      } else if (kind == 3) {
        in = {"inplace_add", {a, new_input(broadcast_like(s))}, {}, {}};
      } else {
        in = {"inplace_view", {a}, {int64_t(rng() % r)}, {}};
      }
    }
    if (integer && (in.op == "matmul" || in.op == "inplace_add" || in.op == "inplace_view")) in.op.clear();
    if (in.op.empty()) in = {integer ? "bitwise_not" : "unary:tanh", {a}, {}, {}};
    add(in);
  }
  // Outputs: the last value and a couple of random others.
  p.outputs.push_back(int(v.size()) - 1);
  for (int i = 0; i < 2; ++i) p.outputs.push_back(int(rng() % v.size()));
  std::sort(p.outputs.begin(), p.outputs.end());
  p.outputs.erase(std::unique(p.outputs.begin(), p.outputs.end()), p.outputs.end());
  return p;
}

Result run(const Program& p) {
  manual_seed(p.data_seed);
  std::vector<Tensor> v, inputs;
  for (const auto& in : p.instrs) {
    const ScalarType dtype = in.op == "input" ? input_dtype(in, p.dtype) : p.dtype;
    if (in.op == "input" && is_integer(dtype)) {  // integers in [-40, 40) ([0, 80) for uint8), no gradient
      Tensor t = (rand(in.shape, kDouble) * 80 - (dtype == kByte ? 0 : 40)).floor().to(dtype);
      inputs.push_back(t);
      v.push_back(t);
    } else if (in.op == "input") {
      Tensor t = (rand(in.shape, p.dtype) * 3 - 1.5).detach();
      if (p.special_values && t.numel() > 2) {  // (float programs only)
        std::vector<double> values = t.to_vector<double>();
        values[0] = std::numeric_limits<double>::quiet_NaN();
        values[2] = -std::numeric_limits<double>::infinity();
        t = tensor(values).to(p.dtype).reshape(in.shape);
      }
      t.requires_grad_();
      inputs.push_back(t);
      v.push_back(t);
    } else {
      v.push_back(apply_instr(in, v));
    }
    // Each input is computed before the program runs, as a data loader's batch is: the program's
    // kernels then read buffers, and the NaN programs share the plain programs' kernels.
    if (in.op == "input") sync();
  }
  Tensor loss = zeros({}, p.dtype);
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const Tensor& out = v[p.outputs[i]];
    if (out.requires_grad()) loss = loss + (out * (0.5 + double(i))).sum();
  }
  Result r;
  if (loss.requires_grad()) loss.backward();
  for (int o : p.outputs) r.outputs.push_back(v[o].to_vector<double>());
  for (const auto& in : inputs)
    r.grads.push_back(in.grad().defined() ? in.grad().to_vector<double>() : std::vector<double>());
  return r;
}

std::string compare(const Result& expected, const Result& actual, ScalarType dtype) {
  // float16 and bfloat16: a result rounded one way on one backend and the other way on the other
  // (float32 polynomials against libm) is an ulp apart, and later ops carry that along.
  double rtol = 1e-9, atol = 1e-9;
  if (dtype == kFloat) rtol = 2e-3, atol = 2e-4;
  if (dtype == kHalf) rtol = 3e-2, atol = 3e-2;
  if (dtype == kBFloat16) rtol = 1.5e-1, atol = 1.5e-1;
  auto check = [&](const char* what, const std::vector<std::vector<double>>& e,
                   const std::vector<std::vector<double>>& a) -> std::string {
    if (e.size() != a.size()) return std::string(what) + ": count differs";
    for (size_t i = 0; i < e.size(); ++i) {
      if (e[i].size() != a[i].size()) return detail::concat(what, " ", i, ": size ", a[i].size(), " != ", e[i].size());
      for (size_t j = 0; j < e[i].size(); ++j) {
        const double x = e[i][j], y = a[i][j];
        // Halide's exp, log and tanh are polynomials that do not keep every IEEE special value
        // the interpreter's libm does; a non-finite value only needs a non-finite counterpart.
        if (!std::isfinite(x) && !std::isfinite(y)) continue;
        if (!(std::fabs(x - y) <= atol + rtol * std::fabs(x)))
          return detail::concat(what, " ", i, " element ", j, ": expected ", x, ", got ", y);
      }
    }
    return "";
  };
  std::string d = check("output", expected.outputs, actual.outputs);
  return d.empty() ? check("gradient", expected.grads, actual.grads) : d;
}

Program shrink(Program p, const std::function<bool(const Program&)>& fails) {
  // Shortest failing prefix, with its last value as the only output.
  for (size_t n = 1; n < p.instrs.size(); ++n) {
    Program q = p;
    q.instrs.resize(n);
    q.outputs = {int(n) - 1};
    if (fails(q)) {
      p = q;
      break;
    }
  }
  // Then drop single instructions no later one reads.
  for (int i = int(p.instrs.size()) - 2; i >= 0; --i) {
    bool read = false;
    for (const auto& in : p.instrs) read |= std::find(in.args.begin(), in.args.end(), i) != in.args.end();
    if (read) continue;
    Program q = p;
    q.instrs.erase(q.instrs.begin() + i);
    for (auto& in : q.instrs)
      for (auto& a : in.args)
        if (a > i) --a;
    for (auto& o : q.outputs)
      if (o > i) --o;
    if (fails(q)) p = q;
  }
  return p;
}

}  // namespace kiln::fuzz
