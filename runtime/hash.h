// kiln's hashes, in one place: FNV-1a over bytes (cache file names, kernel symbol names, cache
// checksums) and over whole 64-bit words (structural hashes of segments and partitions in memory).
// Stable across runs and machines: file names in the disk cache depend on them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {

constexpr uint64_t kFnvOffsetBasis = 1469598103934665603ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

inline uint64_t fnv1a64(const void* data, size_t n, uint64_t h = kFnvOffsetBasis) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnvPrime;
  return h;
}

// One FNV-1a step over a whole 64-bit word; start from kFnvOffsetBasis.
inline uint64_t fnv1a64_word(uint64_t h, uint64_t word) { return (h ^ word) * kFnvPrime; }

// A long run of words hashed in four interleaved FNV-1a chains: one chain waits a multiply's
// latency per word, which was most of a 2000-op flush's partition-cache lookup.
inline uint64_t fnv1a64_words(const std::vector<int64_t>& v) {
  uint64_t h[4] = {kFnvOffsetBasis, kFnvOffsetBasis + 1, kFnvOffsetBasis + 2, kFnvOffsetBasis + 3};
  size_t i = 0;
  for (; i + 4 <= v.size(); i += 4)
    for (size_t lane = 0; lane < 4; ++lane) h[lane] = fnv1a64_word(h[lane], uint64_t(v[i + lane]));
  for (; i < v.size(); ++i) h[0] = fnv1a64_word(h[0], uint64_t(v[i]));
  return fnv1a64_word(fnv1a64_word(fnv1a64_word(h[0], h[1]), h[2]), h[3]);
}

}  // namespace kiln
