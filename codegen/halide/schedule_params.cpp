#include "codegen/halide/schedule_params.h"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/shape.h"

namespace kiln::codegen::halide {
namespace {

thread_local ScheduleParams t_params;

// The fields by their names in ScheduleChoice::text().
std::vector<std::pair<const char*, int ScheduleParams::*>> fields() {
  return {{"lanes", &ScheduleParams::element_lanes}, {"grain", &ScheduleParams::task_elements},
          {"serial", &ScheduleParams::serial_below}, {"tile", &ScheduleParams::tile},
          {"run", &ScheduleParams::column_run},      {"rvec", &ScheduleParams::reduction_vectors},
          {"chunk", &ScheduleParams::chunk_steps},   {"cvec", &ScheduleParams::column_vectors},
          {"tiles", &ScheduleParams::tiles},         {"masked", &ScheduleParams::masked_rows}};
}

}  // namespace

bool ScheduleParams::operator==(const ScheduleParams& o) const {
  for (auto [name, field] : fields())
    if (this->*field != o.*field) return false;
  return true;
}

bool ScheduleParams::merge(const ScheduleParams& o) {
  const ScheduleParams hand;
  bool took = false;
  for (auto [name, field] : fields())
    if (this->*field == hand.*field && o.*field != hand.*field) {
      this->*field = o.*field;
      took = true;
    }
  return took;
}

std::string ScheduleChoice::text() const {
  std::ostringstream os;
  if (kind == Kind::Auto) {
    os << "auto " << autoscheduler;
    if (dropout < 100) os << " dropout=" << dropout << " seed=" << seed;
    return os.str();
  }
  if (is_hand()) return "hand";
  os << "params";
  const ScheduleParams defaults;
  for (auto [name, field] : fields())
    if (params.*field != defaults.*field) os << " " << name << "=" << params.*field;
  return os.str();
}

ScheduleChoice ScheduleChoice::parse(const std::string& text) {
  std::istringstream is(text);
  std::string word;
  is >> word;
  ScheduleChoice c;
  if (word == "hand" && !(is >> word)) return c;
  KILN_CHECK(word == "params" || word == "auto", "tune: not a schedule: '", text, "'");
  if (word == "auto") {
    c.kind = Kind::Auto;
    KILN_CHECK(is >> c.autoscheduler, "tune: no autoscheduler named in '", text, "'");
  }
  while (is >> word) {
    const auto eq = word.find('=');
    KILN_CHECK(eq != std::string::npos, "tune: '", word, "' in schedule '", text, "' is not name=value");
    const std::string name = word.substr(0, eq);
    int value = 0;
    try {
      value = std::stoi(word.substr(eq + 1));
    } catch (const std::exception&) {
      throw Error(detail::concat("tune: '", word, "' in schedule '", text, "' has no number"));
    }
    int* into = name == "dropout" ? &c.dropout : name == "seed" ? &c.seed : nullptr;
    for (auto [field_name, field] : fields())
      if (c.kind == Kind::Params && name == field_name) into = &(c.params.*field);
    KILN_CHECK(into, "tune: unknown setting '", name, "' in schedule '", text, "'");
    *into = value;
  }
  return c;
}

bool float32_polynomial(ir::Op op) {
  return op == ir::Op::Exp || op == ir::Op::Log || op == ir::Op::Tanh || op == ir::Op::Erf;
}

int hand_element_lanes(const fusion::Kernel& k, int native) {
  for (const auto& kn : k.nodes)
    if (float32_polynomial(kn.node->op) && kn.node->dtype == kFloat) return std::max(native, std::min(4 * native, 32));
  return native;
}

int transposed_dim(const fusion::Kernel& k) {
  if (k.kind != fusion::Kernel::Kind::Pointwise || k.domain.size() < 2) return -1;
  const size_t inner = k.domain.size() - 1;
  for (const fusion::Read& r : k.reads)
    if (fusion::stride_class(r.strides[inner]) == 's')
      for (size_t d = inner; d-- > 0;)
        if (fusion::stride_class(r.strides[d]) == '1') return int(d);
  return -1;
}

ScheduleParams effective_params(const fusion::Kernel& k, ScheduleParams p, int native) {
  using Kind = fusion::Kernel::Kind;
  const ScheduleParams hand;
  const int64_t n = numel_of(k.domain);
  const bool reduction = k.kind == Kind::Reduction, row = reduction && k.row_kernel();
  const bool all_reduced = reduction && std::all_of(k.reduced.begin(), k.reduced.end(), [](bool r) { return r; });
  const bool windows = reduction && !row && k.narrow_rows() && !all_reduced;
  const bool columns = reduction && !row && !k.reduced.empty() && !k.reduced.back();
  // Where the schedule splits loops into tasks whatever the size: row kernels, pooling windows,
  // a pointwise kernel's outputs in groups or a tiny inner dim under two more.
  const bool always_tasks =
      row || windows ||
      (k.kind == Kind::Pointwise && (k.outputs.size() > 1 || (k.tiny_inner() && k.domain.size() >= 3)));
  const bool serial = !row && !windows && n < p.serial_below;  // runs on the calling thread
  if (row || windows || (n < p.serial_below) == (n < hand.serial_below)) p.serial_below = hand.serial_below;
  // One task either way: a grain of the whole kernel or more, as the hand's.
  const bool one_task = n <= std::min(p.task_elements, hand.task_elements);
  if (all_reduced || (serial && !always_tasks) || one_task) p.task_elements = hand.task_elements;
  if ((reduction && !row) || p.element_lanes == hand_element_lanes(k, native)) p.element_lanes = hand.element_lanes;
  const bool transposing = k.domain.size() == 2 && transposed_dim(k) == 0;  // tiled by hand
  if (!transposing || p.tile == native) p.tile = hand.tile;
  // A tiny inner dim is unrolled, not tiled.
  if (k.domain.size() < 3 || transposed_dim(k) < 0 || k.tiny_inner()) p.tiles = hand.tiles;
  // Rows in vectors: a pointwise kernel of rank 2 or more that is not tiled or of a tiny inner dim.
  const bool rows = k.kind == Kind::Pointwise && k.domain.size() >= 2 && !k.tiny_inner() && !transposing &&
                    (transposed_dim(k) < 0 || p.tiles == 0);
  if (!rows) p.masked_rows = hand.masked_rows;
  if (!columns) {
    p.column_run = hand.column_run;
    p.column_vectors = hand.column_vectors;
  }
  if (!reduction || !k.reduced.back() || k.narrow_rows()) p.reduction_vectors = hand.reduction_vectors;
  if (!all_reduced) p.chunk_steps = hand.chunk_steps;
  return p;
}

const ScheduleParams& schedule_params() { return t_params; }
ScopedScheduleParams::ScopedScheduleParams(const ScheduleParams& p) : saved_(t_params) { t_params = p; }
ScopedScheduleParams::~ScopedScheduleParams() { t_params = saved_; }

}  // namespace kiln::codegen::halide
