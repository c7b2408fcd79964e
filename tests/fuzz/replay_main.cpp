// A main for a fuzz target without libFuzzer, so that any compiler builds it and CI runs it in
// seconds: it feeds LLVMFuzzerTestOneInput every file named on the command line (a folder: every
// file in it), then deterministic mutations of each (the same ones on every run), and prints how
// many inputs ran. An input that makes the target crash, trap or throw what it does not catch ends
// the program with an error; --verbose names each input before it runs, to tell which one.
//
//   fuzz_idx_replay [--mutations N] [--verbose] FILE|FOLDER...   (N per file, default 10000)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

// One to four random edits of the kinds that break readers: flipped bits, bytes and integers at
// their limits (little- and big-endian), ASCII digits, cuts, removed, repeated and inserted
// spans, and the front of one file spliced to the back of another.
Bytes mutate(const Bytes& original, const std::vector<Bytes>& others, std::mt19937_64& rng) {
  Bytes out = original;
  auto below = [&](size_t n) { return n == 0 ? size_t(0) : size_t(rng() % n); };
  static const uint8_t kBytes[] = {0,   1,   0x7f, 0x80, 0xff, '0', '9',  '-',  '"', '/',
                                   '.', '[', ']',  '{',  '}',  ',', '\n', 0x1f, 0x8b};
  // 2^31, 2^32 - 1, 2^32, 2^40, 2^63 - 1, 2^63, 2^64 - 1 and a few small ones.
  static const uint64_t kIntegers[] = {0,          1,          0x7f,       0xff,       1ull << 31, (1ull << 32) - 1,
                                       1ull << 32, 1ull << 40, ~0ull >> 1, 1ull << 63, ~0ull};
  const int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t at = below(out.size());
    switch (rng() % 9) {
      case 0:
        if (!out.empty()) out[at] ^= uint8_t(1u << (rng() % 8));
        break;
      case 1:
        if (!out.empty()) out[at] = kBytes[below(sizeof(kBytes))];
        break;
      case 2: {  // an integer at a limit, 4 or 8 bytes, either byte order
        const uint64_t value = kIntegers[below(std::size(kIntegers))];
        const size_t width = rng() % 2 ? 4 : 8;
        const bool big_endian = rng() % 2;
        for (size_t i = 0; i < width && at + i < out.size(); ++i)
          out[at + i] = uint8_t(value >> (8 * (big_endian ? width - 1 - i : i)));
        break;
      }
      case 3: {  // a run of digits, where text holds numbers
        const std::string digits = std::to_string(kIntegers[below(std::size(kIntegers))]);
        for (size_t i = 0; i < digits.size() && at + i < out.size(); ++i) out[at + i] = uint8_t(digits[i]);
        break;
      }
      case 4: out.resize(at); break;
      case 5: out.erase(out.begin() + at, out.begin() + at + below(std::min<size_t>(out.size() - at, 64) + 1)); break;
      case 6: {  // a span repeated in place
        const size_t length = below(std::min<size_t>(out.size() - at, 64) + 1);
        const Bytes span(out.begin() + at, out.begin() + at + length);
        out.insert(out.begin() + at, span.begin(), span.end());
        break;
      }
      case 7: {
        Bytes noise(1 + below(16));
        for (auto& b : noise) b = uint8_t(rng());
        out.insert(out.begin() + at, noise.begin(), noise.end());
        break;
      }
      case 8: {
        const Bytes& other = others[below(others.size())];
        const size_t from = below(other.size());
        out.resize(at);
        out.insert(out.end(), other.begin() + from, other.end());
        break;
      }
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 10000;
  bool verbose = false;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mutations" && i + 1 < argc) {
      mutations = std::atol(argv[++i]);
    } else if (arg == "--verbose") {
      verbose = true;
    } else if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [--mutations N] [--verbose] FILE|FOLDER...\n", argv[0]);
    return 2;
  }
  std::sort(files.begin(), files.end());  // folders list in any order; the mutations must not vary
  std::vector<Bytes> inputs;
  for (const auto& f : files) inputs.push_back(read_file(f));

  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(20240528);
  long runs = 0;
  for (size_t f = 0; f < inputs.size(); ++f) {
    for (long m = 0; m <= mutations; ++m) {  // m = 0: the file as it is
      const Bytes input = m == 0 ? inputs[f] : mutate(inputs[f], inputs, rng);
      if (verbose) std::fprintf(stderr, "%s, mutation %ld\n", files[f].c_str(), m);
      LLVMFuzzerTestOneInput(input.data(), input.size());
      ++runs;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %ld inputs (%zu files, %ld mutations each) in %.1f s, none failed\n", argv[0], runs, files.size(),
              mutations, seconds);
  return 0;
}
