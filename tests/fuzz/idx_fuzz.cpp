// Fuzz target for the IDX reader (frontend/data/idx.cpp, parse_idx, which read_idx runs on the
// mapped file), raw and gzip: any bytes load or throw kiln::Error. Anything else (a crash, a
// sanitizer's report, another exception, a trap below) is a finding.
#include <kiln/kiln.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const kiln::data::IdxArray array =
        kiln::data::parse_idx({reinterpret_cast<const char*>(data), size}, "fuzz-images-idx3-ubyte");
    // What loads holds exactly what its dimensions say.
    if (uint64_t(array.numel()) * uint64_t(kiln::data::idx_element_size(array.type_code)) != array.data.size())
      __builtin_trap();
  } catch (const kiln::Error&) {
  }
  return 0;
}
