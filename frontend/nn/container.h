// Containers: Sequential (modules chained through forward), ModuleList (modules held by index)
// and Functional (a function as a module), with libtorch's constructors and accessors.
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "frontend/nn/module.h"

namespace kiln::nn {

namespace detail {
template <typename M, typename = void>
struct has_tensor_forward : std::false_type {};
template <typename M>
struct has_tensor_forward<M, std::void_t<decltype(std::declval<M&>().forward(std::declval<Tensor>()))>>
    : std::true_type {};
}  // namespace detail

// Any module whose forward takes one tensor, held with a type-erased call to that forward.
class AnyModule {
 public:
  AnyModule() = default;
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, M>>>
  AnyModule(std::shared_ptr<M> module) : module_(module) {
    KILN_CHECK(module, "AnyModule: the module is null");
    if constexpr (detail::has_tensor_forward<M>::value) {
      forward_ = [raw = module.get()](const Tensor& x) { return Tensor(raw->forward(x)); };
    } else {
      forward_ = [name = module->name()](const Tensor&) -> Tensor {
        throw Error(kiln::detail::concat("Sequential: the forward of ", name, " does not take a single Tensor"));
      };
    }
  }
  template <typename M>
  AnyModule(const ModuleHolder<M>& holder) : AnyModule(holder.ptr()) {}
  // A module given by value is moved into a new shared_ptr, as libtorch does.
  template <typename M,
            typename = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<M>> && !std::is_reference_v<M>>>
  AnyModule(M&& module) : AnyModule(std::make_shared<M>(std::move(module))) {}

  Tensor forward(const Tensor& input) const {
    KILN_CHECK(module_, "AnyModule: forward() on an empty AnyModule");
    return forward_(input);
  }
  bool is_empty() const noexcept { return module_ == nullptr; }
  const std::shared_ptr<Module>& ptr() const noexcept { return module_; }
  template <typename T>
  T& get() const {
    auto* m = dynamic_cast<T*>(module_.get());
    KILN_CHECK(m, "AnyModule: the module is a ", module_ ? module_->name() : "null module", ", not the type asked for");
    return *m;
  }

 private:
  std::shared_ptr<Module> module_;
  std::function<Tensor(const Tensor&)> forward_;
};

// A name with a module, for Sequential({{"fc", nn::Linear(2, 3)}, {"act", nn::ReLU()}}).
struct NamedAnyModule {
  template <typename M>
  NamedAnyModule(std::string name, M&& module) : name(std::move(name)), module(std::forward<M>(module)) {}
  std::string name;
  AnyModule module;
};

// Runs its children in order, each on the previous one's output. Children are named "0", "1", ...
// unless given names.
class SequentialImpl : public Module {
 public:
  SequentialImpl() = default;
  template <typename... Modules>
  explicit SequentialImpl(Modules&&... modules) {
    (push_back(std::forward<Modules>(modules)), ...);
  }
  explicit SequentialImpl(std::initializer_list<NamedAnyModule> named_modules) {
    for (const auto& m : named_modules) push_back(m.name, m.module);
  }

  template <typename M>
  void push_back(M&& module) {
    push_back(std::to_string(modules_.size()), std::forward<M>(module));
  }
  template <typename M>
  void push_back(std::string name, M&& module) {
    AnyModule any(std::forward<M>(module));
    register_module(std::move(name), any.ptr());
    modules_.push_back(std::move(any));
  }
  // Appends every module of another Sequential.
  void extend(const SequentialImpl& other) {
    for (const auto& m : other.modules_) push_back(m);
  }

  // ReturnType is accepted for libtorch's `seq->forward<Tensor>(x)`.
  template <typename ReturnType = Tensor>
  ReturnType forward(const Tensor& input) {
    KILN_CHECK(!modules_.empty(), "Sequential: cannot call forward() on an empty Sequential");
    Tensor x = input;
    for (const auto& m : modules_) x = m.forward(x);
    return x;
  }

  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }
  std::shared_ptr<Module> ptr(size_t index) const { return at_index(index).ptr(); }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  template <typename T>
  T& at(size_t index) const {
    return at_index(index).get<T>();
  }
  std::vector<AnyModule>::const_iterator begin() const { return modules_.begin(); }
  std::vector<AnyModule>::const_iterator end() const { return modules_.end(); }
  void pretty_print(std::ostream& stream) const override { stream << "kiln::nn::Sequential"; }

 private:
  const AnyModule& at_index(size_t index) const {
    KILN_CHECK(index < modules_.size(), "Sequential: index ", index, " is out of range (size ", modules_.size(), ")");
    return modules_[index];
  }
  std::vector<AnyModule> modules_;
};

class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  Sequential() : ModuleHolder() {}
  Sequential(std::initializer_list<NamedAnyModule> named_modules)
      : ModuleHolder(std::make_shared<SequentialImpl>(named_modules)) {}
};

// Modules held by index and registered as children "0", "1", ...; it has no forward.
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() = default;
  template <typename... Modules>
  explicit ModuleListImpl(Modules&&... modules) {
    (push_back(std::forward<Modules>(modules)), ...);
  }
  template <typename M>
  void push_back(std::shared_ptr<M> module) {
    register_module(std::to_string(modules_.size()), module);
    modules_.push_back(std::move(module));
  }
  template <typename M>
  void push_back(const ModuleHolder<M>& holder) {
    push_back(holder.ptr());
  }
  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }
  std::shared_ptr<Module> ptr(size_t index) const {
    KILN_CHECK(index < modules_.size(), "ModuleList: index ", index, " is out of range (size ", modules_.size(), ")");
    return modules_[index];
  }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  template <typename T>
  T& at(size_t index) const {
    auto* m = dynamic_cast<T*>(ptr(index).get());
    KILN_CHECK(m, "ModuleList: module ", index, " is a ", modules_[index]->name(), ", not the type asked for");
    return *m;
  }
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return modules_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return modules_.end(); }
  void pretty_print(std::ostream& stream) const override { stream << "kiln::nn::ModuleList"; }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
KILN_MODULE(ModuleList);

// A function of one tensor as a module (`nn::Functional(torch::relu)`), extra arguments bound
// after the tensor (`nn::Functional(torch::softmax, 1, std::nullopt)`).
class FunctionalImpl : public Module {
 public:
  using Function = std::function<Tensor(Tensor)>;
  explicit FunctionalImpl(Function function) : function_(std::move(function)) {}
  template <typename F, typename Head, typename... Tail>
  explicit FunctionalImpl(F f, Head&& head, Tail&&... tail)
      : function_([f, args = std::make_tuple(std::forward<Head>(head), std::forward<Tail>(tail)...)](Tensor x) {
          return std::apply([&](const auto&... a) { return Tensor(f(x, a...)); }, args);
        }) {}
  Tensor forward(Tensor input) { return function_(std::move(input)); }
  Tensor operator()(Tensor input) { return forward(std::move(input)); }
  void pretty_print(std::ostream& stream) const override { stream << "kiln::nn::Functional()"; }

 private:
  Function function_;
};
KILN_MODULE(Functional);

}  // namespace kiln::nn
