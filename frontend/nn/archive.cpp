// IValue, OutputArchive and InputArchive over the safetensors reader and writer, and
// Module::save / Module::load.
#include "frontend/nn/archive.h"

#include <charconv>
#include <string_view>
#include <unordered_set>

#include "frontend/autograd.h"
#include "frontend/nn/serialize.h"
#include "frontend/ops.h"

namespace kiln {

namespace {
// The key every kiln file's metadata holds ({"format": "pt"}), so not a value of an archive.
constexpr const char* kFormatKey = "format";

template <typename T>
bool parse_whole(const std::string& text, T& out) {
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, out);
  return !text.empty() && result.ec == std::errc() && result.ptr == end;
}
}  // namespace

IValue::IValue(double value) {
  char buffer[32];  // the shortest text that reads back as the same double
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  text_ = std::string(buffer, result.ptr);
}

const std::string& IValue::toStringRef() const {
  KILN_CHECK(text_, "IValue: the value is None");
  return *text_;
}
int64_t IValue::toInt() const {
  int64_t out = 0;
  KILN_CHECK(parse_whole(toStringRef(), out), "IValue: \"", *text_, "\" is not an integer");
  return out;
}
double IValue::toDouble() const {
  double out = 0;
  KILN_CHECK(parse_whole(toStringRef(), out), "IValue: \"", *text_, "\" is not a number");
  return out;
}
bool IValue::toBool() const {
  const std::string& text = toStringRef();
  KILN_CHECK(text == "true" || text == "false", "IValue: \"", text, "\" is not a boolean (true or false)");
  return text == "true";
}

namespace serialize {

// --- OutputArchive ---

void OutputArchive::write(const std::string& key, const Tensor& tensor, bool) {
  KILN_CHECK(!key.empty(), "OutputArchive::write: the key is empty");
  KILN_CHECK(tensor.defined(), "OutputArchive::write: the tensor \"", key, "\" is undefined");
  tensors_.insert_or_assign(key, tensor.detach());
}

void OutputArchive::write(const std::string& key, const IValue& value) {
  KILN_CHECK(!key.empty(), "OutputArchive::write: the key is empty");
  KILN_CHECK(!value.isNone(), "OutputArchive::write: the value \"", key, "\" is None");
  values_[key] = value.toStringRef();
}

void OutputArchive::write(const std::string& key, const OutputArchive& nested) {
  KILN_CHECK(!key.empty(), "OutputArchive::write: the key is empty");
  KILN_CHECK(&nested != this, "OutputArchive::write: an archive can't be written into itself");
  for (const auto& item : nested.tensors_) tensors_.insert_or_assign(key + "." + item.key(), item.value());
  for (const auto& [name, text] : nested.values_) values_[key + "." + name] = text;
}

void OutputArchive::save_to(const std::string& path) const {
  KILN_CHECK(!values_.count(kFormatKey), "OutputArchive::save_to: '", path, "': the top-level key \"", kFormatKey,
             "\" is the file's own ({\"format\": \"pt\"}); write the value under another name");
  SafetensorsMetadata metadata(values_.begin(), values_.end());
  metadata[kFormatKey] = "pt";
  save_safetensors(tensors_, path, metadata);
}

// --- InputArchive ---

void InputArchive::load_from(const std::string& path) {
  auto contents = std::make_shared<Contents>();
  contents->path = path;
  SafetensorsMetadata metadata;
  contents->tensors = load_safetensors(path, &metadata);
  metadata.erase(kFormatKey);
  contents->values = std::move(metadata);
  contents_ = std::move(contents);
  prefix_.clear();
}

void InputArchive::load_from(const char* data, size_t size) {
  auto contents = std::make_shared<Contents>();
  contents->path = "(bytes in memory)";
  SafetensorsMetadata metadata;
  contents->tensors = parse_safetensors(std::string_view(data, size), contents->path, &metadata);
  metadata.erase(kFormatKey);
  contents->values = std::move(metadata);
  contents_ = std::move(contents);
  prefix_.clear();
}

const InputArchive::Contents& InputArchive::contents() const {
  KILN_CHECK(contents_, "InputArchive: nothing loaded (call load_from first)");
  return *contents_;
}

std::string InputArchive::where() const {
  return "load: '" + contents().path + "'" + (prefix_.empty() ? "" : " (under \"" + prefix_ + "\")") + ": ";
}

bool InputArchive::try_read(const std::string& key, Tensor& tensor, bool) {
  const Tensor* found = contents().tensors.find(prefix_ + key);
  if (!found) return false;
  if (tensor.defined() && tensor.sizes() == found->sizes() && tensor.dtype() == found->dtype()) {
    autograd::NoGradGuard no_grad;
    tensor.copy_(*found);
  } else {
    const bool requires_grad = tensor.defined() && tensor.requires_grad() && found->is_floating_point();
    tensor = tensor.defined() ? found->to(tensor.device(), found->dtype()) : *found;  // onto the device it replaces
    if (requires_grad) tensor.requires_grad_(true);
  }
  return true;
}
void InputArchive::read(const std::string& key, Tensor& tensor, bool is_buffer) {
  KILN_CHECK(try_read(key, tensor, is_buffer), where(), "no tensor \"", prefix_ + key, "\" in the file");
}

bool InputArchive::try_read(const std::string& key, IValue& value) {
  const auto it = contents().values.find(prefix_ + key);
  if (it == contents().values.end()) return false;
  value = IValue(it->second);
  return true;
}
void InputArchive::read(const std::string& key, IValue& value) {
  KILN_CHECK(try_read(key, value), where(), "no value \"", prefix_ + key, "\" in the file's metadata");
}

bool InputArchive::try_read(const std::string& key, InputArchive& nested) {
  const std::string nested_prefix = prefix_ + key + ".";
  auto under = [&](const std::string& name) { return name.compare(0, nested_prefix.size(), nested_prefix) == 0; };
  bool found = false;
  for (const auto& item : contents().tensors) found = found || under(item.key());
  for (const auto& item : contents().values) found = found || under(item.first);
  if (!found) return false;
  nested.contents_ = contents_;
  nested.prefix_ = nested_prefix;
  return true;
}
void InputArchive::read(const std::string& key, InputArchive& nested) {
  KILN_CHECK(try_read(key, nested), where(), "no archive \"", prefix_ + key, "\" (no key begins \"", prefix_ + key,
             ".\")");
}

std::vector<std::string> InputArchive::keys() const {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  auto add = [&](const std::string& name) {
    if (name.compare(0, prefix_.size(), prefix_) != 0) return;
    std::string first = name.substr(prefix_.size());
    first = first.substr(0, first.find('.'));
    if (seen.insert(first).second) out.push_back(first);
  };
  for (const auto& item : contents().tensors) add(item.key());
  for (const auto& item : contents().values) add(item.first);
  return out;
}

}  // namespace serialize

serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Tensor& tensor) {
  archive.write("0", tensor);
  return archive;
}
serialize::InputArchive& operator>>(serialize::InputArchive& archive, Tensor& tensor) {
  archive.read("0", tensor);
  return archive;
}

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  serialize::OutputArchive archive;
  for (size_t i = 0; i < tensors.size(); ++i) archive.write(std::to_string(i), tensors[i]);
  archive.save_to(path);
}

void load(std::vector<Tensor>& tensors, const std::string& path) {
  serialize::InputArchive archive;
  archive.load_from(path);
  Tensor value;
  for (size_t i = 0; archive.try_read(std::to_string(i), value); ++i) tensors.push_back(std::exchange(value, Tensor()));
}

namespace nn {

void Module::save(serialize::OutputArchive& archive) const {
  for (const auto& item : state_dict(*this)) archive.write(item.key(), item.value());
}

void Module::load(serialize::InputArchive& archive) {
  StateDict found("Tensor");
  std::vector<std::string> missing;
  for (const auto& item : state_dict(*this)) {
    Tensor stored;
    if (archive.try_read(item.key(), stored))
      found.insert(item.key(), stored);
    else
      missing.push_back("\"" + archive.full_key(item.key()) + "\"");
  }
  std::string list;
  for (const auto& name : missing) list += (list.empty() ? "" : ", ") + name;
  KILN_CHECK(missing.empty(), archive.where(), "Module::load (", name(), "): missing key(s) ", list);
  try {
    load_state_dict(*this, found, /*strict=*/true);
  } catch (const Error& e) {
    throw Error(archive.where() + e.what());
  }
}

serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const std::shared_ptr<Module>& module) {
  KILN_CHECK(module, "save: the module is empty (null)");
  module->save(archive);
  return archive;
}
serialize::InputArchive& operator>>(serialize::InputArchive& archive, const std::shared_ptr<Module>& module) {
  KILN_CHECK(module, "load: the module is empty (null)");
  module->load(archive);
  return archive;
}

}  // namespace nn

}  // namespace kiln
