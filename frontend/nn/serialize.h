// Saving and loading checkpoints in the safetensors format (https://github.com/huggingface/safetensors),
// so weights move to and from PyTorch:
//
//   kiln::save(net, "net.safetensors");      // torch::save in a ported libtorch program
//   kiln::load(net, "net.safetensors");      // in place: an optimizer holding the parameters keeps working
//   # Python: model.load_state_dict(safetensors.torch.load_file("net.safetensors"))
//
// torch::save / torch::load take what libtorch's do: a module, a tensor, a std::vector of
// tensors, an optimizer (its state and param groups, optim/optimizer.h), a scheduler (kiln's
// addition), and serialize::OutputArchive / InputArchive (archive.h) put several in one file.
// Unlike libtorch, they write and read safetensors, not libtorch's zip (TorchScript pickle)
// archive: a file from libtorch's torch::save does not load here, and a file from kiln loads in
// Python with safetensors.torch.load_file, not torch.load.
//
// A file: an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"key": "value"}} padded with spaces to a multiple of 8, then the tensors'
// bytes, contiguous, little-endian, row-major. kiln writes what the safetensors library writes
// for the same tensors, byte for byte (tensors ordered by descending dtype alignment, then name).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "frontend/nn/archive.h"
#include "frontend/nn/module.h"
#include "frontend/nn/ordered_dict.h"
#include "frontend/tensor.h"

namespace kiln {

// Names to tensors, in the order PyTorch's state_dict() gives them.
using StateDict = OrderedDict<std::string, Tensor>;
// The optional "__metadata__" of a safetensors file (Hugging Face writes {"format": "pt"}).
using SafetensorsMetadata = std::map<std::string, std::string>;

// The module's parameters and buffers with PyTorch's dotted names ("0.weight", "fc1.bias",
// "bn.running_mean"), in PyTorch's order: each module's own parameters, then its own buffers,
// then its children's, depth first. The tensors are detached and share storage with the module.
StateDict state_dict(const nn::Module& module);

// Writes the tensors (float32, float64, int64 or bool) as a safetensors file. The file is
// written to a temporary name beside `path` and renamed over it, so a reader never sees half.
void save_safetensors(const StateDict& tensors, const std::string& path, const SafetensorsMetadata& metadata = {});

// Reads a safetensors file, in the header's order; `metadata`, if given, receives its
// "__metadata__". F32, F64, I64 and BOOL load as they are; F16 and BF16 widen to float32, and
// I8, U8, I16, I32 to int64. Other dtypes, and a malformed file, throw kiln::Error naming the path.
StateDict load_safetensors(const std::string& path, SafetensorsMetadata* metadata = nullptr);
// The parser behind load_safetensors, over a whole file's bytes in memory; `path` names the file
// in messages. Besides well-formed JSON (nested at most 128 levels) and a header of at most
// 100 MB, it requires what the safetensors library does: the tensors' data_offsets tile the data,
// no bytes shared and none left over; and what kiln holds: at most 8 dimensions, sizes whose
// product in bytes fits int64_t.
StateDict parse_safetensors(std::string_view file, const std::string& path, SafetensorsMetadata* metadata = nullptr);

// Copies the values of `state` into the module's own tensors, in place and without autograd
// (tensor.copy_ under NoGradGuard), so every handle to them, an optimizer's included, sees the
// new values. Floating-point values convert to the module tensor's dtype. Throws kiln::Error,
// before copying anything, for a shape mismatch or a non-floating dtype mismatch, and (with
// `strict`) for keys of the module missing from `state` or keys of `state` the module lacks.
void load_state_dict(nn::Module& module, const StateDict& state, bool strict = true);

namespace detail {
template <typename T>
struct is_module_pointer : std::false_type {};
template <typename T>
struct is_module_pointer<std::shared_ptr<T>> : std::is_base_of<nn::Module, T> {};
// A module, a ModuleHolder (nn::Linear, a KILN_MODULE) or a shared_ptr to a module.
template <typename M>
inline constexpr bool is_module_like_v =
    std::is_base_of_v<nn::Module, std::remove_cv_t<M>> || nn::detail::is_module_holder_v<M> ||
    is_module_pointer<std::remove_cv_t<M>>::value;

// The module behind a module, a ModuleHolder or a shared_ptr to one.
template <typename M>
decltype(auto) module_of(M& module) {
  using Plain = std::remove_cv_t<M>;
  static_assert(is_module_like_v<Plain>,
                "kiln::save / kiln::load(value, path, strict) take a module, a ModuleHolder (nn::Linear, a "
                "KILN_MODULE) or a std::shared_ptr to a module");
  if constexpr (std::is_base_of_v<nn::Module, Plain>) {
    return (module);
  } else {
    KILN_CHECK(static_cast<bool>(module), "save/load: the module handle is empty (null)");
    return (*module);
  }
}
}  // namespace detail

// libtorch's torch::save(value, path): a module (its state_dict, metadata {"format": "pt"}), a
// tensor (under the key "0"), an optimizer (see optim/optimizer.h), or anything with an
// `operator<<(serialize::OutputArchive&, const Value&)`.
template <typename Value>
void save(const Value& value, const std::string& path) {
  serialize::OutputArchive archive;
  if constexpr (detail::is_module_like_v<Value>)
    detail::module_of(value).save(archive);
  else
    archive << value;
  archive.save_to(path);
}
// The tensors under the keys "0", "1", ..., as libtorch writes them.
void save(const std::vector<Tensor>& tensors, const std::string& path);

// libtorch's torch::load(module, path): reads a safetensors file into the module in place (any
// safetensors file with the module's keys, PyTorch's included); with `strict`, keys the module
// lacks are an error too.
template <typename M>
void load(M&& module, const std::string& path, bool strict) {
  nn::Module& target = detail::module_of(module);
  load_state_dict(target, load_safetensors(path), strict);
}

// libtorch's torch::load(value, path): a module (strictly, as above), a tensor (assigned the
// tensor read, or copied into in place if its shape and dtype match), an optimizer, or anything
// with an `operator>>(serialize::InputArchive&, Value&)`.
template <typename Value>
void load(Value&& value, const std::string& path) {
  if constexpr (detail::is_module_like_v<std::remove_reference_t<Value>>) {
    load(value, path, /*strict=*/true);
  } else {
    serialize::InputArchive archive;
    archive.load_from(path);
    archive >> value;
  }
}
// As libtorch: appends the tensors "0", "1", ... (up to the first index missing) to `tensors`.
void load(std::vector<Tensor>& tensors, const std::string& path);

}  // namespace kiln
