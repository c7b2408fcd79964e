// state_dict, load_state_dict and the safetensors reader and writer (nlohmann-json for the header).
// The reader parses a mapped file from memory, the code tests/fuzz/safetensors_fuzz.cpp feeds.
#include "frontend/nn/serialize.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "frontend/autograd.h"
#include "frontend/ops.h"
#include "frontend/trace.h"
#include "runtime/mapped_file.h"
#include "runtime/shape.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors stores little-endian data");

namespace kiln {

using Json = nlohmann::ordered_json;  // keeps the header's order, and writes ours in ours

// --- state_dict and load_state_dict ---

namespace {

// Each module's own parameters, then its own buffers, then its children's, as PyTorch orders them.
void collect(const nn::Module& module, const std::string& prefix, bool detach, StateDict& out) {
  auto add = [&](const StateDict& own) {
    for (const auto& item : own) out.insert(prefix + item.key(), detach ? item.value().detach() : item.value());
  };
  add(module.named_parameters(/*recurse=*/false));
  add(module.named_buffers(/*recurse=*/false));
  for (const auto& child : module.named_children()) collect(*child.value(), prefix + child.key() + ".", detach, out);
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "\"" : ", \"") + name + "\"";
  return out;
}

}  // namespace

StateDict state_dict(const nn::Module& module) {
  StateDict out("Tensor");
  collect(module, "", /*detach=*/true, out);
  return out;
}

void load_state_dict(nn::Module& module, const StateDict& state, bool strict) {
  StateDict own("Tensor");
  collect(module, "", /*detach=*/false, own);

  // Check everything first, so that a failed load leaves the module as it was.
  std::vector<std::string> missing, unexpected, mismatches;
  for (const auto& item : own) {
    const Tensor* src = state.find(item.key());
    if (!src) {
      missing.push_back(item.key());
      continue;
    }
    const Tensor& dst = item.value();
    KILN_CHECK(src->defined(), "load_state_dict: the tensor for \"", item.key(), "\" is undefined");
    if (src->sizes() != dst.sizes())
      mismatches.push_back(detail::concat("size mismatch for ", item.key(), ": copying a param with shape ",
                                          src->sizes().vec(), " from checkpoint, the shape in current model is ",
                                          dst.sizes().vec()));
    else if (src->dtype() != dst.dtype() && !(src->is_floating_point() && dst.is_floating_point()))
      mismatches.push_back(detail::concat("dtype mismatch for ", item.key(), ": the checkpoint has ", src->dtype(),
                                          ", the current model ", dst.dtype()));
  }
  for (const auto& item : state)
    if (!own.contains(item.key())) unexpected.push_back(item.key());

  std::string errors;
  if (strict && !missing.empty()) errors += "\n\tMissing key(s) in state_dict: " + quoted_list(missing) + ".";
  if (strict && !unexpected.empty()) errors += "\n\tUnexpected key(s) in state_dict: " + quoted_list(unexpected) + ".";
  for (const auto& m : mismatches) errors += "\n\t" + m + ".";
  KILN_CHECK(errors.empty(), "load_state_dict: Error(s) in loading state_dict for ", module.name(), ":", errors);

  autograd::NoGradGuard no_grad;
  for (auto& item : own)
    if (const Tensor* src = state.find(item.key())) item.value().copy_(*src);
}

// --- the safetensors format ---

namespace {

// safetensors' dtype names, and their rank in its Dtype enum (the writer's order: descending).
struct DtypeInfo {
  const char* name;
  int rank;
};
DtypeInfo dtype_info(ScalarType t) {
  switch (t) {
    case kBool: return {"BOOL", 0};
    case kFloat: return {"F32", 11};
    case kDouble: return {"F64", 12};
    case kLong: return {"I64", 13};
    case kByte: return {"U8", 1};
    case kChar: return {"I8", 2};
    case kShort: return {"I16", 5};
    case kHalf: return {"F16", 7};
    case kBFloat16: return {"BF16", 8};
    case kInt: return {"I32", 9};
  }
  return {"?", -1};
}

// How a stored dtype loads: the element size on disk and the kiln dtype it becomes.
struct StoredDtype {
  const char* name;
  size_t size;
  ScalarType loads_as;
};
constexpr StoredDtype kStoredDtypes[] = {
    {"F32", 4, kFloat},     {"F64", 8, kDouble}, {"I64", 8, kLong},  {"BOOL", 1, kBool}, {"F16", 2, kHalf},
    {"BF16", 2, kBFloat16}, {"I32", 4, kInt},    {"I16", 2, kShort}, {"I8", 1, kChar},   {"U8", 1, kByte},
};

template <typename From, typename To>
std::vector<To> widen(std::string_view bytes, To (*convert)(From)) {
  std::vector<To> out(bytes.size() / sizeof(From));
  for (size_t i = 0; i < out.size(); ++i) {
    From v;
    std::memcpy(&v, bytes.data() + i * sizeof(From), sizeof(From));
    out[i] = convert(v);
  }
  return out;
}

// A tensor of `stored`'s kiln dtype from its bytes in the file (any alignment: copied bytewise).
Tensor tensor_from_bytes(std::string_view bytes, const StoredDtype& stored, const std::vector<int64_t>& shape) {
  const std::string name = stored.name;
  // A copy: the bytes are the mapped file's (read-only) or this function's.
  auto make = [&](const void* data, ScalarType t) { return detail::copy_of_host_data(data, shape, t); };
  if (name == "BOOL")  // kiln's bools are 0 or 1
    return make(widen<uint8_t, uint8_t>(bytes, [](uint8_t b) { return uint8_t(b != 0); }).data(), kBool);
  return make(bytes.data(), stored.loads_as);
}

// Writes all of `size` bytes, or says why not.
void write_all(int fd, const void* data, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    KILN_CHECK(n > 0, "save_safetensors: writing '", path, "' failed: ", std::strerror(errno));
    p += n;
    size -= size_t(n);
  }
}

}  // namespace

void save_safetensors(const StateDict& tensors, const std::string& path, const SafetensorsMetadata& metadata) {
  // The safetensors library's layout: descending dtype alignment, then name; no gaps.
  std::vector<std::pair<std::string, Tensor>> items;
  for (const auto& item : tensors) {
    KILN_CHECK(item.value().defined(), "save_safetensors: '", path, "': the tensor \"", item.key(), "\" is undefined");
    KILN_CHECK(item.key() != "__metadata__", "save_safetensors: '", path, "': \"__metadata__\" is not a tensor name");
    items.emplace_back(item.key(), item.value().detach().cpu().contiguous());  // device values through the host
  }
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    const int ra = dtype_info(a.second.dtype()).rank, rb = dtype_info(b.second.dtype()).rank;
    return ra != rb ? ra > rb : a.first < b.first;
  });

  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : items) {
    const uint64_t bytes = uint64_t(t.numel()) * element_size(t.dtype());
    header[name] = {
        {"dtype", dtype_info(t.dtype()).name}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  const uint64_t n = text.size();

  // Write beside the target, then rename over it: readers see the old file or the new one.
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  KILN_CHECK(fd >= 0, "save_safetensors: cannot create '", tmp, "': ", std::strerror(errno));
  try {
    write_all(fd, &n, 8, path);
    write_all(fd, text.data(), text.size(), path);
    for (const auto& [name, t] : items)
      if (t.numel() > 0) write_all(fd, t.const_data_ptr(), size_t(t.numel()) * element_size(t.dtype()), path);
    KILN_CHECK(::fsync(fd) == 0, "save_safetensors: writing '", path, "' failed: ", std::strerror(errno));
    KILN_CHECK(::close(fd) == 0, "save_safetensors: writing '", path, "' failed: ", std::strerror(errno));
  } catch (...) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    KILN_CHECK(false, "save_safetensors: cannot rename '", tmp, "' to '", path, "': ", std::strerror(err));
  }
}

namespace {

constexpr uint64_t kMaxHeaderBytes = 100000000;  // the safetensors library's limit
constexpr int kMaxJsonDepth = 128;               // serde_json's, which the safetensors library parses with

// A JSON value for a message, cut to a few hundred characters: a malformed header may be megabytes.
std::string excerpt(const Json& value) {
  constexpr size_t kMaxChars = 200;
  std::string text = value.dump();  // recursion bounded by kMaxJsonDepth
  if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
  return text;
}

// One tensor of the header, checked, before any is made.
struct StoredTensor {
  std::string name;
  const StoredDtype* stored;
  std::vector<int64_t> shape;
  uint64_t begin, end;  // in the data, which follows the header
};

StoredTensor stored_tensor(const std::string& name, const Json& entry, uint64_t data_size, const std::string& where) {
  const std::string what = where + "tensor " + excerpt(name) + ": ";
  KILN_CHECK(entry.is_object() && entry.contains("dtype") && entry.contains("shape") && entry.contains("data_offsets"),
             what, "expected an object with \"dtype\", \"shape\" and \"data_offsets\", got ", excerpt(entry));
  const Json &dtype = entry["dtype"], &shape_json = entry["shape"], &offsets = entry["data_offsets"];

  StoredTensor out{name, nullptr, {}, 0, 0};
  KILN_CHECK(dtype.is_string(), what, "\"dtype\" is not a string");
  for (const auto& d : kStoredDtypes)
    if (dtype.get<std::string>() == d.name) out.stored = &d;
  KILN_CHECK(out.stored, what, "unsupported dtype ", excerpt(dtype),
             " (kiln reads F32, F64, I64, BOOL, and F16, BF16, I32, I16, I8, U8 widened)");

  KILN_CHECK(shape_json.is_array(), what, "\"shape\" is not an array");
  KILN_CHECK(shape_json.size() <= size_t(kMaxDims), what, "the shape ", excerpt(shape_json), " has ", shape_json.size(),
             " dimensions; kiln holds at most ", kMaxDims);
  // The bytes, and the product of the sizes other than 0 in the largest element kiln holds (8
  // bytes): strides and sizes in bytes must not overflow either, even where a size 0 empties it.
  uint64_t bytes = out.stored->size, extent = 8;
  bool overflow = false;
  for (const auto& d : shape_json) {
    KILN_CHECK(d.is_number_unsigned(), what, "\"shape\" ", excerpt(shape_json), " holds ", excerpt(d), ", not a size");
    const uint64_t size = d.get<uint64_t>();
    overflow |= __builtin_mul_overflow(bytes, size, &bytes);
    if (size != 0) overflow |= __builtin_mul_overflow(extent, size, &extent);
    out.shape.push_back(int64_t(size));
  }
  KILN_CHECK(!overflow && extent <= uint64_t(INT64_MAX), what, "the shape ", excerpt(shape_json), " is too large");

  KILN_CHECK(
      offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned(),
      what, "\"data_offsets\" is not a pair of offsets: ", excerpt(offsets));
  out.begin = offsets[0].get<uint64_t>();
  out.end = offsets[1].get<uint64_t>();
  KILN_CHECK(out.begin <= out.end && out.end <= data_size, what, "data_offsets [", out.begin, ", ", out.end,
             "] lie outside the data (", data_size, " bytes): the file is truncated or corrupt");
  KILN_CHECK(out.end - out.begin == bytes, what, "data_offsets [", out.begin, ", ", out.end, "] hold ",
             out.end - out.begin, " bytes, but dtype ", out.stored->name, " and shape ", out.shape, " need ", bytes);
  return out;
}

// The tensors' bytes tile the data: none shared, none left over (as the safetensors library
// requires). Shared bytes would let a small file make many large tensors.
void check_tiling(const std::vector<StoredTensor>& tensors, uint64_t data_size, const std::string& where) {
  std::vector<const StoredTensor*> by_offset;
  for (const auto& t : tensors) by_offset.push_back(&t);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const StoredTensor* a, const StoredTensor* b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  });
  uint64_t covered = 0;
  const StoredTensor* last = nullptr;  // the tensor whose bytes end at `covered`
  for (const StoredTensor* t : by_offset) {
    KILN_CHECK(t->begin >= covered, where, "tensor ", excerpt(t->name), ": data_offsets [", t->begin, ", ", t->end,
               "] overlap those of tensor ", excerpt(last->name), ", [", last->begin, ", ", last->end, "]");
    KILN_CHECK(t->begin == covered, where, "bytes [", covered, ", ", t->begin, ") of the data belong to no tensor");
    covered = t->end;
    last = t;
  }
  KILN_CHECK(covered == data_size, where, "bytes [", covered, ", ", data_size, ") of the data belong to no tensor");
}

}  // namespace

StateDict parse_safetensors(std::string_view file, const std::string& path, SafetensorsMetadata* metadata) {
  const std::string where = "load_safetensors: '" + path + "': ";
  const uint64_t file_size = file.size();
  KILN_CHECK(file_size >= 8, where, "the file has ", file_size, " bytes, too few for a safetensors header");

  // The header: its length, then JSON.
  uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  KILN_CHECK(n <= file_size - 8, where, "the header length ", n, " is larger than the file (", file_size,
             " bytes): not a safetensors file, or a truncated one");
  KILN_CHECK(n <= kMaxHeaderBytes, where, "the header length ", n, " is larger than safetensors allows (",
             kMaxHeaderBytes, " bytes)");
  const std::string_view text = file.substr(8, n);
  Json header;
  try {
    header = Json::parse(text.begin(), text.end(), [&](int depth, Json::parse_event_t, Json&) {
      KILN_CHECK(depth <= kMaxJsonDepth, where, "the header is nested deeper than ", kMaxJsonDepth, " levels");
      return true;
    });
  } catch (const Json::exception& e) {
    throw Error(where + "the header is not valid JSON (" + e.what() + ")");
  }
  KILN_CHECK(header.is_object(), where, "the header is not a JSON object");

  const uint64_t data_begin = 8 + n, data_size = file_size - data_begin;
  std::vector<StoredTensor> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      KILN_CHECK(entry.is_object(), where, "\"__metadata__\" is not an object");
      for (const auto& [key, value] : entry.items()) {
        KILN_CHECK(value.is_string(), where, "the metadata value of ", excerpt(key), " is not a string");
        if (metadata) (*metadata)[key] = value.get<std::string>();
      }
      continue;
    }
    tensors.push_back(stored_tensor(name, entry, data_size, where));
  }
  check_tiling(tensors, data_size, where);

  StateDict out("Tensor");
  const std::string_view data = file.substr(data_begin);
  for (const auto& t : tensors)
    out.insert(t.name, tensor_from_bytes(data.substr(t.begin, t.end - t.begin), *t.stored, t.shape));
  return out;
}

StateDict load_safetensors(const std::string& path, SafetensorsMetadata* metadata) {
  const MappedFile file(path, "load_safetensors: '" + path + "': ");
  return parse_safetensors(file.bytes(), path, metadata);
}

}  // namespace kiln
