// Compiled kernels on disk, so that a second process compiles nothing. Entries live under
// KILN_CACHE_DIR (default ~/.cache/kiln) in a folder named for kiln's version, the compiler's
// version and the target, so a change of any of them starts a fresh folder. Each entry is a file
// plus a sidecar recording its full key, size and checksum: a truncated, corrupt or colliding entry
// is detected, logged, removed and rebuilt. Writes go to a temporary file renamed into place, so
// processes sharing the folder never see half an entry.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

class DiskCache {
 public:
  // `flavour` names what produced the entries, e.g. "kiln-0.1.0-<compiler build>-halide14-x86-<cpu id>".
  explicit DiskCache(const std::string& flavour);

  // The path of a valid entry for `key`, if there is one.
  std::optional<std::string> find(const std::string& key, const std::string& ext) const;
  // Moves `file` into the cache as the entry for `key` and returns its final path. If the cache
  // folder cannot be written, the file stays where it is and that path is returned.
  std::string store(const std::string& key, const std::string& ext, const std::string& file) const;
  // A fresh path for a temporary file inside the cache folder (or the system's temp folder).
  std::string temp_path(const std::string& ext) const;

  const std::string& dir() const { return dir_; }
  bool writable() const { return writable_; }

 private:
  std::string entry_path(const std::string& key, const std::string& ext) const;
  std::string dir_;
  bool writable_ = false;
};

// An entry's sidecar: the content file it names (in the cache folder), that file's size and
// FNV-1a checksum, and the entry's full key. text() is the file: four lines, "file <name>",
// "size <decimal>", "fnv <hex>", "key <key>" (the key runs to the end).
struct CacheSidecar {
  std::string file_name;
  uint64_t size = 0;
  uint64_t fnv = 0;
  std::string key;
  std::string text() const;
};

// DiskCache::find's reading of an entry, from memory (tests/fuzz/disk_cache_fuzz.cpp feeds them
// too). Each throws kiln::Error naming the file and what is wrong; find logs it and rebuilds the
// entry. A sidecar must be exactly what store() writes, and name the one file store() names for
// its key, checksum and `ext`: never a file elsewhere, which find would otherwise load or remove.
CacheSidecar parse_cache_sidecar(std::string_view text, const std::string& ext, const std::string& meta_path);
// The content must have the size and checksum its sidecar records.
void check_cache_content(const CacheSidecar& sidecar, std::string_view content, const std::string& content_path);

// The root cache folder (KILN_CACHE_DIR or ~/.cache/kiln), its total size, and clearing it.
std::string cache_root();
uint64_t cache_size_bytes();
void clear_cache();

}  // namespace kiln
