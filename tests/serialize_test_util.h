// Helpers of the serialization tests: a temporary folder, a file's bytes, a tensor's bits.
#pragma once
#include <kiln/kiln.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace serialize_test {

namespace fs = std::filesystem;

// A fresh folder per test, removed at the end.
struct TempDir {
  TempDir() {
    static int count = 0;
    path = fs::temp_directory_path() /
           ("kiln_serialize_test_" + std::to_string(::getpid()) + "_" + std::to_string(count++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  fs::path path;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}
// The bytes of a tensor, for bit-for-bit comparisons.
inline std::string bits(const kiln::Tensor& t) {
  kiln::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), size_t(c.numel()) * kiln::element_size(c.dtype()));
}

}  // namespace serialize_test
