#include "codegen/halide/kernel_text.h"

#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace kiln::codegen::halide {
namespace {

using fusion::Kernel;

template <typename V>
void put_list(std::ostream& os, const V& values) {
  os << " " << values.size();
  for (const auto& v : values) os << " " << v;
}

template <typename T>
std::vector<T> get_list(std::istream& is) {
  size_t n = 0;
  KILN_CHECK(is >> n && n < (size_t(1) << 20), "tune: a kernel's text has a bad list");
  std::vector<T> out(n);
  for (auto& v : out) {
    int64_t x = 0;
    KILN_CHECK(is >> x, "tune: a kernel's text has a bad list");
    v = T(x);
  }
  return out;
}

ScalarType dtype_named(const std::string& name) {
  for (int t = 0; t < kNumScalarTypes; ++t)
    if (name == dtype_name(ScalarType(t))) return ScalarType(t);
  throw Error("tune: a kernel's text names no dtype '" + name + "'");
}

ir::Op op_named(const std::string& name) {
  for (int op = 0; op < ir::kOpCount; ++op)
    if (name == ir::op_name(ir::Op(op))) return ir::Op(op);
  throw Error("tune: a kernel's text names no op '" + name + "' (another build of kiln wrote it?)");
}

// Random values of `t`, a fixed seed: floats in [-2, 2], integers in [0, 4), bools 0 or 1.
BufferPtr random_values(ScalarType t, int64_t count, std::mt19937& rng) {
  BufferPtr b = make_buffer(size_t(std::max<int64_t>(count, 1)) * element_size(t));
  std::uniform_real_distribution<float> real(-2, 2);
  std::uniform_int_distribution<int> small(0, 3);
  for (int64_t i = 0; i < count; ++i) {
    switch (t) {
      case kFloat: b->as<float>()[i] = real(rng); break;
      case kDouble: b->as<double>()[i] = real(rng); break;
      case kHalf: b->as<uint16_t>()[i] = float_to_half_bits(real(rng)); break;
      case kBFloat16: b->as<uint16_t>()[i] = float_to_bfloat16_bits(real(rng)); break;
      case kBool: b->as<uint8_t>()[i] = uint8_t(small(rng) & 1); break;
      case kByte: b->as<uint8_t>()[i] = uint8_t(small(rng)); break;
      case kChar: b->as<int8_t>()[i] = int8_t(small(rng)); break;
      case kShort: b->as<int16_t>()[i] = int16_t(small(rng)); break;
      case kInt: b->as<int32_t>()[i] = small(rng); break;
      case kLong: b->as<int64_t>()[i] = small(rng); break;
    }
  }
  return b;
}

}  // namespace

std::string kernel_text(const Kernel& k) {
  std::ostringstream os;
  os << "kernel " << int(k.kind) << " " << int(k.specialize_sizes) << "\ndomain";
  put_list(os, k.domain);
  os << "\nreduced";
  put_list(os, std::vector<int>(k.reduced.begin(), k.reduced.end()));
  os << "\nreduces";
  put_list(os, k.reduces);
  os << "\noutputs";
  put_list(os, k.outputs);
  for (const auto& r : k.reads) {
    os << "\nread " << dtype_name(r.node->dtype) << " " << r.offset;
    put_list(os, r.node->shape);
    put_list(os, r.strides);
  }
  for (const auto& kn : k.nodes) {
    const ir::Node& n = *kn.node;
    char scalar[64];
    std::snprintf(scalar, sizeof scalar, "%a", n.scalar);  // exact
    os << "\nnode " << ir::op_name(n.op) << " " << dtype_name(n.dtype) << " " << int(kn.per_row) << " " << scalar << " "
       << n.int_scalar;
    put_list(os, n.shape);
    put_list(os, n.ints);
    put_list(os, kn.args);
  }
  os << "\n";
  return os.str();
}

RebuiltKernel rebuild_kernel(const std::string& text) {
  RebuiltKernel out;
  Kernel& k = out.kernel;
  std::istringstream lines(text);
  std::mt19937 rng(1);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream is(line);
    std::string what;
    if (!(is >> what)) continue;
    if (what == "kernel") {
      int kind = 0, specialize = 1;
      KILN_CHECK(is >> kind >> specialize && kind >= 0 && kind <= 2, "tune: a kernel's text has a bad kind");
      k.kind = Kernel::Kind(kind);
      k.specialize_sizes = specialize != 0;
    } else if (what == "domain") {
      k.domain = get_list<int64_t>(is);
    } else if (what == "reduced") {
      for (int r : get_list<int>(is)) k.reduced.push_back(r != 0);
    } else if (what == "reduces") {
      k.reduces = get_list<int>(is);
    } else if (what == "outputs") {
      k.outputs = get_list<int>(is);
    } else if (what == "read") {
      std::string dtype;
      fusion::Read r{nullptr, {}, 0};
      KILN_CHECK(is >> dtype >> r.offset, "tune: a kernel's text has a bad read");
      auto n = std::make_shared<ir::Node>();
      n->op = ir::Op::Const;  // a computed value: only its dtype, shape and result are read
      n->dtype = dtype_named(dtype);
      n->shape = get_list<int64_t>(is);
      r.strides = get_list<int64_t>(is);
      n->result = random_values(n->dtype, n->numel(), rng);
      r.node = n.get();
      out.nodes.push_back(n);
      k.reads.push_back(r);
    } else if (what == "node") {
      std::string op, dtype, scalar;
      int per_row = 0;
      auto n = std::make_shared<ir::Node>();
      KILN_CHECK(is >> op >> dtype >> per_row >> scalar >> n->int_scalar, "tune: a kernel's text has a bad node");
      n->op = op_named(op);
      n->dtype = dtype_named(dtype);
      n->scalar = std::strtod(scalar.c_str(), nullptr);
      n->shape = get_list<int64_t>(is);
      n->ints = get_list<int64_t>(is);
      fusion::KernelNode kn{n.get(), get_list<int>(is), per_row != 0};
      out.nodes.push_back(n);
      k.nodes.push_back(kn);
    } else {
      throw Error("tune: a kernel's text has a line '" + line + "'");
    }
  }
  const int reads = int(k.reads.size()), nodes = int(k.nodes.size());
  for (const auto& kn : k.nodes)
    for (int a : kn.args)
      KILN_CHECK(fusion::is_read(a) ? fusion::read_index(a) < reads : a < nodes,
                 "tune: a kernel's text has a bad argument");
  for (int o : k.outputs) KILN_CHECK(o >= 0 && o < nodes, "tune: a kernel's text has a bad output");
  KILN_CHECK(
      !k.domain.empty() && k.reduced.size() == (k.kind == Kernel::Kind::Reduction ? k.domain.size() : k.reduced.size()),
      "tune: a kernel's text has a bad domain");
  return out;
}

}  // namespace kiln::codegen::halide
