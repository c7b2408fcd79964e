// IDX reading through zlib: gzread reads gzip and raw files alike, so one path serves both; the
// magic bytes are still checked so that messages can say which kind of file was truncated.
#include "frontend/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

#include "runtime/error.h"

namespace kiln::data {

namespace {

constexpr int kMaxIdxRank = 8;
constexpr size_t kReadChunk = size_t(1) << 24;  // grow the buffer as bytes arrive, not as the header claims

bool host_is_little_endian() {
  const uint16_t probe = 1;
  uint8_t first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

// An open gzFile that closes itself.
struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// The first two bytes of a file (fewer if it is shorter), read without zlib.
std::string leading_bytes(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  KILN_CHECK(f != nullptr, "read_idx: cannot open ", path, ": ", std::strerror(errno));
  char bytes[2];
  const size_t n = std::fread(bytes, 1, 2, f);
  std::fclose(f);
  return std::string(bytes, n);
}

// zlib's account of the last error, without the path it puts in front ("" when there is none).
std::string zlib_error(gzFile file, const std::string& path) {
  int code = Z_OK;
  const char* why = gzerror(file, &code);
  if (code == Z_OK) return "";
  std::string text = why ? why : "unknown error";
  if (text.rfind(path + ": ", 0) == 0) text.erase(0, path.size() + 2);
  return text;
}

// What zlib says about a short read: "" for a plain end of file, else " (zlib: ...)".
std::string zlib_note(gzFile file, const std::string& path) {
  const std::string why = zlib_error(file, path);
  return why.empty() ? why : " (zlib: " + why + ")";
}

// Reads up to `want` bytes into `dst`; returns how many came (fewer at the end of the file, or of a
// cut-off gzip stream). A corrupt gzip stream throws, naming the file.
size_t read_some(gzFile file, uint8_t* dst, size_t want, const std::string& path, const char* kind) {
  size_t got = 0;
  while (got < want) {
    const unsigned ask = unsigned(std::min(want - got, kReadChunk));
    const int n = gzread(file, dst + got, ask);
    KILN_CHECK(n >= 0, "read_idx: ", path, ": ", kind, " file is corrupt", zlib_note(file, path));
    if (n == 0) break;
    got += size_t(n);
  }
  return got;
}

// "[60000, 28, 28]": written here, since kiln's own shape printer lives outside this file's
// dependencies (standard library, zlib, runtime/error.h).
std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// Reverses each element's bytes in place (big-endian file order to little-endian host order).
void swap_elements(std::vector<uint8_t>& data, int element_size) {
  for (size_t i = 0; i + element_size <= data.size(); i += size_t(element_size))
    std::reverse(data.begin() + i, data.begin() + i + element_size);
}

}  // namespace

int64_t IdxArray::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int idx_element_size(uint8_t type_code) {
  switch (type_code) {
    case kIdxUByte: case kIdxSByte: return 1;
    case kIdxShort: return 2;
    case kIdxInt: case kIdxFloat: return 4;
    case kIdxDouble: return 8;
    default: return 0;
  }
}

const char* idx_type_name(uint8_t type_code) {
  switch (type_code) {
    case kIdxUByte: return "ubyte";
    case kIdxSByte: return "sbyte";
    case kIdxShort: return "short";
    case kIdxInt: return "int";
    case kIdxFloat: return "float";
    case kIdxDouble: return "double";
    default: return "unknown";
  }
}

IdxArray read_idx(const std::string& path) {
  // Existence first, so a missing file says so rather than failing inside zlib.
  std::error_code ec;
  KILN_CHECK(std::filesystem::exists(path, ec), "read_idx: ", path, ": no such file");
  KILN_CHECK(!std::filesystem::is_directory(path, ec), "read_idx: ", path, ": is a directory, not an IDX file");
  const std::string lead = leading_bytes(path);
  const bool gzipped = lead.size() == 2 && uint8_t(lead[0]) == 0x1f && uint8_t(lead[1]) == 0x8b;
  const char* kind = gzipped ? "gzip" : "raw";

  GzFile file(gzopen(path.c_str(), "rb"));
  KILN_CHECK(file != nullptr, "read_idx: cannot open ", path, ": ", std::strerror(errno));

  // Header: two zero bytes, the type code, the rank; then one big-endian uint32 per dimension.
  uint8_t magic[4];
  const size_t magic_read = read_some(file.get(), magic, 4, path, kind);
  KILN_CHECK(magic_read == 4, "read_idx: ", path, ": ", kind, " file is too short for an IDX header (",
             magic_read, " bytes)", zlib_note(file.get(), path));
  KILN_CHECK(magic[0] == 0 && magic[1] == 0, "read_idx: ", path, ": bad magic number 0x", std::hex, int(magic[0]),
             " 0x", int(magic[1]), std::dec, " (an IDX file starts with two zero bytes)");
  IdxArray out;
  out.type_code = magic[2];
  const int element_size = idx_element_size(out.type_code);
  KILN_CHECK(element_size > 0, "read_idx: ", path, ": unknown type code 0x", std::hex, int(out.type_code), std::dec,
             " (expected 0x08 ubyte, 0x09 sbyte, 0x0B short, 0x0C int, 0x0D float or 0x0E double)");
  const int rank = magic[3];
  KILN_CHECK(rank >= 1 && rank <= kMaxIdxRank, "read_idx: ", path, ": rank ", rank, " is not supported (1 to ",
             kMaxIdxRank, ")");

  std::vector<uint8_t> dim_bytes(size_t(rank) * 4);
  const size_t dims_read = read_some(file.get(), dim_bytes.data(), dim_bytes.size(), path, kind);
  KILN_CHECK(dims_read == dim_bytes.size(), "read_idx: ", path, ": ", kind, " file ends inside the header (",
             rank, " dimensions need ", dim_bytes.size(), " bytes, got ", dims_read, ")", zlib_note(file.get(), path));
  uint64_t expected_bytes = uint64_t(element_size);
  bool overflow = false;
  for (int d = 0; d < rank; ++d) {
    const uint32_t size = big_endian_u32(&dim_bytes[size_t(d) * 4]);
    out.dims.push_back(int64_t(size));
    if (size != 0 && expected_bytes > std::numeric_limits<uint64_t>::max() / size) overflow = true;
    expected_bytes *= size;
  }
  KILN_CHECK(!overflow && expected_bytes <= uint64_t(std::numeric_limits<int64_t>::max()), "read_idx: ", path,
             ": dimensions ", dims_text(out.dims), " are too large");

  // Data: read in chunks, so a header claiming far more than the file holds fails without
  // allocating what it claims.
  while (out.data.size() < expected_bytes) {
    const size_t have = out.data.size();
    const size_t want = size_t(std::min<uint64_t>(expected_bytes - have, kReadChunk));
    out.data.resize(have + want);
    const size_t got = read_some(file.get(), out.data.data() + have, want, path, kind);
    KILN_CHECK(got == want, "read_idx: ", path, ": ", kind, " file is truncated: dimensions ", dims_text(out.dims),
               " of ", idx_type_name(out.type_code), " need ", expected_bytes, " data bytes, got ", have + got,
               zlib_note(file.get(), path));
  }

  // Anything after the data means the header does not describe the file.
  uint64_t extra = 0;
  std::vector<uint8_t> scratch(1 << 16);
  for (size_t n; (n = read_some(file.get(), scratch.data(), scratch.size(), path, kind)) > 0;) extra += n;
  const std::string stream_note = zlib_note(file.get(), path);
  KILN_CHECK(stream_note.empty(), "read_idx: ", path, ": ", kind, " file is truncated after its data", stream_note);
  KILN_CHECK(extra == 0, "read_idx: ", path, ": ", extra, " extra bytes after the data of dimensions ",
             dims_text(out.dims), " of ", idx_type_name(out.type_code));

  if (element_size > 1 && host_is_little_endian()) swap_elements(out.data, element_size);
  return out;
}

std::string fashion_mnist_dir() {
  const char* dir = std::getenv("KILN_DATA_DIR");
  return dir && *dir ? std::string(dir) : std::string("/usr/share/datasets/fashion-mnist");
}

std::string find_idx_file(const std::string& dir, const std::string& stem) {
  const std::string gz = dir + "/" + stem + ".gz", raw = dir + "/" + stem;
  std::error_code ec;
  if (std::filesystem::is_regular_file(gz, ec)) return gz;
  if (std::filesystem::is_regular_file(raw, ec)) return raw;
  throw Error(detail::concat("find_idx_file: neither ", gz, " nor ", raw,
                             " exists; Fashion-MNIST is installed by `apt-get install dataset-fashion-mnist`",
                             " (or set KILN_DATA_DIR to a folder holding the IDX files)"));
}

}  // namespace kiln::data
