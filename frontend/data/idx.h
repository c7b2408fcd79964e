// Reading IDX files (the format of MNIST and Fashion-MNIST), gzip-compressed or raw, and finding
// Fashion-MNIST where Debian's dataset-fashion-mnist installs it. Standard library, zlib and the
// header-only runtime/error.h and runtime/mapped_file.h only: no tensors here, so a libtorch-only
// program can compile idx.cpp on its own.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::data {

// IDX element types: the third byte of the magic number.
enum IdxType : uint8_t {
  kIdxUByte = 0x08,
  kIdxSByte = 0x09,
  kIdxShort = 0x0B,   // int16
  kIdxInt = 0x0C,     // int32
  kIdxFloat = 0x0D,   // float32
  kIdxDouble = 0x0E,  // float64
};

// The content of one IDX file: its dimensions, its element type, and its elements as raw bytes in
// host byte order (the file stores them big-endian), row-major.
struct IdxArray {
  std::vector<int64_t> dims;
  uint8_t type_code = kIdxUByte;
  std::vector<uint8_t> data;

  int64_t numel() const;
  // The elements reinterpreted as T, which must match type_code's size (e.g. int32_t for 0x0C).
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data.data());
  }
};

// Bytes per element of an IDX type code (0 for an unknown code), and its name ("ubyte", ...).
int idx_element_size(uint8_t type_code);
const char* idx_type_name(uint8_t type_code);

// Reads an IDX file, gzip-compressed (detected by its magic bytes 0x1f 0x8b; members one after
// another) or raw. Throws kiln::Error naming the path and the fault: missing or unreadable file,
// bad magic, unknown type code, rank 0 or above 8, dimensions whose product (of those other than 0)
// overflows, fewer bytes than the dimensions say, bytes after the data, or a corrupt gzip stream.
// The data grows as bytes arrive: a file claiming more than it holds fails before allocating it.
IdxArray read_idx(const std::string& path);
// The parser behind read_idx, over a whole file's bytes in memory (raw or gzip); `path` names the
// file in messages.
IdxArray parse_idx(std::string_view file, const std::string& path);

// Where Fashion-MNIST lives: $KILN_DATA_DIR if set, else /usr/share/datasets/fashion-mnist.
std::string fashion_mnist_dir();

// <dir>/<stem>.gz if it exists, else <dir>/<stem>; throws kiln::Error naming both paths tried,
// with the package that installs Fashion-MNIST, when neither exists.
std::string find_idx_file(const std::string& dir, const std::string& stem);

}  // namespace kiln::data
