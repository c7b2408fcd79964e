#include "codegen/halide/schedule_params.h"

#include <sstream>
#include <utility>
#include <vector>

#include "runtime/error.h"

namespace kiln::codegen::halide {
namespace {

thread_local ScheduleParams t_params;

// The fields by their names in ScheduleChoice::text().
std::vector<std::pair<const char*, int ScheduleParams::*>> fields() {
  return {{"lanes", &ScheduleParams::element_lanes}, {"grain", &ScheduleParams::task_elements},
          {"serial", &ScheduleParams::serial_below}, {"tile", &ScheduleParams::tile},
          {"run", &ScheduleParams::column_run},      {"rvec", &ScheduleParams::reduction_vectors},
          {"chunk", &ScheduleParams::chunk_steps},   {"cvec", &ScheduleParams::column_vectors}};
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

const ScheduleParams& schedule_params() { return t_params; }
ScopedScheduleParams::ScopedScheduleParams(const ScheduleParams& p) : saved_(t_params) { t_params = p; }
ScopedScheduleParams::~ScopedScheduleParams() { t_params = saved_; }

}  // namespace kiln::codegen::halide
