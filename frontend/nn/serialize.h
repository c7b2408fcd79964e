// Saving and loading weights: a module's state_dict, read and written in the safetensors format
// (https://github.com/huggingface/safetensors), so weights move to and from PyTorch:
//
//   kiln::save(net, "net.safetensors");      // torch::save in a ported libtorch program
//   kiln::load(net, "net.safetensors");      // in place: an optimizer holding the parameters keeps working
//   # Python: model.load_state_dict(safetensors.torch.load_file("net.safetensors"))
//
// Unlike libtorch, kiln's torch::save / torch::load write and read safetensors, not libtorch's zip
// (TorchScript pickle) archive: a file from libtorch's torch::save does not load here, and a file
// from kiln loads in Python with safetensors.torch.load_file, not torch.load. Only modules are
// saved this way (not tensors or optimizers).
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

// The module behind a module, a ModuleHolder (nn::Linear, a KILN_MODULE) or a shared_ptr to one.
template <typename M>
decltype(auto) module_of(M& module) {
  using Plain = std::remove_cv_t<M>;
  static_assert(std::is_base_of_v<nn::Module, Plain> || nn::detail::is_module_holder_v<Plain> ||
                    is_module_pointer<Plain>::value,
                "kiln::save / kiln::load take a module, a ModuleHolder (nn::Linear, a KILN_MODULE) or a "
                "std::shared_ptr to a module; kiln does not save tensors or optimizers this way");
  if constexpr (std::is_base_of_v<nn::Module, Plain>) {
    return (module);
  } else {
    KILN_CHECK(static_cast<bool>(module), "save/load: the module handle is empty (null)");
    return (*module);
  }
}
}  // namespace detail

// libtorch's torch::save(module, path), writing safetensors with metadata {"format": "pt"}.
template <typename M>
void save(const M& module, const std::string& path) {
  save_safetensors(state_dict(detail::module_of(module)), path, {{"format", "pt"}});
}

// libtorch's torch::load(module, path): reads a safetensors file into the module in place.
template <typename M>
void load(M&& module, const std::string& path, bool strict = true) {
  nn::Module& target = detail::module_of(module);
  load_state_dict(target, load_safetensors(path), strict);
}

}  // namespace kiln
