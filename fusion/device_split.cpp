#include "fusion/device_split.h"

#include <algorithm>

namespace kiln::fusion {
namespace {

bool shared_constant(const Step& s) { return s.node->inputs.empty() && !s.is_root; }

}  // namespace

std::vector<DevicePart> split_by_device(const Plan& plan) {
  const auto& steps = plan.steps;
  // Each step's device: its node's, or for a host step that reads device memory (a copy to the
  // host) the device it reads. Values read from earlier flushes tell by their buffers.
  const uint64_t stamp = begin_pass();
  std::vector<int> device(steps.size(), -1);
  int first = -2;  // the first step's device; -2 before any
  bool several = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    ir::Node& n = *steps[i].node;
    n.pass = stamp;
    n.pass_value = int64_t(i);
    int d = n.cuda_device;
    for (size_t k = 0; d < 0 && k < n.inputs.size(); ++k) {
      const ir::Node& in = *n.inputs[k].node;
      if (in.pass == stamp && !shared_constant(steps[size_t(in.pass_value)]))
        d = device[size_t(in.pass_value)];
      else if (in.pass != stamp && in.computed())
        d = in.result->cuda_device();
    }
    device[i] = d;
    if (shared_constant(steps[i])) continue;
    if (first == -2) first = d;
    several |= d != first;
  }
  if (!several) return {};

  // Parts in running order: a step joins the first part of its device that comes after every
  // part holding a value it reads (the same part where that value is on its device).
  std::vector<DevicePart> parts;
  std::vector<int> part_of(steps.size(), -1);
  std::vector<std::vector<size_t>> constants;  // per part: shared constants it reads
  std::vector<std::vector<size_t>> members;    // per part: its other steps, in plan order
  std::vector<bool> read_elsewhere(steps.size(), false);
  for (size_t i = 0; i < steps.size(); ++i) {
    if (shared_constant(steps[i])) continue;
    const ir::Node& n = *steps[i].node;
    int earliest = 0;
    for (const auto& in : n.inputs) {
      if (in.node->pass != stamp) continue;
      const size_t j = size_t(in.node->pass_value);
      if (shared_constant(steps[j])) continue;
      earliest = std::max(earliest, part_of[j] + (device[j] == device[i] ? 0 : 1));
    }
    int p = earliest;
    while (p < int(parts.size()) && parts[size_t(p)].device != device[i]) ++p;
    if (p == int(parts.size())) {
      parts.push_back({device[i], {}});
      constants.emplace_back();
      members.emplace_back();
    }
    part_of[i] = p;
    members[size_t(p)].push_back(i);
    for (const auto& in : n.inputs) {
      if (in.node->pass != stamp) continue;
      const size_t j = size_t(in.node->pass_value);
      if (shared_constant(steps[j])) {
        auto& c = constants[size_t(p)];
        if (std::find(c.begin(), c.end(), j) == c.end()) c.push_back(j);
      } else if (part_of[j] != p) {
        read_elsewhere[j] = true;
      }
    }
  }
  for (size_t p = 0; p < parts.size(); ++p) {
    auto& out = parts[p].plan.steps;
    std::sort(constants[p].begin(), constants[p].end());  // leaves first, in the plan's order
    for (size_t j : constants[p]) out.push_back(steps[j]);
    for (size_t i : members[p]) {
      out.push_back(steps[i]);
      out.back().is_root = steps[i].is_root || read_elsewhere[i];
    }
  }
  return parts;
}

}  // namespace kiln::fusion
