// IDX reading: the whole file mapped, then parsed from memory (the code tests/fuzz/idx_fuzz.cpp
// feeds), gzip inflated on the way with zlib. The magic bytes say which kind the file is, so that
// messages can say which kind of file was truncated.
#include "frontend/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/mapped_file.h"

namespace kiln::data {

namespace {

constexpr int kMaxIdxRank = 8;
constexpr size_t kFirstChunk = size_t(1) << 16;  // the data grows from this as bytes arrive

bool host_is_little_endian() {
  const uint16_t probe = 1;
  uint8_t first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

// A file's bytes front to back: as they are, or inflated when the file is gzip (members one after
// another, as gzip -d reads them).
class IdxBytes {
 public:
  IdxBytes(std::string_view file, const std::string& path) : rest_(file), path_(path) {
    gzip_ = file.size() >= 2 && uint8_t(file[0]) == 0x1f && uint8_t(file[1]) == 0x8b;
    // 16 + MAX_WBITS: a gzip wrapper (header, CRC-32 and length checked), the largest window.
    if (gzip_) KILN_CHECK(inflateInit2(&stream_, 16 + MAX_WBITS) == Z_OK, "read_idx: ", path, ": zlib cannot start");
  }
  ~IdxBytes() {
    if (gzip_) inflateEnd(&stream_);
  }
  IdxBytes(const IdxBytes&) = delete;
  IdxBytes& operator=(const IdxBytes&) = delete;

  const char* kind() const { return gzip_ ? "gzip" : "raw"; }
  // Why a read came short, for messages: "" at a plain end of the data.
  const char* note() const { return cut_off_ ? " (the gzip stream is cut off)" : ""; }

  // Copies up to `want` bytes to `dst`; fewer only at the end of the data. A corrupt gzip stream,
  // or bytes after it that are not another gzip member, throw.
  size_t read(uint8_t* dst, size_t want) {
    if (!gzip_) {
      const size_t n = std::min(want, rest_.size());
      if (n > 0) std::memcpy(dst, rest_.data(), n);
      rest_.remove_prefix(n);
      return n;
    }
    size_t got = 0;
    while (got < want && !cut_off_) {
      if (member_ended_) {
        if (rest_.empty()) break;
        KILN_CHECK(rest_.size() >= 2 && uint8_t(rest_[0]) == 0x1f && uint8_t(rest_[1]) == 0x8b, "read_idx: ", path_,
                   ": ", rest_.size(), " bytes after the gzip stream are not gzip data");
        inflateReset(&stream_);
        member_ended_ = false;
      }
      stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(rest_.data()));
      stream_.avail_in = unsigned(std::min<size_t>(rest_.size(), UINT_MAX));
      stream_.next_out = dst + got;
      stream_.avail_out = unsigned(std::min<size_t>(want - got, UINT_MAX));
      const unsigned in_before = stream_.avail_in, out_before = stream_.avail_out;
      const int code = inflate(&stream_, Z_NO_FLUSH);
      rest_.remove_prefix(in_before - stream_.avail_in);
      got += out_before - stream_.avail_out;
      if (code == Z_STREAM_END) {
        member_ended_ = true;
      } else if (code == Z_BUF_ERROR && rest_.empty()) {
        cut_off_ = true;  // no progress possible: the input ran out inside the stream
      } else {
        KILN_CHECK(code == Z_OK, "read_idx: ", path_,
                   ": gzip file is corrupt (zlib: ", stream_.msg ? stream_.msg : zError(code), ")");
      }
    }
    return got;
  }

 private:
  std::string_view rest_;  // the bytes not yet read (gzip: not yet inflated)
  const std::string& path_;
  bool gzip_ = false, member_ended_ = false, cut_off_ = false;
  z_stream stream_ = {};
};

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
    case kIdxUByte:
    case kIdxSByte: return 1;
    case kIdxShort: return 2;
    case kIdxInt:
    case kIdxFloat: return 4;
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

IdxArray parse_idx(std::string_view file, const std::string& path) {
  IdxBytes bytes(file, path);
  const char* kind = bytes.kind();

  // Header: two zero bytes, the type code, the rank; then one big-endian uint32 per dimension.
  uint8_t magic[4];
  const size_t magic_read = bytes.read(magic, 4);
  KILN_CHECK(magic_read == 4, "read_idx: ", path, ": ", kind, " file is too short for an IDX header (", magic_read,
             " bytes)", bytes.note());
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

  uint8_t dim_bytes[4 * kMaxIdxRank];
  const size_t dims_read = bytes.read(dim_bytes, size_t(rank) * 4);
  KILN_CHECK(dims_read == size_t(rank) * 4, "read_idx: ", path, ": ", kind, " file ends inside the header (", rank,
             " dimensions need ", rank * 4, " bytes, got ", dims_read, ")", bytes.note());
  // The bytes, and the same product without the sizes that are 0: numel() and any strides taken
  // from the dimensions must not overflow either, whatever the order of the product.
  uint64_t expected_bytes = uint64_t(element_size), extent = uint64_t(element_size);
  bool overflow = false;
  for (int d = 0; d < rank; ++d) {
    const uint32_t size = big_endian_u32(&dim_bytes[d * 4]);
    out.dims.push_back(int64_t(size));
    expected_bytes *= size;  // at most extent, which is checked
    if (size != 0) overflow |= __builtin_mul_overflow(extent, uint64_t(size), &extent);
  }
  KILN_CHECK(!overflow && extent <= uint64_t(std::numeric_limits<int64_t>::max()), "read_idx: ", path, ": dimensions ",
             dims_text(out.dims), " are too large");

  // Data: the buffer grows with the bytes that arrive, at most doubling, so that a header claiming
  // far more than the file holds fails without allocating what it claims.
  while (out.data.size() < expected_bytes) {
    const size_t have = out.data.size();
    const size_t want = size_t(std::min<uint64_t>(expected_bytes - have, std::max(have, kFirstChunk)));
    out.data.reserve(have + want);
    out.data.resize(have + want);
    const size_t got = bytes.read(out.data.data() + have, want);
    KILN_CHECK(got == want, "read_idx: ", path, ": ", kind, " file is truncated: dimensions ", dims_text(out.dims),
               " of ", idx_type_name(out.type_code), " need ", expected_bytes, " data bytes, got ", have + got,
               bytes.note());
  }

  // Anything after the data means the header does not describe the file.
  uint64_t extra = 0;
  uint8_t scratch[1 << 14];
  for (size_t n; (n = bytes.read(scratch, sizeof(scratch))) > 0;) extra += n;
  KILN_CHECK(*bytes.note() == 0, "read_idx: ", path, ": ", kind, " file is truncated after its data", bytes.note());
  KILN_CHECK(extra == 0, "read_idx: ", path, ": ", extra, " extra bytes after the data of dimensions ",
             dims_text(out.dims), " of ", idx_type_name(out.type_code));

  if (element_size > 1 && host_is_little_endian()) swap_elements(out.data, element_size);
  return out;
}

IdxArray read_idx(const std::string& path) {
  // Existence first, so that a missing file or a folder says so.
  std::error_code ec;
  KILN_CHECK(std::filesystem::exists(path, ec), "read_idx: ", path, ": no such file");
  KILN_CHECK(!std::filesystem::is_directory(path, ec), "read_idx: ", path, ": is a directory, not an IDX file");
  const MappedFile file(path, "read_idx: " + path + ": ");
  return parse_idx(file.bytes(), path);
}

std::string fashion_mnist_dir() { return config().data_dir; }

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
