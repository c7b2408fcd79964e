#include "codegen/cuda/emitter.h"

#include "codegen/arguments.h"
#include "codegen/cuda/ops.h"
#include "codegen/cuda/source.h"
#include "runtime/error.h"

namespace kiln::codegen::cuda {

void Emitter::begin(const std::string& name, bool workspace) {
  std::vector<std::string> params, locals;
  for_each_argument(k, [&](const KernelArgument& a) {
    const std::string read = std::to_string(a.read), dim = std::to_string(a.dim), node = std::to_string(a.node);
    switch (a.kind) {
      case KernelArgument::Kind::Input:
        params.push_back(std::string("const ") + storage_type(k.reads[size_t(a.read)].node->dtype) +
                         "* __restrict__ in" + read);
        break;
      case KernelArgument::Kind::Extent: {
        params.push_back("long long extent" + dim);
        // Compiled in: a pooling window's extents (narrow rows) and a tiny innermost extent.
        int64_t fixed = k.window_extent(size_t(a.dim));
        if (k.tiny_inner() && size_t(a.dim) + 1 == k.domain.size()) fixed = k.tiny_inner();
        locals.push_back("const idx_t e" + dim + " = " + (fixed ? std::to_string(fixed) : "(idx_t)extent" + dim) + ";");
        break;
      }
      case KernelArgument::Kind::Offset:
        params.push_back("long long offset" + read);
        locals.push_back("const idx_t o" + read + " = (idx_t)offset" + read + ";");
        break;
      case KernelArgument::Kind::Stride:
        params.push_back("long long stride" + read + "_" + dim);
        locals.push_back("const idx_t s" + read + "_" + dim + " = (idx_t)stride" + read + "_" + dim + ";");
        break;
      case KernelArgument::Kind::Int64Const: params.push_back("long long c" + node); break;
      case KernelArgument::Kind::Float64Const: params.push_back("double c" + node); break;
      case KernelArgument::Kind::Output: {
        size_t position = 0;
        while (k.outputs[position] != a.node) ++position;
        params.push_back(std::string(storage_type(k.nodes[size_t(a.node)].node->dtype)) + "* __restrict__ out" +
                         std::to_string(position));
        break;
      }
    }
  });
  if (workspace) {
    params.push_back("unsigned long long* __restrict__ workspace");
    params.push_back("unsigned int* __restrict__ block_count");
  }
  out << "typedef " << (index32 ? "int" : "long long") << " idx_t;\n\n";
  out << "// " << k.key() << "\n";
  out << "extern \"C\" __global__ void __launch_bounds__(" << kBlockThreads << ") " << name << "(";
  for (size_t i = 0; i < params.size(); ++i) out << (i ? ",\n    " : "") << params[i];
  out << ") {\n";
  for (const auto& l : locals) line("  ", l);
}

std::string Emitter::product(const std::vector<size_t>& dims) const {
  if (dims.empty()) return "(idx_t)1";
  std::string p;
  for (size_t d : dims) p += (p.empty() ? "" : " * ") + extent(d);
  return p;
}

void Emitter::split_index(const std::string& indent, const std::string& flat, const std::vector<size_t>& dims) {
  if (dims.empty()) return;
  if (dims.size() == 1) return line(indent, "const idx_t " + coord(dims[0]) + " = " + flat + ";");
  const std::string rest = "rest_" + coord(dims.back());
  line(indent, "idx_t " + rest + " = " + flat + ";");
  for (size_t i = dims.size() - 1; i > 0; --i) {
    line(indent, "const idx_t " + coord(dims[i]) + " = " + rest + " % " + extent(dims[i]) + ";");
    line(indent, rest + " /= " + extent(dims[i]) + ";");
  }
  line(indent, "const idx_t " + coord(dims[0]) + " = " + rest + ";");
}

std::string Emitter::load(int r, Scope& s) {
  auto it = s.names.find(~r);
  if (it != s.names.end()) return it->second;
  const fusion::Read& read = k.reads[size_t(r)];
  std::string index = "o" + std::to_string(r);
  for (size_t d = 0; d < s.coords.size(); ++d) {
    const std::string& c = s.coords[d];
    const char cls = fusion::stride_class(read.strides[d]);
    if (c == "0" || cls == '0') continue;
    if (cls == '1') index += " + " + c;
    if (cls == '2') index += " + 2 * " + c;
    if (cls == 's') index += " + " + c + " * s" + std::to_string(r) + "_" + std::to_string(d);
  }
  const ScalarType t = read.node->dtype;
  const std::string loaded = load_value(t, "in" + std::to_string(r) + "[" + index + "]");
  const std::string name = s.prefix + "r" + std::to_string(r);
  line(s.indent, std::string("const ") + value_type(t) + " " + name + " = " + loaded + ";");
  return s.names[~r] = name;
}

std::string Emitter::value(int i, Scope& s) {
  const fusion::KernelNode& kn = k.nodes[size_t(i)];
  if (kn.per_row && s.rows && s.rows != &s) return value(i, *s.rows);
  const ir::Node& n = *kn.node;
  if (ir::op_kind(n.op) == ir::OpKind::Reduce) {
    auto r = reduced.find(i);
    KILN_CHECK(r != reduced.end(), "cuda: reduction ", i, " read before it is folded (", k.key(), ")");
    return r->second;
  }
  auto it = s.names.find(i);
  if (it != s.names.end()) return it->second;
  std::string expr;
  if (n.op == ir::Op::Const) {
    expr = convert(Value{"c" + std::to_string(i), is_integer(n.dtype) ? kLong : kDouble}, n.dtype);
  } else {
    KILN_CHECK(ir::op_kind(n.op) != ir::OpKind::Leaf, "cuda: an input node inside a kernel (", k.key(), ")");
    std::vector<Value> args;
    for (int a : kn.args) {
      if (fusion::is_read(a))
        args.push_back(Value{load(fusion::read_index(a), s), k.reads[size_t(fusion::read_index(a))].node->dtype});
      else
        args.push_back(Value{value(a, s), k.nodes[size_t(a)].node->dtype});
    }
    expr = lower_op(n, args);
  }
  const std::string name = s.prefix + "v" + std::to_string(i);
  line(s.indent, std::string("const ") + value_type(n.dtype) + " " + name + " = " + expr + ";");
  return s.names[i] = name;
}

std::string Emitter::operand(int arg, Scope& s, ScalarType to) {
  if (fusion::is_read(arg)) {
    const int r = fusion::read_index(arg);
    return convert(Value{load(r, s), k.reads[size_t(r)].node->dtype}, to);
  }
  return convert(Value{value(arg, s), k.nodes[size_t(arg)].node->dtype}, to);
}

void Emitter::store(const std::string& indent, size_t position, const std::string& index, int node, Scope& s) {
  const ScalarType t = k.nodes[size_t(node)].node->dtype;
  line(indent, "out" + std::to_string(position) + "[" + index + "] = " + stored_value(t, value(node, s)) + ";");
}

}  // namespace kiln::codegen::cuda
