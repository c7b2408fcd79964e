// torch::serialize::OutputArchive and InputArchive, as libtorch 1.13 programs use them, over a
// safetensors file (see serialize.h):
//
//   torch::serialize::OutputArchive archive;
//   model->save(archive);                    // "fc1.weight", ... as state_dict() names them
//   archive.write("epoch", int64_t(7));      // a value: the file's __metadata__, as text
//   torch::serialize::OutputArchive nested;
//   optimizer.save(nested);
//   archive.write("optim", nested);          // nested keys are dotted: "optim.state.0.exp_avg"
//   archive.save_to("checkpoint.safetensors");
//
//   torch::serialize::InputArchive in;
//   in.load_from("checkpoint.safetensors");
//   model->load(in);  torch::IValue epoch;  in.read("epoch", epoch);  epoch.toInt();
//
// Tensors become the file's tensors under their dotted names; values (numbers, booleans, strings)
// become entries of its "__metadata__" (strings there, so they are kept as text: a value read back
// knows its text, not its type). Every file also says {"format": "pt"}, as Hugging Face's do, so
// the top-level key "format" is not a value of the archive.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/nn/module.h"
#include "frontend/nn/ordered_dict.h"
#include "frontend/tensor.h"

namespace kiln {

// What an archive holds besides tensors, as a subset of libtorch's IValue: an integer, a double,
// a boolean or a string, kept as the text the file stores. toInt / toDouble / toBool parse that
// text and throw kiln::Error if it is not one.
class IValue {
 public:
  IValue() = default;  // None: read() fills it
  IValue(bool value) : text_(value ? "true" : "false") {}
  IValue(int value) : IValue(int64_t(value)) {}
  IValue(int64_t value) : text_(std::to_string(value)) {}
  IValue(double value);
  IValue(std::string value) : text_(std::move(value)) {}
  IValue(const char* value) : text_(value) {}

  bool isNone() const noexcept { return !text_; }
  int64_t toInt() const;
  double toDouble() const;
  bool toBool() const;
  const std::string& toStringRef() const;

 private:
  std::optional<std::string> text_;
};

namespace serialize {

class OutputArchive {
 public:
  OutputArchive() = default;
  OutputArchive(OutputArchive&&) = default;
  OutputArchive& operator=(OutputArchive&&) = default;
  OutputArchive(const OutputArchive&) = delete;
  OutputArchive& operator=(const OutputArchive&) = delete;

  // Writing a key again replaces what it held. `is_buffer` is libtorch's; kiln stores both alike.
  void write(const std::string& key, const Tensor& tensor, bool is_buffer = false);
  void write(const std::string& key, const IValue& value);
  // Every key of `nested`, under "key.".
  void write(const std::string& key, const OutputArchive& nested);

  // Writes the safetensors file (atomically: to a temporary name, then renamed over `path`).
  void save_to(const std::string& path) const;

  template <typename... Ts>
  void operator()(Ts&&... ts) {
    write(std::forward<Ts>(ts)...);
  }

  const OrderedDict<std::string, Tensor>& tensors() const noexcept { return tensors_; }
  const std::map<std::string, std::string>& values() const noexcept { return values_; }

 private:
  OrderedDict<std::string, Tensor> tensors_{"Tensor"};
  std::map<std::string, std::string> values_;
};

class InputArchive {
 public:
  InputArchive() = default;

  // Reads a safetensors file; a malformed one throws kiln::Error naming it.
  void load_from(const std::string& path);
  // The same from a whole file's bytes in memory.
  void load_from(const char* data, size_t size);

  // A tensor read into a defined `tensor` of the same shape and dtype is copied into it in place
  // (without autograd), so every handle to it sees the values, as libtorch's set_ makes them see
  // it; otherwise `tensor` is assigned the tensor read (a float keeps requires_grad). read()
  // throws kiln::Error naming the file and the key if there is no such tensor; try_read says false.
  bool try_read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  void read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  bool try_read(const std::string& key, IValue& value);
  void read(const std::string& key, IValue& value);
  // The keys under "key.", as an archive of their own.
  bool try_read(const std::string& key, InputArchive& nested);
  void read(const std::string& key, InputArchive& nested);

  // The keys at this level (a nested archive's name once), tensors first, in the file's order.
  std::vector<std::string> keys() const;

  template <typename... Ts>
  void operator()(Ts&&... ts) {
    read(std::forward<Ts>(ts)...);
  }

  // "load: 'path': " (with the nested prefix), for messages about what the archive holds.
  std::string where() const;
  // The full (dotted) name of `key` in the file.
  std::string full_key(const std::string& key) const { return prefix_ + key; }

 private:
  struct Contents {
    std::string path;
    OrderedDict<std::string, Tensor> tensors{"Tensor"};
    std::map<std::string, std::string> values;
  };
  const Contents& contents() const;
  std::shared_ptr<const Contents> contents_;
  std::string prefix_;  // "" or "optim.state." for a nested archive
};

}  // namespace serialize

// libtorch's torch::save(tensor) / torch::load(tensor): the tensor under the key "0".
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Tensor& tensor);
serialize::InputArchive& operator>>(serialize::InputArchive& archive, Tensor& tensor);

namespace nn {
// libtorch's `archive << module` and `archive >> module`: module->save(archive), module->load(archive).
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const std::shared_ptr<Module>& module);
serialize::InputArchive& operator>>(serialize::InputArchive& archive, const std::shared_ptr<Module>& module);
}  // namespace nn

}  // namespace kiln
