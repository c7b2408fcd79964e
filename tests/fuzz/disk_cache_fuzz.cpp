// Fuzz target for the kernel cache's entry reader (runtime/disk_cache.cpp: parse_cache_sidecar and
// check_cache_content, what DiskCache::find runs on an entry's files). An input is a sidecar's
// text, a NUL byte, then the content file's bytes (no NUL: all sidecar, empty content). Any input
// is a valid entry or a kiln::Error; anything else (a crash, a sanitizer's report, another
// exception, a trap below) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/disk_cache.h"
#include "runtime/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view sidecar_text = input.substr(0, split);
  const std::string_view content = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  try {
    const kiln::CacheSidecar sidecar = kiln::parse_cache_sidecar(sidecar_text, ".so", "cache/entry.so.meta");
    kiln::check_cache_content(sidecar, content, "cache/" + sidecar.file_name);
    // A sidecar that passes is what store() writes, and names a plain file in the cache folder.
    if (sidecar.text() != sidecar_text || sidecar.file_name.find('/') != std::string::npos ||
        sidecar.file_name.empty() || sidecar.file_name[0] == '.')
      __builtin_trap();
  } catch (const kiln::Error&) {
  }
  return 0;
}
