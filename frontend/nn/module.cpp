// nn::Module: the registry of parameters, buffers and children, walked in libtorch's order.
#include "frontend/nn/module.h"

#include <cxxabi.h>

#include <cstdlib>

#include "frontend/autograd.h"

namespace kiln::nn {

namespace detail {
std::string demangle(const char* mangled) {
  int status = 0;
  char* plain = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = status == 0 && plain ? plain : mangled;
  std::free(plain);
  return out;
}
}  // namespace detail

namespace {
std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}
}  // namespace

Module::Module(std::string name) : name_(std::move(name)) {}
Module::Module() = default;

const std::string& Module::name() const noexcept {
  // The dynamic type is only known once construction is over, so the name is made on first use.
  if (!name_) name_ = detail::demangle(typeid(*this).name());
  return *name_;
}

// --- the module tree ---

void Module::apply_to_submodules(const std::function<void(const std::string&, const std::shared_ptr<Module>&)>& fn,
                                 const std::string& name_prefix) const {
  for (const auto& child : children_) {
    const std::string qualified = join_name(name_prefix, child.key());
    fn(qualified, child.value());
    child.value()->apply_to_submodules(fn, qualified);
  }
}

void Module::apply(const ModuleApplyFunction& fn) {
  fn(*this);
  apply_to_submodules([&](const std::string&, const std::shared_ptr<Module>& m) { fn(*m); }, "");
}

void Module::apply(const NamedModuleApplyFunction& fn, const std::string& name_prefix) {
  fn(name_prefix, *this);
  apply_to_submodules([&](const std::string& name, const std::shared_ptr<Module>& m) { fn(name, *m); }, name_prefix);
}

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<std::string, Tensor> result("Parameter");
  auto add_own = [&](const std::string& prefix, const Module& m) {
    for (const auto& p : m.parameters_)
      if (p.value().defined()) result.insert(join_name(prefix, p.key()), p.value());
  };
  add_own("", *this);
  if (recurse)
    apply_to_submodules([&](const std::string& name, const std::shared_ptr<Module>& m) { add_own(name, *m); }, "");
  return result;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<std::string, Tensor> result("Buffer");
  auto add_own = [&](const std::string& prefix, const Module& m) {
    for (const auto& b : m.buffers_)
      if (b.value().defined()) result.insert(join_name(prefix, b.key()), b.value());
  };
  add_own("", *this);
  if (recurse)
    apply_to_submodules([&](const std::string& name, const std::shared_ptr<Module>& m) { add_own(name, *m); }, "");
  return result;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

std::shared_ptr<Module> Module::shared_from_this_checked() const {
  auto self = const_cast<Module*>(this)->weak_from_this().lock();
  KILN_CHECK(self,
             "It looks like you attempted to retrieve your top-level module as a shared_ptr, but it is not "
             "stored in a shared_ptr. Use std::make_shared<",
             name(),
             "> instead of creating your module on the "
             "stack, or alternatively do not try to access your top-level module at all by passing "
             "/*include_self=*/false to modules() or named_modules()");
  return self;
}

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_modules(const std::string& name_prefix,
                                                                        bool include_self) const {
  OrderedDict<std::string, std::shared_ptr<Module>> result("Module");
  if (include_self) result.insert(name_prefix, shared_from_this_checked());
  apply_to_submodules([&](const std::string& name, const std::shared_ptr<Module>& m) { result.insert(name, m); },
                      name_prefix);
  return result;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) const {
  return named_modules("", include_self).values();
}

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_children() const { return children_; }
std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

// --- modes and state ---

void Module::train(bool on) {
  for (auto& child : children_) child.value()->train(on);
  is_training_ = on;
}

void Module::zero_grad(bool set_to_none) {
  for (auto& child : children_) child.value()->zero_grad(set_to_none);
  for (auto& p : parameters_)
    if (p.value().defined()) autograd::zero_grad(p.value(), set_to_none);
}

void Module::convert(const std::function<Tensor(const Tensor&)>& conversion) {
  for (auto& child : children_) child.value()->convert(conversion);
  autograd::NoGradGuard no_grad;
  auto rebind = [&](Tensor& t) {
    if (!t.defined()) return;
    Tensor converted = conversion(t.detach());
    if (converted.unsafeGetTensorImpl()->storage == t.unsafeGetTensorImpl()->storage) return;  // unchanged
    // Point the existing tensor at the converted value; its autograd flag stays, its gradient
    // (of the old dtype) goes.
    TensorImpl& impl = *t.unsafeGetTensorImpl();
    const TensorImpl& src = *converted.unsafeGetTensorImpl();
    impl.storage = src.storage;
    impl.sizes = src.sizes;
    impl.strides = src.strides;
    impl.offset = src.offset;
    impl.dtype = src.dtype;
    impl.view_base = src.view_base;
    if (t.requires_grad()) t.mutable_grad() = Tensor();
  };
  for (auto& p : parameters_) rebind(p.value());
  for (auto& b : buffers_) rebind(b.value());
}

void Module::to(ScalarType dtype, bool) {
  convert([dtype](const Tensor& t) { return t.is_floating_point() ? t.to(dtype) : t; });
}
void Module::to(Device device, ScalarType dtype, bool non_blocking) {
  to(device, non_blocking);
  to(dtype, non_blocking);
}
void Module::to(Device device, bool) {
  kiln::detail::require_device(device.type(), device.index(), "Module::to");
  convert([device](const Tensor& t) { return t.to(device, t.dtype()); });
}

// --- registration ---

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  KILN_CHECK(!name.empty(), "register_parameter: parameter name must not be empty");
  KILN_CHECK(name.find('.') == std::string::npos, "register_parameter: parameter name must not contain a dot (got '",
             name, "')");
  if (tensor.defined()) {
    KILN_CHECK(!requires_grad || tensor.is_floating_point(), "register_parameter: parameter '", name,
               "' must be floating point to require grad, got ", tensor.dtype());
    KILN_CHECK(tensor.is_leaf(), "register_parameter: parameter '", name,
               "' must be a leaf tensor (it has a "
               "grad_fn); register a detached tensor instead");
    tensor.requires_grad_(requires_grad);
  }
  return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
  KILN_CHECK(!name.empty(), "register_buffer: buffer name must not be empty");
  KILN_CHECK(name.find('.') == std::string::npos, "register_buffer: buffer name must not contain a dot (got '", name,
             "')");
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::check_child_name(const std::string& name) const {
  KILN_CHECK(!name.empty(), "register_module: submodule name must not be empty");
  KILN_CHECK(name.find('.') == std::string::npos, "register_module: submodule name must not contain a dot (got '", name,
             "')");
}

void Module::unregister_module(const std::string& name) {
  KILN_CHECK(children_.contains(name), "unregister_module: no Module with name '", name, "' is registered");
  children_.erase(name);
}

// --- printing ---

void Module::pretty_print(std::ostream& stream) const { stream << name(); }

void Module::pretty_print_recursive(std::ostream& stream, const std::string& indentation) const {
  pretty_print(stream);
  if (children_.is_empty()) return;
  stream << "(\n";
  const std::string next = indentation + "  ";
  for (const auto& child : children_) {
    stream << next << "(" << child.key() << "): ";
    child.value()->pretty_print_recursive(stream, next);
    stream << '\n';
  }
  stream << indentation << ")";
}

std::ostream& operator<<(std::ostream& stream, const Module& module) {
  module.pretty_print_recursive(stream, "");
  return stream;
}

}  // namespace kiln::nn
