// The backward engine, saved tensors, leaf accumulation and custom functions.
#include "frontend/autograd.h"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "frontend/derivatives.h"
#include "frontend/ops.h"
#include "tracer/storage.h"

namespace kiln::autograd {

// --- grad mode ---
namespace {
thread_local bool t_grad_enabled = true;
}
bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

// --- saved tensors ---

SavedTensor::SavedTensor(const Tensor& t, bool is_output)
    : data_(t.detach()), version_(uint32_t(t._version())), is_output_(is_output), requires_grad_(t.requires_grad()) {
  if (!is_output) grad_fn_ = t.grad_fn();
  output_nr_ = uint32_t(t.output_nr());
  if (!is_output && t.requires_grad() && t.is_leaf()) data_ = t;  // keep the leaf itself
}

Tensor SavedTensor::unpack(const std::shared_ptr<Node>& owner) const {
  KILN_CHECK(!released_,
             "backward: Trying to backward through the graph a second time (or directly access saved "
             "tensors after they have already been freed). Saved intermediate values of the graph are "
             "freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need "
             "to backward through the graph a second time or if you need to access saved tensors after "
             "calling backward.");
  if (uint32_t(data_._version()) != version_) {
    // As PyTorch words it: the saved tensor is named as an output of the node that made it.
    const std::shared_ptr<Node>& maker = is_output_ ? owner : grad_fn_;
    throw Error(kiln::detail::concat(
        "backward: one of the variables needed for gradient computation has been modified by an "
        "inplace operation: [",
        torch_type_name(data_.dtype()), " ", data_.sizes().vec(), "]",
        maker ? kiln::detail::concat(", which is output ", output_nr_, " of ", maker->name(), ",") : std::string(),
        " is at version ", data_._version(), "; expected version ", version_, " instead."));
  }
  if (!requires_grad_ || (!is_output_ && !grad_fn_)) return data_;
  Tensor t = data_.detach();
  kiln::detail::set_history(t, is_output_ ? owner : grad_fn_, output_nr_);
  return t;
}

// --- leaves ---

namespace {

// Whether t's content is a zero fill that has not run yet (optimizer.zero_grad() before a step).
bool pending_zeros(const Tensor& t) {
  const ir::Node* n = t.unsafeGetTensorImpl()->storage->node.get();
  if (n->computed()) return false;
  if (n->op == ir::Op::Copy && n->inputs.size() == 1) n = n->inputs[0].node.get();
  return n->op == ir::Op::Const && n->scalar == 0 && !n->computed();
}

// Adds incoming gradients into a leaf's .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::weak_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  std::string name() const override { return "torch::autograd::AccumulateGrad"; }
  tensor_list apply(tensor_list&& grads) override {
    auto impl = leaf_.lock();
    if (!impl || !grads[0].defined()) return {};
    Tensor& g = impl->autograd->grad;
    // A gradient that nothing else references, laid out over its whole storage, is taken as it
    // is; any other must be copied, so that later in-place updates of .grad touch nothing else.
    const TensorImpl& in = *grads[0].unsafeGetTensorImpl();
    const bool base_unshared = in.view_base && in.view_base.use_count() == 1 && in.view_base->storage == in.storage;
    const bool unshared = grads[0].impl_ptr().use_count() == 1 && in.storage.use_count() == 1 + int(base_unshared) &&
                          grads[0].is_contiguous() && in.offset == 0 && grads[0].numel() == in.storage->numel;
    Tensor incoming = GradMode::is_enabled() ? grads[0] : grads[0].detach();
    if (!g.defined()) {
      // Under create_graph too, as libtorch (a stride-0 expand was kept).
      g = unshared ? incoming : incoming.clone(MemoryFormat::Contiguous);
    } else if (!GradMode::is_enabled() && pending_zeros(g) && g.sizes() == incoming.sizes()) {
      g.copy_(incoming);  // zero_grad() then backward: .grad takes the gradient's node, no kernel
    } else if (GradMode::is_enabled()) {
      g = g + incoming;
    } else {
      g.add_(incoming);
    }
    return {};
  }
  std::weak_ptr<TensorImpl> leaf_;
};

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  auto& m = *t.unsafeGetTensorImpl()->autograd;
  if (auto acc = m.grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
  acc->output_shapes = {t.sizes().vec()};
  acc->output_dtypes = {t.dtype()};
  acc->output_devices = {t.device()};
  m.grad_accumulator = acc;
  return acc;
}

}  // namespace
}  // namespace kiln::autograd

namespace kiln::detail {
autograd::Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  if (auto fn = t.grad_fn()) return {fn, uint32_t(t.output_nr())};
  return {autograd::grad_accumulator(t), 0};
}
}  // namespace kiln::detail

namespace kiln::autograd {

// --- the engine ---

namespace {

struct GraphTask {
  bool keep_graph = false;
  bool accumulate = true;  // false for grad(): leaves' .grad are left alone
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, tensor_list> buffers;
  // Gradients captured for grad() and backward(inputs=...): (node, input slot) -> result index.
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  tensor_list captured;
  std::unordered_set<Node*> accumulate_only;  // with backward(inputs=...): the leaves to fill
  // With grad() or backward(inputs=...), only nodes whose gradients lead to a captured or filled
  // one run (libtorch's exec_info); empty: every node runs.
  std::unordered_set<Node*> runs;
  bool filtered = false;
};

void add_to_buffer(GraphTask& task, Node* fn, uint32_t slot, const Tensor& g) {
  auto& buf = task.buffers[fn];
  if (buf.size() < fn->output_shapes.size()) buf.resize(fn->output_shapes.size());
  buf[slot] = buf[slot].defined() ? buf[slot] + g : g;
}

// The hooks that tensors registered on gradient `slot` of `fn` (non-leaf: the grad_fn they had
// then; leaf: its accumulator) live in those tensors' metadata; we find them through
// `hook_owners`, in the order they run. kRetainGrad stands for retain_grad among them.
struct HookRef {
  std::weak_ptr<TensorImpl> tensor;
  uint32_t slot;
  int64_t hook_id;
};
constexpr int64_t kRetainGrad = -1;
using HookOwners = std::unordered_map<Node*, std::vector<HookRef>>;

// Which nodes must run for the gradients grad() or backward(inputs=...) asks for: those with an
// edge into a captured node, a leaf to fill, or another node that must run.
void mark_needed(GraphTask& task, const std::vector<Edge>& roots) {
  std::unordered_map<Node*, bool> needed;  // done nodes
  std::vector<std::pair<Node*, size_t>> stack;
  auto target = [&](Node* n) { return task.captures.count(n) || task.accumulate_only.count(n); };
  for (const auto& r : roots) {
    if (!r.valid() || needed.count(r.fn.get())) continue;
    stack.push_back({r.fn.get(), 0});
    needed[r.fn.get()] = false;
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->next_edges.size()) {
        Node* child = n->next_edges[next++].fn.get();
        if (child && !needed.count(child)) {
          needed[child] = false;
          stack.push_back({child, 0});
        }
        continue;
      }
      bool runs = task.accumulate_only.count(n) > 0;
      for (const auto& e : n->next_edges)
        if (e.valid() && (target(e.fn.get()) || needed[e.fn.get()])) runs = true;
      if (runs) task.runs.insert(n);
      needed[n] = runs;
      stack.pop_back();
    }
  }
  task.filtered = true;
}

void run_engine(GraphTask& task, const std::vector<Edge>& roots, const tensor_list& root_grads,
                const HookOwners& hook_owners, bool create_graph) {
  // Count, for every node reachable from the roots, how many edges point at it.
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  std::unordered_map<Node*, std::shared_ptr<Node>> keep_alive;
  for (const auto& e : roots)
    if (e.valid() && seen.insert(e.fn.get()).second) {
      stack.push_back(e.fn.get());
      keep_alive[e.fn.get()] = e.fn;
    }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const auto& e : n->next_edges) {
      if (!e.valid()) continue;
      ++task.dependencies[e.fn.get()];
      if (seen.insert(e.fn.get()).second) {
        stack.push_back(e.fn.get());
        keep_alive[e.fn.get()] = e.fn;
      }
    }
  }
  auto later_first = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> ready(later_first);
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].valid()) continue;
    add_to_buffer(task, roots[i].fn.get(), roots[i].input_nr, root_grads[i]);
  }
  for (const auto& e : roots)
    if (e.valid() && task.dependencies[e.fn.get()] == 0 && seen.erase(e.fn.get())) ready.push(e.fn.get());

  AutoGradMode mode(create_graph);
  // The nodes of one eager group run as one group (see tracer::EagerGroup): consecutive in this
  // order, as their sequence numbers are.
  uint64_t group = 0;
  int group_uncaught = 0;
  struct CloseGroup {
    uint64_t& group;
    const int& uncaught;
    ~CloseGroup() noexcept(false) {
      if (group) tracer::EagerGroup::end_eager_group(uncaught);
    }
  } close_group{group, group_uncaught};
  while (!ready.empty()) {
    Node* fn = ready.top();
    ready.pop();
    if (fn->eager_group != group) {
      if (group) tracer::EagerGroup::end_eager_group(group_uncaught);
      group = fn->eager_group;
      if (group) group_uncaught = tracer::EagerGroup::begin_eager_group();
    }
    tensor_list grads = std::move(task.buffers[fn]);
    task.buffers.erase(fn);
    grads.resize(fn->output_shapes.size());
    const bool is_leaf_acc = dynamic_cast<AccumulateGrad*>(fn) != nullptr;
    // A leaf that no gradient reached (a custom backward returned none) keeps its .grad as it was.
    const bool nothing_reached = is_leaf_acc && !grads[0].defined();
    for (size_t i = 0; i < grads.size() && !nothing_reached; ++i)
      if (!grads[i].defined())
        grads[i] = zeros(fn->output_shapes[i], TensorOptions(fn->output_dtypes[i]).device(fn->output_devices.at(i)));
    // Tensor hooks see (and may replace) the gradient before it is used.
    if (auto it = hook_owners.find(fn); it != hook_owners.end() && !nothing_reached)
      for (const HookRef& ref : it->second)
        if (auto impl = ref.tensor.lock()) {
          auto& m = *impl->autograd;
          Tensor& g = grads[ref.slot];
          if (ref.hook_id == kRetainGrad) {
            // Keeps the non-leaf's gradient, accumulating over backward calls as PyTorch does.
            m.grad = m.grad.defined() ? m.grad + g.detach() : g.detach();
            continue;
          }
          for (auto& [id, hook] : m.hooks)
            if (int64_t(id) == ref.hook_id)
              if (Tensor r = hook(g); r.defined()) g = r;
        }
    if (auto it = task.captures.find(fn); it != task.captures.end())
      for (auto [slot, index] : it->second) task.captured[index] = grads[slot];

    tensor_list outputs;
    const bool runs = !task.filtered || task.runs.count(fn);
    if (runs && !nothing_reached && (!is_leaf_acc || task.accumulate)) outputs = fn->apply(std::move(grads));
    if (!task.keep_graph) fn->release_variables();

    for (size_t i = 0; i < fn->next_edges.size(); ++i) {
      const Edge& e = fn->next_edges[i];
      if (!e.valid()) continue;
      if (i < outputs.size() && outputs[i].defined()) add_to_buffer(task, e.fn.get(), e.input_nr, outputs[i]);
      if (--task.dependencies[e.fn.get()] == 0) ready.push(e.fn.get());
    }
  }
}

// Collects, for hooks and retain_grad, which tensors hang off which node, in the order they run.
void note_hook_owner(HookOwners& owners, const Tensor& t) {
  auto* m = t.unsafeGetTensorImpl()->autograd.get();
  if (!m || (m->hooks.empty() && !m->retains_grad)) return;
  const Edge current = kiln::detail::gradient_edge(t);
  auto add = [&](Node* fn, uint32_t slot, int64_t id) {
    if (fn) owners[fn].push_back({t.impl_ptr(), slot, id});
  };
  bool retain_pending = m->retains_grad;
  for (const auto& [id, hook] : m->hooks) {
    if (retain_pending && id >= m->retain_grad_position) {
      add(current.fn.get(), current.input_nr, kRetainGrad);
      retain_pending = false;
    }
    auto at = m->hook_nodes.find(id);
    if (at == m->hook_nodes.end()) {
      add(current.fn.get(), current.input_nr, int64_t(id));
    } else if (auto fn = at->second.first.lock()) {
      add(fn.get(), at->second.second, int64_t(id));
    }
  }
  if (retain_pending) add(current.fn.get(), current.input_nr, kRetainGrad);
}

// Hook owners must be found before running: tensors register hooks in their metadata, so we keep
// a registry of tensors with hooks per thread.
thread_local std::vector<std::weak_ptr<TensorImpl>> t_hooked;

HookOwners collect_hook_owners() {
  HookOwners owners;
  std::vector<std::weak_ptr<TensorImpl>> alive;
  std::unordered_set<TensorImpl*> seen;  // a tensor is remembered once per hook and retain_grad
  for (auto& w : t_hooked)
    if (auto impl = w.lock(); impl && seen.insert(impl.get()).second) {
      note_hook_owner(owners, Tensor(impl));
      alive.push_back(w);
    }
  t_hooked.swap(alive);
  return owners;
}

tensor_list make_root_grads(const tensor_list& outputs, const tensor_list& grad_outputs) {
  KILN_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "backward: got ", grad_outputs.size(),
             " gradients for ", outputs.size(), " outputs");
  tensor_list grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    KILN_CHECK(out.requires_grad(), "backward: element ", i,
               " of tensors does not require grad and does not have a grad_fn");
    if (i < grad_outputs.size() && grad_outputs[i].defined()) {
      KILN_CHECK(grad_outputs[i].sizes() == out.sizes(), "backward: Mismatch in shape: grad_output[", i,
                 "] has a shape of ", grad_outputs[i].sizes().vec(), " and output[", i, "] has a shape of ",
                 out.sizes().vec(), ".");
      grads.push_back(grad_outputs[i]);
    } else {
      KILN_CHECK(out.numel() == 1, "backward: grad can be implicitly created only for scalar outputs (got ",
                 kiln::detail::shape_str(out), ")");
      grads.push_back(ones_like(out));
    }
  }
  return grads;
}

}  // namespace

void internal::remember_hooked(const Tensor& t) { t_hooked.push_back(t.impl_ptr()); }

std::string internal::custom_node_name(const char* mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  return "torch::autograd::CppNode<" + name + ">";
}

void backward(const tensor_list& tensors, const tensor_list& grad_tensors, std::optional<bool> retain_graph,
              bool create_graph, const tensor_list& inputs) {
  tensor_list grads = make_root_grads(tensors, grad_tensors);
  GraphTask task;
  task.keep_graph = retain_graph.value_or(create_graph);
  std::vector<Edge> roots;
  for (const auto& t : tensors) roots.push_back(kiln::detail::gradient_edge(t));
  std::vector<std::shared_ptr<Node>> accumulators;  // alive while the engine runs (see grad())
  // Non-leaf inputs get the gradient that reaches them in .grad, as a retained gradient would.
  std::vector<size_t> non_leaves;
  task.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    KILN_CHECK(in.requires_grad(), "backward: One of the differentiated Tensors does not require grad");
    const Edge e = kiln::detail::gradient_edge(in);
    accumulators.push_back(e.fn);
    if (in.is_leaf()) {
      task.accumulate_only.insert(e.fn.get());
    } else {
      task.captures[e.fn.get()].push_back({e.input_nr, i});
      non_leaves.push_back(i);
    }
  }
  if (!inputs.empty()) mark_needed(task, roots);
  run_engine(task, roots, grads, collect_hook_owners(), create_graph);
  for (size_t i : non_leaves) {
    const Tensor& g = task.captured[i];
    if (!g.defined()) continue;
    Tensor& into = inputs[i].mutable_grad();
    const Tensor incoming = create_graph ? g : g.detach();
    into = into.defined() ? into + incoming : incoming;
  }
}

tensor_list grad(const tensor_list& outputs, const tensor_list& inputs, const tensor_list& grad_outputs,
                 std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  KILN_CHECK(!inputs.empty(), "grad: grad requires non-empty inputs.");
  tensor_list grads = make_root_grads(outputs, grad_outputs);
  GraphTask task;
  task.keep_graph = retain_graph.value_or(create_graph);
  task.accumulate = false;
  task.captured.resize(inputs.size());
  // The capture nodes must stay alive while the engine runs: a leaf's accumulator is owned only by
  // the nodes that use the leaf, and a new one would be made (at another address) if it died.
  std::vector<std::shared_ptr<Node>> capture_nodes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_CHECK(inputs[i].requires_grad(), "grad: One of the differentiated Tensors (input ", i, ", ",
               kiln::detail::shape_str(inputs[i]), ") does not require grad");
    Edge e = kiln::detail::gradient_edge(inputs[i]);
    task.captures[e.fn.get()].push_back({e.input_nr, i});
    capture_nodes.push_back(e.fn);
  }
  std::vector<Edge> roots;
  for (const auto& t : outputs) roots.push_back(kiln::detail::gradient_edge(t));
  mark_needed(task, roots);
  run_engine(task, roots, grads, collect_hook_owners(), create_graph);
  for (size_t i = 0; i < inputs.size(); ++i)
    KILN_CHECK(allow_unused || task.captured[i].defined(), "grad: One of the differentiated Tensors (input ", i,
               ") appears to not have been used in the graph. Set allow_unused=True if this is the "
               "desired behavior.");
  if (!create_graph)
    for (auto& g : task.captured)
      if (g.defined()) g = g.detach();
  return task.captured;
}

void zero_grad(Tensor& param, bool set_to_none) {
  Tensor& grad = param.mutable_grad();
  if (!grad.defined()) return;
  if (set_to_none) {
    grad = Tensor();
  } else {
    grad = grad.detach();
    grad.zero_();
  }
}

// --- IValue ---

double IValue::toDouble() const {
  if (auto* d = std::get_if<double>(&v_)) return *d;
  if (auto* i = std::get_if<int64_t>(&v_)) return double(*i);
  throw Error("IValue: expected a double");
}
int64_t IValue::toInt() const {
  if (auto* i = std::get_if<int64_t>(&v_)) return *i;
  if (auto* b = std::get_if<bool>(&v_)) return *b;
  throw Error("IValue: expected an int");
}
bool IValue::toBool() const {
  if (auto* b = std::get_if<bool>(&v_)) return *b;
  throw Error("IValue: expected a bool");
}
Tensor IValue::toTensor() const {
  if (auto* t = std::get_if<Tensor>(&v_)) return *t;
  throw Error("IValue: expected a tensor");
}
const std::string& IValue::toStringRef() const {
  if (auto* s = std::get_if<std::string>(&v_)) return *s;
  throw Error("IValue: expected a string");
}

// --- custom functions ---

void AutogradContext::save_for_backward(const tensor_list& tensors) { to_save_ = tensors; }

tensor_list AutogradContext::get_saved_variables() const {
  tensor_list out;
  auto owner = node_.lock();
  for (const auto& s : saved_) out.push_back(s.defined() ? s.unpack(owner) : Tensor());
  return out;
}

void AutogradContext::mark_dirty(const tensor_list& inputs) {
  for (const auto& t : inputs) dirty_.push_back(t.unsafeGetTensorImpl());
}

void AutogradContext::mark_non_differentiable(const tensor_list& outputs) {
  for (const auto& t : outputs) non_differentiable_.push_back(t.unsafeGetTensorImpl());
}

bool AutogradContext::needs_input_grad(size_t index) const {
  return index < needs_input_grad_.size() && needs_input_grad_[index];
}

tensor_list CustomNodeBase::apply(tensor_list&& grads) {
  tensor_list result = backward_fn(&ctx, std::move(grads));
  // backward returns one entry per forward argument; keep those of tensor arguments.
  // As libtorch, trailing undefined gradients past the forward's arguments are allowed (a
  // backward written for an optional argument that was left out).
  while (result.size() > input_is_tensor.size() && !result.back().defined()) result.pop_back();
  tensor_list per_input;
  if (result.size() == input_is_tensor.size()) {
    for (size_t i = 0; i < result.size(); ++i)
      if (input_is_tensor[i]) per_input.push_back(result[i]);
  } else {
    per_input = std::move(result);
  }
  KILN_CHECK(per_input.size() == next_edges.size(), fn_name, ": backward returned ", per_input.size(),
             " gradients, expected ", next_edges.size());
  // As libtorch's validate_outputs: a gradient that broadcasts to its input is summed down to it.
  for (size_t i = 0; i < per_input.size() && i < input_shapes.size(); ++i) {
    Tensor& g = per_input[i];
    if (!g.defined() || !next_edges[i].valid()) continue;
    if (g.sizes() != IntArrayRef(input_shapes[i])) {
      const Shape& want = input_shapes[i];
      bool expandable = int64_t(want.size()) <= g.dim();
      for (size_t d = 0; expandable && d < want.size(); ++d) {
        const int64_t have = g.size(g.dim() - int64_t(want.size()) + int64_t(d));
        expandable = want[d] == have || want[d] == 1;
      }
      KILN_CHECK(expandable, "Function ", fn_name, " returned an invalid gradient at index ", i, " - got ",
                 g.sizes().vec(), " but expected shape compatible with ", want);
      g = kiln::detail::sum_to(g, want);
    }
    if (g.dtype() != input_dtypes[i]) g = g.to(input_dtypes[i]);
  }
  return per_input;
}

void CustomNodeBase::release_variables() {
  for (auto& s : ctx.saved_) s.reset();
}

namespace internal {

void collect_tensors(tensor_list& out, std::vector<bool>& is_tensor, const Tensor& t) {
  out.push_back(t);
  is_tensor.push_back(true);
}
void collect_tensors(tensor_list& out, std::vector<bool>& is_tensor, const tensor_list& ts) {
  for (const auto& t : ts) collect_tensors(out, is_tensor, t);
}

void attach_custom(const std::shared_ptr<CustomNodeBase>& node, const tensor_list& inputs, tensor_list& outputs) {
  static std::atomic<uint64_t> counter{uint64_t(1) << 62};
  node->sequence_nr = counter.fetch_add(1);
  const bool track = GradMode::is_enabled() && kiln::detail::any_requires_grad(inputs);
  const auto& dirty = node->ctx.dirty_;
  auto is_dirty = [&](const Tensor& t) {
    return t.defined() && std::find(dirty.begin(), dirty.end(), t.unsafeGetTensorImpl()) != dirty.end();
  };
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      KILN_CHECK(!(is_dirty(outputs[i]) && outputs[i].is_same(outputs[j])), node->fn_name, ": outputs ", j, " and ", i,
                 " are the same tensor, an input marked dirty (modified in place): return it once");
  for (const auto& t : inputs)
    if (is_dirty(t)) {
      KILN_CHECK(!(track && t.requires_grad() && t.is_leaf()),
                 "a leaf Variable that requires grad has been used in an in-place operation.");
      ++t.unsafeGetTensorImpl()->storage->version;
    }
  if (track) {
    for (const auto& t : inputs) {
      node->next_edges.push_back(kiln::detail::gradient_edge(t));
      node->input_shapes.push_back(t.defined() ? Shape(t.sizes()) : Shape());
      node->input_dtypes.push_back(t.defined() ? t.dtype() : kFloat);
    }
    for (uint32_t i = 0; i < outputs.size(); ++i) {
      Tensor& out = outputs[i];
      node->output_shapes.push_back(out.sizes().vec());
      node->output_dtypes.push_back(out.dtype());
      node->output_devices.push_back(out.device());
      bool differentiable = out.is_floating_point();
      for (auto* nd : node->ctx.non_differentiable_) differentiable &= nd != out.unsafeGetTensorImpl();
      if (!differentiable) continue;
      // An output that is an input returned as is becomes a new alias, so its history is its own;
      // an input marked dirty is itself the output (its history rebased on this node).
      for (const auto& in : inputs)
        if (in.defined() && in.is_same(out) && !is_dirty(out)) out = out.detach();
      kiln::detail::set_history(out, node, i);
    }
  }
  for (const auto& t : node->ctx.to_save_) {
    // A saved output is kept without its history: that history is this node (a cycle otherwise).
    bool is_output = false;
    for (const auto& out : outputs) is_output |= out.defined() && t.defined() && out.is_alias_of(t);
    node->ctx.saved_.push_back(t.defined() ? SavedTensor(is_output ? t.detach() : t, false) : SavedTensor());
  }
  node->ctx.to_save_.clear();
}

}  // namespace internal
}  // namespace kiln::autograd
