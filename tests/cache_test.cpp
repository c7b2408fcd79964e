// The disk cache, across processes: each case runs this test binary again as a child process
// (CacheChild.Workload) with its own KILN_CACHE_DIR, and the child checks what it compiled or
// loaded, and that its results match the interpreter's. Then damaged entries read in this process.
#include <gtest/gtest.h>
#include <kiln/torch.h>
#include <spdlog/sinks/ostream_sink.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "runtime/config.h"
#include "runtime/disk_cache.h"
#include "runtime/hash.h"
#include "runtime/log.h"

namespace fs = std::filesystem;

namespace {

// A training step's worth of kernels: matmul, LayerNorm, GELU, softmax cross-entropy, Adam.
std::vector<float> workload() {
  torch::manual_seed(3);
  torch::nn::Sequential net(torch::nn::Linear(12, 24), torch::nn::LayerNorm(torch::nn::LayerNormOptions({24})),
                            torch::nn::GELU(), torch::nn::Linear(24, 4));
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-2));
  std::vector<float> losses;
  for (int i = 0; i < 3; ++i) {
    auto x = torch::randn({16, 12});
    auto y = torch::randint(0, 4, {16});
    adam.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    adam.step();
    losses.push_back(loss.item<float>());
  }
  return losses;
}

// Runs the child with `cache_dir`, expecting `expect`: "compile" (built kernels, loaded none),
// "load" (built none), "interpret" (neither) or "any". Returns the child's exit status; its output is left in a log
// file in the temporary folder.
int run_child(const std::string& cache_dir, const std::string& expect, const std::string& env = "") {
  const auto log = fs::temp_directory_path() / ("kiln-cache-child-" + std::to_string(getpid()) + "-" + expect + ".log");
  const std::string cmd = env + " KILN_CACHE_DIR='" + cache_dir + "' KILN_CACHE_CHILD=" + expect + " /proc/" +
                          std::to_string(getpid()) + "/exe --gtest_filter=CacheChild.Workload > '" + log.string() +
                          "' 2>&1";
  return std::system(cmd.c_str());
}

std::string fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("kiln-cache-test-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(dir);
  return dir.string();
}

std::vector<fs::path> kernel_files(const std::string& dir) {
  std::vector<fs::path> files;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".so" && e.path().filename().string().rfind("halide", 0) != 0)
      files.push_back(e.path());
  return files;
}

// Whether a library whose path contains `name` is mapped into this process.
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find(name) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(CacheChild, Workload) {
  const char* expect = std::getenv("KILN_CACHE_CHILD");
  if (!expect) GTEST_SKIP() << "runs as a child of the Cache tests";
  kiln::config().backend = "interp";
  const auto reference = workload();
  kiln::config().backend = "halide";
  kiln::reset_stats();
  const auto losses = workload();
  const auto s = kiln::stats();
  for (size_t i = 0; i < losses.size(); ++i) EXPECT_NEAR(losses[i], reference[i], 1e-4 * std::abs(reference[i]) + 1e-5);
  const std::string e = expect;
  if (e == "compile") {
    EXPECT_GT(s.kernels_compiled, 0);
    EXPECT_EQ(s.kernels_loaded, 0);
    EXPECT_TRUE(mapped("libkiln_halide_compiler"));
  }
  if (e == "load") {  // and Halide and LLVM (codegen/halide/compiler.h) stayed out of the process
    EXPECT_EQ(s.kernels_compiled, 0);
    EXPECT_GT(s.kernels_loaded, 0);
    EXPECT_FALSE(mapped("libkiln_halide_compiler"));
    EXPECT_FALSE(mapped("libHalide"));
    EXPECT_FALSE(mapped("libLLVM"));
  }
  if (e == "interpret") {  // no compiler: every kernel ran on the interpreter, with the same results
    EXPECT_EQ(s.kernels_compiled, 0);
    EXPECT_EQ(s.kernels_loaded, 0);
  }
}

TEST(Cache, SecondProcessCompilesNothing) {
  const std::string dir = fresh_dir("second");
  ASSERT_EQ(run_child(dir, "compile"), 0);
  ASSERT_EQ(run_child(dir, "load"), 0);
  fs::remove_all(dir);
}

// Without the compiler module (not installed, or unloadable) a program still runs, and right.
TEST(Cache, WithoutTheCompilerKernelsRunOnTheInterpreter) {
  const std::string dir = fresh_dir("nocompiler");
  EXPECT_EQ(run_child(dir, "interpret", "KILN_HALIDE_COMPILER=/nonexistent/libkiln_halide_compiler.so"), 0);
  fs::remove_all(dir);
}

// The Halide runtime comes built with kiln (CMake target kiln_halide_runtime); without it (another
// machine, KILN_PREBUILT_RUNTIME=0 here) a process builds its own into the cache.
bool cache_has_runtime(const std::string& dir) {
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".meta") continue;
    std::ifstream meta(e.path());
    const std::string text((std::istreambuf_iterator<char>(meta)), std::istreambuf_iterator<char>());
    if (text.find("halide-runtime") != std::string::npos) return true;
  }
  return false;
}
TEST(Cache, RuntimeIsPrebuiltOrBuiltIntoTheCache) {
  const std::string prebuilt = fresh_dir("prebuilt"), own = fresh_dir("own");
  ASSERT_EQ(run_child(prebuilt, "compile"), 0);
  EXPECT_FALSE(cache_has_runtime(prebuilt));
  ASSERT_EQ(run_child(own, "compile", "KILN_PREBUILT_RUNTIME=0"), 0);
  EXPECT_TRUE(cache_has_runtime(own));
  EXPECT_EQ(run_child(own, "load", "KILN_PREBUILT_RUNTIME=0"), 0);
  fs::remove_all(prebuilt);
  fs::remove_all(own);
}

TEST(Cache, CorruptAndTruncatedEntriesAreRebuilt) {
  const std::string dir = fresh_dir("corrupt");
  ASSERT_EQ(run_child(dir, "compile"), 0);
  auto files = kernel_files(dir);
  ASSERT_FALSE(files.empty());
  for (size_t i = 0; i < files.size(); ++i) {
    if (i % 2 == 0) {  // garbage of the same size
      const auto size = fs::file_size(files[i]);
      std::ofstream(files[i], std::ios::binary | std::ios::trunc) << std::string(size, '\x5a');
    } else {  // cut in half
      fs::resize_file(files[i], fs::file_size(files[i]) / 2);
    }
  }
  EXPECT_EQ(run_child(dir, "any"), 0);   // rebuilds what is damaged, results still right
  EXPECT_EQ(run_child(dir, "load"), 0);  // and the rebuilt entries are good
  fs::remove_all(dir);
}

TEST(Cache, UnwritableFolderIsSurvived) {
  const std::string file = fresh_dir("unwritable");
  std::ofstream(file) << "a file, so nothing can be created below it";
  EXPECT_EQ(run_child(file + "/cache", "compile"), 0);
  fs::remove(file);
}

TEST(Cache, TwoProcessesFillOneFolder) {
  const std::string dir = fresh_dir("shared");
  fs::create_directories(dir);
  const std::string both =
      "(KILN_CACHE_DIR='" + dir + "' KILN_CACHE_CHILD=any /proc/" + std::to_string(getpid()) +
      "/exe --gtest_filter=CacheChild.Workload > /dev/null 2>&1 & KILN_CACHE_DIR='" + dir +
      "' KILN_CACHE_CHILD=any /proc/" + std::to_string(getpid()) +
      "/exe --gtest_filter=CacheChild.Workload > /dev/null 2>&1; a=$?; wait $!; b=$?; exit $((a|b)))";
  EXPECT_EQ(std::system(both.c_str()), 0);
  EXPECT_EQ(run_child(dir, "load"), 0);
  fs::remove_all(dir);
}

// --- damaged entries, read in this process ---

namespace {

// What kiln logs while one of these lives.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
    kiln::log().sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = kiln::log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

std::string hex(uint64_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
}

// A cache root of its own (Config::cache_dir, KILN_CACHE_DIR) for each test.
class CacheEntries : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = kiln::config().cache_dir;
    root_ = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    kiln::config().cache_dir = root_;
  }
  void TearDown() override {
    kiln::config().cache_dir = saved_;
    fs::remove_all(root_);
  }
  // Where store() puts the sidecar of `key`.
  static std::string meta_path(const kiln::DiskCache& cache, const std::string& key, const std::string& ext) {
    return cache.dir() + "/" + hex(kiln::fnv1a64(key.data(), key.size())) + ext + ".meta";
  }
  static std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::string root_;
  std::string saved_;
};

}  // namespace

// A sidecar naming a file outside its entry (here, outside the cache folder) is corrupt, even when
// size, checksum and key fit that file: it is neither loaded nor removed.
TEST_F(CacheEntries, ASidecarNamingAnotherFileLeavesThatFileAlone) {
  const kiln::DiskCache cache("flavour");
  const std::string victim = root_ + "/victim.so", content = "not a kernel";
  std::ofstream(victim) << content;
  const std::string meta = meta_path(cache, "key", ".so");
  for (const std::string& fnv : {hex(kiln::fnv1a64(content.data(), content.size())), std::string("0")}) {
    std::ofstream(meta) << "file ../victim.so\nsize " << content.size() << "\nfnv " << fnv << "\nkey key";
    LogCapture log;
    EXPECT_FALSE(cache.find("key", ".so"));
    EXPECT_EQ(read(victim), content);
    EXPECT_FALSE(fs::exists(meta));
    EXPECT_NE(log.text().find(meta + ": names the content file \"../victim.so\""), std::string::npos) << log.text();
  }
}

// Each kind of damage is logged naming the file and what is wrong, and the entry is removed.
TEST_F(CacheEntries, DamagedEntriesAreLoggedWithTheFileAndTheFault) {
  const kiln::DiskCache cache("flavour");
  const std::string content = "a kernel's bytes", meta = meta_path(cache, "key", ".so");
  auto store = [&](const std::string& key = "key") {
    const std::string file = cache.temp_path(".so");
    std::ofstream(file) << content;
    return cache.store(key, ".so", file);
  };
  // A content file is removed only where its sidecar proved to be this entry's.
  auto expect_rebuilt = [&](const std::string& path, const std::vector<std::string>& parts,
                            bool content_removed = true) {
    LogCapture log;
    EXPECT_FALSE(cache.find("key", ".so"));
    for (const auto& part : parts) EXPECT_NE(log.text().find(part), std::string::npos) << log.text();
    EXPECT_FALSE(fs::exists(meta));
    EXPECT_EQ(fs::exists(path), !content_removed);
  };

  std::string path = store();
  ASSERT_EQ(cache.find("key", ".so"), path);
  std::ofstream(path) << "a kernel's bytez";
  expect_rebuilt(path, {path + ": its checksum is ",
                        "where its sidecar says " + hex(kiln::fnv1a64(content.data(), content.size()))});

  path = store();
  fs::resize_file(path, 4);
  expect_rebuilt(path, {path + ": holds 4 bytes where its sidecar says 16"});

  path = store();
  fs::remove(path);
  expect_rebuilt(path, {path + ": cannot open the file"});

  // The entry of a key whose name collides with this one's.
  path = store("another key");
  fs::rename(meta_path(cache, "another key", ".so"), meta);
  expect_rebuilt(path, {meta + ": is the entry of another key"});

  path = store();
  const std::string sidecar = read(meta);
  std::ofstream(meta) << sidecar.substr(0, sidecar.find("size ")) + "size 016" + sidecar.substr(sidecar.find("\nfnv"));
  expect_rebuilt(path, {meta + ": line 2 is \"size 016\", not \"size <bytes>\""}, false);

  path = store();
  std::ofstream(meta) << "file " + fs::path(path).filename().string() + "\n";
  expect_rebuilt(path, {meta + ": ends before line 2, \"size <bytes>\""}, false);
}
