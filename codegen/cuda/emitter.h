// What every kernel's CUDA source is written with: its parameters (in codegen/arguments.h's
// order), its extents, offsets and strides as locals, and each kernel node's value as a local
// variable in a scope (a loop body, or a row's values), emitted once per scope at first use.
#pragma once
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fusion/kernel.h"

namespace kiln::codegen::cuda {

class Emitter {
 public:
  // Where values are computed: the domain coordinates (an index expression per dim, "0" for a
  // reduced dim at a row's values), and the variables already emitted there.
  struct Scope {
    std::string prefix;  // of its variables' names, so that nested scopes never shadow
    std::string indent;
    std::vector<std::string> coords;
    Scope* rows = nullptr;             // in a row kernel's element loop: the row's scope (its per-row values)
    std::map<int, std::string> names;  // kernel node (>= 0) or read (~r) -> its variable
  };

  Emitter(const fusion::Kernel& kernel, bool index32) : k(kernel), index32(index32) {}

  // `extern "C" __global__ void name(...) {` and the locals every kernel declares.
  void begin(const std::string& name, bool workspace);
  void end() { out << "}\n"; }
  void line(const std::string& indent, const std::string& text) { out << indent << text << '\n'; }

  // The index variable of dim d's extent, compiled in where the key says.
  std::string extent(size_t d) const { return "e" + std::to_string(d); }
  // The product of the extents of `dims` ("1" for none).
  std::string product(const std::vector<size_t>& dims) const;
  // Declares x<d> for each of `dims` from the flat row-major index `flat` over them.
  void split_index(const std::string& indent, const std::string& flat, const std::vector<size_t>& dims);
  std::string coord(size_t d) const { return "x" + std::to_string(d); }

  // The value of kernel node `i` in `s` (its variable's name), emitting what it needs first.
  std::string value(int i, Scope& s);
  // The value of a reducing node's operand (a kernel node or a read) in `s`, as `to`.
  std::string operand(int arg, Scope& s, ScalarType to);
  // `out<position>[index] = value`, the value stored as its dtype is.
  void store(const std::string& indent, size_t position, const std::string& index, int node, Scope& s);

  // The reducing nodes' values, once folded: node -> variable.
  std::map<int, std::string> reduced;

  const fusion::Kernel& k;
  const bool index32;
  std::ostringstream out;

 private:
  std::string load(int r, Scope& s);
};

}  // namespace kiln::codegen::cuda
