// The disk cache. Its entry reader (parse_cache_sidecar, check_cache_content) works from memory,
// the code tests/fuzz/disk_cache_fuzz.cpp feeds.
#include "runtime/disk_cache.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/hash.h"
#include "runtime/log.h"
#include "runtime/mapped_file.h"

namespace fs = std::filesystem;

namespace kiln {

namespace {

std::string hex(uint64_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
}

// An entry's files: "<stem><ext>.meta" names "<stem>-<checksum><ext>", the stem hashing the key.
std::string entry_stem(const std::string& key) { return hex(fnv1a64(key.data(), key.size())); }
std::string content_file_name(const std::string& key, uint64_t fnv, const std::string& ext) {
  return entry_stem(key) + "-" + hex(fnv) + ext;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

bool write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  return bool(out.flush());
}

void remove_quietly(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

}  // namespace

std::string cache_root() { return config().cache_dir; }

uint64_t cache_size_bytes() {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(cache_root(), ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  return total;
}

void clear_cache() {
  std::error_code ec;
  fs::remove_all(cache_root(), ec);
}

DiskCache::DiskCache(const std::string& flavour) {
  dir_ = cache_root() + "/" + flavour;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const std::string probe = dir_ + "/.probe-" + unique_suffix();
  writable_ = !ec && write_file(probe, "ok");
  remove_quietly(probe);
  if (!writable_) {
    log().warn("cache folder {} is not writable; kernels will be compiled but not kept", dir_);
    dir_ = (fs::temp_directory_path() / ("kiln-" + unique_suffix())).string();
    fs::create_directories(dir_, ec);
  }
}

std::string DiskCache::entry_path(const std::string& key, const std::string& ext) const {
  return dir_ + "/" + entry_stem(key) + ext;
}

std::string DiskCache::temp_path(const std::string& ext) const { return dir_ + "/.tmp-" + unique_suffix() + ext; }

// An entry is a content file named by its key's and its content's hashes, and a sidecar (named
// by the key) that names the content file and records its size, checksum and full key. Writers
// racing on one key each rename a complete content file of their own and then the sidecar; the
// last sidecar wins, and always names a file it describes.
std::string CacheSidecar::text() const {
  return "file " + file_name + "\nsize " + std::to_string(size) + "\nfnv " + hex(fnv) + "\nkey " + key;
}

namespace {

// A sidecar's text for a message: its lines may be anything, of any length.
std::string excerpt(std::string_view text) {
  constexpr size_t kMaxChars = 100;
  return text.size() > kMaxChars ? std::string(text.substr(0, kMaxChars)) + "..." : std::string(text);
}

// The next line of a sidecar, "<label> <value>"; returns the value. The last line (the key, which
// may hold newlines) runs to the end.
std::string_view sidecar_field(std::string_view& rest, int line, const std::string& label, const char* value_name,
                               bool last, const std::string& meta_path) {
  const std::string expected = "\"" + label + " <" + value_name + ">\"";
  KILN_CHECK(!rest.empty(), meta_path, ": ends before line ", line, ", ", expected);
  const size_t end = last ? rest.size() : rest.find('\n');
  KILN_CHECK(end != std::string_view::npos, meta_path, ": line ", line, " does not end with a newline");
  const std::string_view text = rest.substr(0, end);
  KILN_CHECK(text.substr(0, label.size() + 1) == label + " ", meta_path, ": line ", line, " is \"", excerpt(text),
             "\", not ", expected);
  rest.remove_prefix(last ? end : end + 1);
  return text.substr(label.size() + 1);
}

// A number as store() writes it (no sign, no leading zeros), or a kiln::Error.
uint64_t sidecar_number(std::string_view text, int base, int line, const std::string& label, const char* value_name,
                        const std::string& meta_path) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  const bool canonical = error == std::errc() && end == text.data() + text.size() &&
                         text == (base == 16 ? hex(value) : std::to_string(value));
  KILN_CHECK(canonical, meta_path, ": line ", line, " is \"", label, " ", excerpt(text), "\", not \"", label, " <",
             value_name, ">\"");
  return value;
}

}  // namespace

CacheSidecar parse_cache_sidecar(std::string_view text, const std::string& ext, const std::string& meta_path) {
  CacheSidecar out;
  std::string_view rest = text;
  out.file_name = sidecar_field(rest, 1, "file", "name", false, meta_path);
  out.size =
      sidecar_number(sidecar_field(rest, 2, "size", "bytes", false, meta_path), 10, 2, "size", "bytes", meta_path);
  out.fnv =
      sidecar_number(sidecar_field(rest, 3, "fnv", "checksum", false, meta_path), 16, 3, "fnv", "checksum", meta_path);
  out.key = sidecar_field(rest, 4, "key", "key", true, meta_path);
  // The one name store() gives this content: a plain name in the cache folder, so that a damaged
  // sidecar never has kiln load, or remove, a file elsewhere.
  const std::string expected = content_file_name(out.key, out.fnv, ext);
  KILN_CHECK(out.file_name == expected, meta_path, ": names the content file \"", excerpt(out.file_name),
             "\", where its key and checksum make \"", expected, "\"");
  return out;
}

void check_cache_content(const CacheSidecar& sidecar, std::string_view content, const std::string& content_path) {
  KILN_CHECK(content.size() == sidecar.size, content_path, ": holds ", content.size(), " bytes where its sidecar says ",
             sidecar.size);
  const uint64_t fnv = fnv1a64(content.data(), content.size());
  KILN_CHECK(fnv == sidecar.fnv, content_path, ": its checksum is ", hex(fnv), " where its sidecar says ",
             hex(sidecar.fnv));
}

std::optional<std::string> DiskCache::find(const std::string& key, const std::string& ext) const {
  if (!writable_) return std::nullopt;
  const std::string meta_path = entry_path(key, ext) + ".meta";
  auto meta = read_file(meta_path);
  if (!meta) return std::nullopt;
  std::string path;  // set once the sidecar names a file of this cache: only that one is removed
  try {
    const CacheSidecar sidecar = parse_cache_sidecar(*meta, ext, meta_path);
    path = dir_ + "/" + sidecar.file_name;
    KILN_CHECK(sidecar.key == key, meta_path, ": is the entry of another key (", excerpt(sidecar.key),
               "), whose hash is the same");
    const MappedFile content(path, path + ": ");  // mapped, not read: a wrong size is found at once
    check_cache_content(sidecar, content.bytes(), path);
    return path;
  } catch (const Error& e) {
    log().warn("damaged cache entry: {}; rebuilding it", e.what());
    if (!path.empty()) remove_quietly(path);
    remove_quietly(meta_path);
    return std::nullopt;
  }
}

std::string DiskCache::store(const std::string& key, const std::string& ext, const std::string& file) const {
  if (!writable_) return file;
  auto data = read_file(file);
  if (!data) return file;
  const uint64_t fnv = fnv1a64(data->data(), data->size());
  const CacheSidecar sidecar{content_file_name(key, fnv, ext), data->size(), fnv, key};
  const std::string path = dir_ + "/" + sidecar.file_name, meta_tmp = temp_path(".meta");
  std::error_code ec;
  fs::rename(file, path, ec);
  if (ec || !write_file(meta_tmp, sidecar.text())) {
    log().warn("could not store {} in the kernel cache: {}", path, ec.message());
    remove_quietly(meta_tmp);
    return ec ? file : path;
  }
  fs::rename(meta_tmp, entry_path(key, ext) + ".meta", ec);
  return path;
}

}  // namespace kiln
