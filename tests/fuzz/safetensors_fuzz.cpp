// Fuzz target for the safetensors reader (frontend/nn/serialize.cpp, parse_safetensors, which
// load_safetensors runs on the mapped file): any bytes load or throw kiln::Error. Anything else (a
// crash, a sanitizer's report, another exception, a trap below) is a finding.
#include <kiln/kiln.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    kiln::SafetensorsMetadata metadata;
    const kiln::StateDict tensors =
        kiln::parse_safetensors({reinterpret_cast<const char*>(data), size}, "fuzz.safetensors", &metadata);
    // Every element loaded came from bytes of its own in the data after the header (at least one
    // each): nothing was made from a size the header claims but the file does not hold.
    uint64_t header_length = 0;
    std::memcpy(&header_length, data, 8);
    uint64_t elements = 0;
    for (const auto& item : tensors) elements += uint64_t(item.value().numel());
    if (elements > size - 8 - header_length) __builtin_trap();
  } catch (const kiln::Error&) {
  }
  // The tracer lists every node made since its last flush, and a program that makes only host
  // tensors never flushes on its own: millions of inputs would grow that list without end.
  kiln::sync();
  return 0;
}
