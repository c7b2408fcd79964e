#include "runtime/disk_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/log.h"

namespace fs = std::filesystem;

namespace kiln {

uint64_t fnv1a64(const void* data, size_t n, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

namespace {

std::string hex(uint64_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
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

std::string cache_root() {
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return d;
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kiln";
  return (fs::temp_directory_path() / "kiln-cache").string();
}

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
  return dir_ + "/" + hex(fnv1a64(key.data(), key.size())) + ext;
}

std::string DiskCache::temp_path(const std::string& ext) const {
  return dir_ + "/.tmp-" + unique_suffix() + ext;
}

namespace {
// An entry is a content file named by its key's and its content's hashes, and a sidecar (named
// by the key) that names the content file and records its size, checksum and full key. Writers
// racing on one key each rename a complete content file of their own and then the sidecar; the
// last sidecar wins, and always names a file it describes.
std::string sidecar_text(const std::string& file_name, const std::string& data, const std::string& key) {
  return "file " + file_name + "\nsize " + std::to_string(data.size()) + "\nfnv " +
         hex(fnv1a64(data.data(), data.size())) + "\nkey " + key;
}
}  // namespace

std::optional<std::string> DiskCache::find(const std::string& key, const std::string& ext) const {
  if (!writable_) return std::nullopt;
  const std::string meta_path = entry_path(key, ext) + ".meta";
  auto meta = read_file(meta_path);
  if (!meta) return std::nullopt;
  const std::string prefix = "file ";
  const size_t end = meta->find('\n');
  const std::string file_name = meta->rfind(prefix, 0) == 0 && end != std::string::npos
                                    ? meta->substr(prefix.size(), end - prefix.size()) : "";
  const std::string path = dir_ + "/" + file_name;
  auto data = file_name.empty() ? std::nullopt : read_file(path);
  if (!data || *meta != sidecar_text(file_name, *data, key)) {
    log().warn("cache entry {} is corrupt, truncated or for another key; rebuilding it", meta_path);
    if (!file_name.empty()) remove_quietly(path);
    remove_quietly(meta_path);
    return std::nullopt;
  }
  return path;
}

std::string DiskCache::store(const std::string& key, const std::string& ext, const std::string& file) const {
  if (!writable_) return file;
  auto data = read_file(file);
  if (!data) return file;
  const std::string base = entry_path(key, ext);
  const std::string file_name = base.substr(dir_.size() + 1, base.size() - dir_.size() - 1 - ext.size()) + "-" +
                                hex(fnv1a64(data->data(), data->size())) + ext;
  const std::string path = dir_ + "/" + file_name, meta_tmp = temp_path(".meta");
  std::error_code ec;
  fs::rename(file, path, ec);
  if (ec || !write_file(meta_tmp, sidecar_text(file_name, *data, key))) {
    log().warn("could not store {} in the kernel cache: {}", path, ec.message());
    remove_quietly(meta_tmp);
    return ec ? file : path;
  }
  fs::rename(meta_tmp, base + ".meta", ec);
  return path;
}

}  // namespace kiln
