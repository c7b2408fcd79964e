// Reverse-mode autograd, as in PyTorch: each differentiable op attaches a backward node (grad_fn)
// to its output; backward() walks those nodes in reverse dependency order. Backward formulas are
// kiln ops, so the backward pass is traced into the same lazy segment as the forward pass.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <typeinfo>
#include <variant>
#include <vector>

#include "frontend/tensor.h"
#include "runtime/small_vector.h"

namespace kiln {
using tensor_list = std::vector<Tensor>;
using variable_list = std::vector<Tensor>;
}  // namespace kiln

namespace kiln::autograd {

// Where a gradient goes next: input `input_nr` of backward node `fn`.
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// A tensor kept for backward, with the version it had when saved. Outputs are kept without their
// grad_fn (the node that saves them is that grad_fn) to avoid a reference cycle.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output);
  // The saved tensor, re-attached to `owner` if it was an output; throws if it was modified in
  // place since, or if the graph was freed.
  Tensor unpack(const std::shared_ptr<Node>& owner) const;
  void reset() {
    data_ = Tensor();
    released_ = true;
  }
  bool defined() const { return data_.defined() || released_; }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  bool is_output_ = false, requires_grad_ = false, released_ = false;
  std::shared_ptr<Node> grad_fn_;  // inputs only
  uint32_t output_nr_ = 0;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  virtual ~Node() = default;
  virtual std::string name() const = 0;
  // Gradients of the inputs (one per next edge; undefined where none flows) from the gradients of
  // the outputs.
  virtual tensor_list apply(tensor_list&& grad_outputs) = 0;
  // Drops saved tensors after a backward without retain_graph.
  virtual void release_variables() {}

  // Inline for the usual counts (up to three inputs, one output): a node allocates none of them.
  detail::SmallVector<Edge, 3> next_edges;
  detail::SmallVector<Shape, 1> output_shapes;  // to make zero gradients for unused outputs
  detail::SmallVector<ScalarType, 1> output_dtypes;
  detail::SmallVector<Device, 1> output_devices;  // where those zero gradients are made
  uint64_t sequence_nr = 0;                       // creation order: later nodes run first among ready
  uint64_t eager_group = 0;                       // the tracer::EagerGroup it was made in (0: none): eager mode runs
                                                  // the backward of a group's nodes as one group too
};

// Per-tensor autograd state (PyTorch's AutogradMeta).
struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  uint32_t version = 0;  // the storage's version when grad_fn was set: a view older than its storage is remade
  Tensor grad;
  std::weak_ptr<Node> grad_accumulator;  // a leaf's AccumulateGrad, made on first use
  std::vector<std::pair<unsigned, std::function<Tensor(Tensor)>>> hooks;
  unsigned next_hook = 0;
  // The grad_fn (and its output) each hook of a non-leaf was registered on, by hook id: as in
  // libtorch, a hook sees the gradient of the value it was registered on, even after the tensor
  // is modified in place. retain_grad follows the tensor's current grad_fn, and runs among its
  // hooks as if it were the hook registered with id `retain_grad_position`.
  std::map<unsigned, std::pair<std::weak_ptr<Node>, uint32_t>> hook_nodes;
  unsigned retain_grad_position = 0;
};

// Gradient mode, per thread.
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};
struct AutoGradMode {
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};
struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};

// Clears a parameter's gradient as zero_grad does: drops it, or zeroes it in place (detached from
// any history), as Module::zero_grad and Optimizer::zero_grad both do.
void zero_grad(Tensor& param, bool set_to_none);

// Gradients of `outputs` with respect to `inputs` (PyTorch's torch.autograd.grad).
tensor_list grad(const tensor_list& outputs, const tensor_list& inputs, const tensor_list& grad_outputs = {},
                 std::optional<bool> retain_graph = std::nullopt, bool create_graph = false, bool allow_unused = false);
// Accumulates into the .grad of the leaves (Tensor::backward).
void backward(const tensor_list& tensors, const tensor_list& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const tensor_list& inputs = {});

// --- custom functions, as libtorch's torch::autograd::Function<T> ---

// What ctx->saved_data holds: doubles, integers and bools (and tensors, as libtorch's IValue can).
class IValue {
 public:
  IValue() = default;
  IValue(double v) : v_(v) {}
  IValue(float v) : v_(double(v)) {}
  IValue(int64_t v) : v_(v) {}
  IValue(int v) : v_(int64_t(v)) {}
  IValue(bool v) : v_(v) {}
  IValue(Tensor t) : v_(std::move(t)) {}
  IValue(std::string s) : v_(std::move(s)) {}
  IValue(const char* s) : v_(std::string(s)) {}
  double toDouble() const;
  int64_t toInt() const;
  bool toBool() const;
  Tensor toTensor() const;
  const std::string& toStringRef() const;
  bool isDouble() const { return std::holds_alternative<double>(v_); }
  bool isInt() const { return std::holds_alternative<int64_t>(v_); }
  bool isBool() const { return std::holds_alternative<bool>(v_); }
  bool isTensor() const { return std::holds_alternative<Tensor>(v_); }

 private:
  std::variant<std::monostate, double, int64_t, bool, Tensor, std::string> v_;
};

struct CustomNodeBase;
namespace internal {
void attach_custom(const std::shared_ptr<CustomNodeBase>& node, const tensor_list& inputs, tensor_list& outputs);
}

class AutogradContext {
 public:
  void save_for_backward(const tensor_list& tensors);
  tensor_list get_saved_variables() const;
  // Inputs the forward modified in place: their version counters are bumped and they become
  // outputs of this function (their history rebased on it), as in libtorch.
  void mark_dirty(const tensor_list& inputs);
  void mark_non_differentiable(const tensor_list& outputs);
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  bool needs_input_grad(size_t index) const;
  std::map<std::string, IValue> saved_data;

 private:
  template <class T>
  friend struct Function;
  friend struct CustomNodeBase;
  friend void internal::attach_custom(const std::shared_ptr<CustomNodeBase>&, const tensor_list&, tensor_list&);
  tensor_list to_save_;             // as given in forward; outputs are recognized after it
  std::vector<SavedTensor> saved_;  // filled once the outputs are known
  std::vector<bool> needs_input_grad_;
  std::vector<TensorImpl*> non_differentiable_;
  std::vector<TensorImpl*> dirty_;
  bool materialize_grads_ = true;
  std::weak_ptr<Node> node_;
};

// The backward node of a custom function: calls T::backward through `backward_fn`.
struct CustomNodeBase : Node {
  std::string fn_name;
  AutogradContext ctx;
  std::function<tensor_list(AutogradContext*, tensor_list)> backward_fn;
  std::vector<bool> input_is_tensor;  // which forward arguments were tensors
  std::vector<Shape> input_shapes;    // of the tensor arguments: a gradient must broadcast to them
  std::vector<ScalarType> input_dtypes;
  std::string name() const override { return fn_name; }
  tensor_list apply(tensor_list&& grads) override;
  void release_variables() override;
};

namespace internal {
// Connects the outputs of a custom function's forward to its backward node.
void attach_custom(const std::shared_ptr<CustomNodeBase>& node, const tensor_list& inputs, tensor_list& outputs);
void collect_tensors(tensor_list& out, std::vector<bool>& is_tensor, const Tensor& t);
void collect_tensors(tensor_list& out, std::vector<bool>& is_tensor, const tensor_list& ts);
template <typename T>
void collect_tensors(tensor_list&, std::vector<bool>& is_tensor, const T&) {
  is_tensor.push_back(false);
}
inline tensor_list as_list(const Tensor& t) { return {t}; }
// Tensors with hooks or retain_grad are remembered so that backward can find them.
void remember_hooked(const Tensor& t);
inline tensor_list as_list(const tensor_list& t) { return t; }
// libtorch's name for the node of custom function T: "torch::autograd::CppNode<T>".
std::string custom_node_name(const char* mangled_type_name);
}  // namespace internal

template <class T>
struct Function {
  template <typename... Args>
  static auto apply(Args&&... args) {
    auto node = std::make_shared<CustomNodeBase>();
    node->fn_name = internal::custom_node_name(typeid(T).name());
    tensor_list inputs;
    (internal::collect_tensors(inputs, node->input_is_tensor, args), ...);
    for (auto& t : inputs) node->ctx.needs_input_grad_.push_back(t.defined() && t.requires_grad());
    node->ctx.node_ = node;
    node->backward_fn = [](AutogradContext* ctx, tensor_list grads) { return T::backward(ctx, std::move(grads)); };
    using Result = decltype(T::forward(&node->ctx, std::forward<Args>(args)...));
    Result result;
    {
      NoGradGuard no_grad;
      result = T::forward(&node->ctx, std::forward<Args>(args)...);
    }
    tensor_list outputs = internal::as_list(result);
    internal::attach_custom(node, inputs, outputs);
    if constexpr (std::is_same_v<Result, Tensor>)
      return outputs[0];
    else
      return outputs;
  }
};

}  // namespace kiln::autograd
