// nn::Module, the base of every layer, and ModuleHolder, the shared handle users pass around
// (`nn::Linear fc{nullptr}; fc->weight; fc(x)`), both as in libtorch 1.13.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "frontend/device.h"
#include "frontend/nn/ordered_dict.h"
#include "frontend/tensor.h"

namespace kiln::serialize {
class OutputArchive;
class InputArchive;
}  // namespace kiln::serialize

namespace kiln::nn {

template <typename Contained>
class ModuleHolder;

namespace detail {
// Lets templates recognize any ModuleHolder<T> (and the classes TORCH_MODULE derives from it).
struct ModuleHolderIndicator {};
template <typename T>
inline constexpr bool is_module_holder_v = std::is_base_of_v<ModuleHolderIndicator, std::decay_t<T>>;
}  // namespace detail

class Module : public std::enable_shared_from_this<Module> {
 public:
  using ModuleApplyFunction = std::function<void(Module&)>;
  using NamedModuleApplyFunction = std::function<void(const std::string&, Module&)>;

  // `name` is what name() and printing show; by default the demangled class name.
  explicit Module(std::string name);
  Module();
  virtual ~Module() = default;

  const std::string& name() const noexcept;

  // --- the module tree ---
  // Own parameters first, then each child's (depth first, in registration order), with dotted
  // names ("fc1.weight"), as libtorch orders them.
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true) const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_modules(const std::string& name_prefix = std::string(),
                                                                  bool include_self = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;
  // Calls `fn` on this module and every descendant, parents first.
  void apply(const ModuleApplyFunction& fn);
  void apply(const NamedModuleApplyFunction& fn, const std::string& name_prefix = std::string());

  // --- modes and state ---
  virtual void train(bool on = true);
  void eval() { train(false); }
  virtual bool is_training() const noexcept { return is_training_; }
  // Zeroes (or, with set_to_none, drops) the gradients of every parameter; libtorch 1.13's
  // default keeps zero-filled gradients.
  virtual void zero_grad(bool set_to_none = false);
  // Converts every parameter and buffer in place: tensors keep their identity (an optimizer
  // made before still holds them), as libtorch's set_data does.
  virtual void to(ScalarType dtype, bool non_blocking = false);
  virtual void to(Device device, ScalarType dtype, bool non_blocking = false);
  virtual void to(Device device, bool non_blocking = false);

  // The module as its concrete type, or null (`module.as<nn::Linear>()`, `as<LinearImpl>()`).
  template <typename T>
  auto* as() noexcept {
    if constexpr (detail::is_module_holder_v<T>)
      return dynamic_cast<typename T::ContainedType*>(this);
    else
      return dynamic_cast<T*>(this);
  }

  // --- registration ---
  // Parameters require grad by default; an undefined tensor may be registered (Linear without
  // bias) and is skipped by parameters().
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor tensor);
  template <typename ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, std::shared_ptr<ModuleType> module) {
    static_assert(std::is_base_of_v<Module, ModuleType>, "register_module: expected a module");
    check_child_name(name);
    KILN_CHECK(module, "register_module: submodule '", name, "' is empty (a null module)");
    children_.insert(std::move(name), module);
    return module;
  }
  template <typename ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, ModuleHolder<ModuleType> holder) {
    return register_module(std::move(name), holder.ptr());
  }
  template <typename ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string& name, std::shared_ptr<ModuleType> module) {
    KILN_CHECK(children_.contains(name), "replace_module: no submodule named '", name, "'");
    children_[name] = module;
    return module;
  }
  template <typename ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string& name, ModuleHolder<ModuleType> holder) {
    return replace_module(name, holder.ptr());
  }
  void unregister_module(const std::string& name);

  // --- serialization (frontend/nn/archive.cpp) ---
  // Writes the state_dict() (own parameters, own buffers, then the children's, dotted names).
  virtual void save(serialize::OutputArchive& archive) const;
  // Reads the tensors save() wrote, in place as load_state_dict does; keys the archive holds
  // besides (an optimizer's, an epoch) are left alone. Throws kiln::Error naming the file and
  // the missing or mismatched keys before changing anything.
  virtual void load(serialize::InputArchive& archive);

  // Prints this module alone (children are printed by operator<<).
  virtual void pretty_print(std::ostream& stream) const;

 protected:
  OrderedDict<std::string, Tensor> parameters_{"Parameter"};

 private:
  friend std::ostream& operator<<(std::ostream& stream, const Module& module);
  void check_child_name(const std::string& name) const;
  void pretty_print_recursive(std::ostream& stream, const std::string& indentation) const;
  void apply_to_submodules(const std::function<void(const std::string&, const std::shared_ptr<Module>&)>& fn,
                           const std::string& name_prefix) const;
  std::shared_ptr<Module> shared_from_this_checked() const;
  void convert(const std::function<Tensor(const Tensor&)>& conversion);

  OrderedDict<std::string, Tensor> buffers_{"Buffer"};
  OrderedDict<std::string, std::shared_ptr<Module>> children_{"Submodule"};
  mutable std::optional<std::string> name_;
  bool is_training_ = true;
};

// The module and its children, indented, as libtorch prints them.
std::ostream& operator<<(std::ostream& stream, const Module& module);

// A shared handle to a module, with the module's own forward as its call operator.
template <typename Contained>
class ModuleHolder : detail::ModuleHolderIndicator {
 public:
  using ContainedType = Contained;

  // Default-constructs the module; a module without a default constructor must be given
  // `nullptr` (the empty state) instead, as in libtorch.
  ModuleHolder() : impl_(default_construct()) {
    static_assert(std::is_default_constructible_v<Contained>,
                  "You are trying to default construct a module which has no default constructor. Use = nullptr "
                  "to give it the empty state (e.g. `Linear linear = nullptr;` instead of `Linear linear;`).");
  }
  ModuleHolder(std::nullptr_t) {}
  // Forwards the arguments to the module's constructor (`nn::Linear(3, 2)`).
  template <typename Head, typename... Tail,
            typename = std::enable_if_t<!(sizeof...(Tail) == 0 &&
                                          (std::is_base_of_v<ModuleHolder, std::decay_t<Head>> ||
                                           std::is_same_v<std::decay_t<Head>, std::shared_ptr<Contained>>))>>
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}
  ModuleHolder(std::shared_ptr<Contained> module) : impl_(std::move(module)) {}

  explicit operator bool() const noexcept { return !is_empty(); }
  bool is_empty() const noexcept { return impl_ == nullptr; }
  Contained* operator->() { return get(); }
  const Contained* operator->() const { return get(); }
  Contained& operator*() { return *get(); }
  const Contained& operator*() const { return *get(); }
  const std::shared_ptr<Contained>& ptr() const {
    check_not_empty();
    return impl_;
  }
  Contained* get() {
    check_not_empty();
    return impl_.get();
  }
  const Contained* get() const {
    check_not_empty();
    return impl_.get();
  }
  // Calls the module's forward.
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) {
    return get()->forward(std::forward<Args>(args)...);
  }
  template <typename Arg>
  decltype(auto) operator[](Arg&& arg) {
    return (*get())[std::forward<Arg>(arg)];
  }

 protected:
  std::shared_ptr<Contained> impl_;

 private:
  static std::shared_ptr<Contained> default_construct() {
    if constexpr (std::is_default_constructible_v<Contained>)
      return std::make_shared<Contained>();
    else
      return nullptr;
  }
  void check_not_empty() const {
    KILN_CHECK(impl_, "Accessing empty ModuleHolder: this ", demangled_name(),
               " was made with nullptr and "
               "never assigned a module");
  }
  static std::string demangled_name();
};

namespace detail {
std::string demangle(const char* mangled);
}
template <typename Contained>
std::string ModuleHolder<Contained>::demangled_name() {
  return detail::demangle(typeid(Contained).name());
}

template <typename Contained>
std::ostream& operator<<(std::ostream& stream, const ModuleHolder<Contained>& holder) {
  return stream << *holder;
}

}  // namespace kiln::nn

// Declares `Name` as the holder of `NameImpl`: `struct NetImpl : nn::Module {...}; KILN_MODULE(Net);`
#define KILN_MODULE_IMPL(Name, ImplType)                    \
  class Name : public ::kiln::nn::ModuleHolder<ImplType> {  \
   public:                                                  \
    using ::kiln::nn::ModuleHolder<ImplType>::ModuleHolder; \
    using ::kiln::nn::ModuleHolder<ImplType>::get;          \
  }
#define KILN_MODULE(Name) KILN_MODULE_IMPL(Name, Name##Impl)
#ifndef TORCH_MODULE
#define TORCH_MODULE_IMPL(Name, ImplType) KILN_MODULE_IMPL(Name, ImplType)
#define TORCH_MODULE(Name) KILN_MODULE(Name)
#endif
