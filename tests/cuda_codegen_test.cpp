// CUDA code generation without a GPU: the kernels that random programs and training steps flush
// are captured (a flush hook that partitions as the flush driver does, records each kernel's CUDA
// source, then runs the interpreter), and every distinct structure's source is compiled by NVRTC
// for sm_90, ptxas reporting registers and spills. Golden files pin a few small sources. Skipped,
// saying why, where NVRTC is unavailable.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

#include "cli/models.h"
#include "codegen/backend.h"
#include "codegen/cuda/kernel_cache.h"
#include "codegen/cuda/nvrtc.h"
#include "codegen/cuda/ops.h"
#include "codegen/cuda/source.h"
#include "flush_capture.h"
#include "library_program.h"
#include "random_program.h"
#include "runtime/config.h"
#include "runtime/disk_cache.h"
#include "runtime/parallel.h"
#include "torch_program.h"

namespace {

using namespace kiln;
namespace cuda = kiln::codegen::cuda;

#define SKIP_WITHOUT_NVRTC()                                               \
  do {                                                                     \
    std::string why;                                                       \
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << "no NVRTC: " << why; \
  } while (0)

// The CUDA sources of the kernels flushed while capturing, by key (one per structure).
struct Captured {
  std::map<std::string, cuda::KernelSource> sources;
  std::vector<std::string> order;  // keys, first flushed first
  int library_kernels = 0;         // without CUDA source: cuBLAS calls
};
// Called with each kernel that has CUDA source while its nodes are live (the cache test).
std::function<void(const fusion::Kernel&)>* on_kernel = nullptr;

// Records the CUDA source of each kernel of a flush, then runs it on the interpreter.
void record(const fusion::Partition& partition, Captured& c) {
  for (const fusion::Kernel& k : partition.kernels) {
    if (!cuda::has_cuda_source(k)) {
      ++c.library_kernels;
      continue;
    }
    if (on_kernel) (*on_kernel)(k);
    cuda::KernelSource s = cuda::kernel_source(k, cuda::fits_int32_indices(k));
    if (c.sources.emplace(s.key, s).second) c.order.push_back(s.key);
  }
  codegen::interpreter().run(partition);
}

// Captures the kernels `body` flushes (run on the interpreter).
template <typename F>
Captured capture(F&& body) {
  Captured c;
  flush_capture::with_partition_runner([&](const fusion::Partition& p) { record(p, c); }, body);
  return c;
}

void merge(Captured& into, const Captured& from) {
  for (const auto& key : from.order)
    if (into.sources.emplace(key, from.sources.at(key)).second) into.order.push_back(key);
  into.library_kernels += from.library_kernels;
}

// A training step of each of `kiln train`'s models, and the libtorch-style test program (LayerNorm,
// tanh, cross-entropy with label smoothing, Adam).
void training_workloads() {
  namespace F = torch::nn::functional;
  torch::manual_seed(0);
  for (auto model : {fashion::make_mlp(), fashion::make_cnn()}) {
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
    auto x = torch::randn({8, 1, 28, 28});
    auto y = torch::randint(0, 10, {8});
    for (int step = 0; step < 2; ++step) {
      optimizer.zero_grad();
      auto loss = F::cross_entropy(model->forward(x), y);
      loss.backward();
      optimizer.step();
      (void)loss.item<float>();
    }
  }
  (void)torch_program::train(2);
  // Row kernels of every kind: softmax, log-softmax, layer norm, forward and backward.
  auto x = torch::randn({6, 33}, torch::requires_grad());
  auto w = torch::randn({33}, torch::requires_grad());
  auto total = F::softmax(x, F::SoftmaxFuncOptions(1)).pow(2).sum() +
               F::log_softmax(x, F::LogSoftmaxFuncOptions(1)).mean() +
               F::layer_norm(x, F::LayerNormFuncOptions({33}).weight(w)).pow(3).sum();
  total.backward();
  (void)x.grad().sum().item<float>();
}

Captured random_program_kernels(int programs, int structures) {
  return capture([&] {
    for (int i = 0; i < programs; ++i) {
      const uint64_t structure = uint64_t(i % structures);
      fuzz::Program p = fuzz::generate(structure, uint64_t(i), 4 + int(structure % 7));
      p.dtype = i % 5 == 4 ? kDouble : kFloat;
      (void)fuzz::run(p);
    }
  });
}

// A source without its prelude.
std::string kernel_text(const cuda::KernelSource& s) {
  const size_t at = s.source.find(cuda::kKernelMarker);
  return at == std::string::npos ? s.source : s.source.substr(at);
}

struct PtxasReport {
  int registers = 0, spill_bytes = 0;
};
// ptxas's -v lines in NVRTC's log: "Used N registers" and "N bytes spill stores, M bytes spill loads".
PtxasReport parse_ptxas(const std::string& log) {
  PtxasReport r;
  std::smatch m;
  if (std::regex_search(log, m, std::regex("Used (\\d+) registers"))) r.registers = std::stoi(m[1]);
  const std::regex spill("(\\d+) bytes spill (stores|loads)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), spill); it != std::sregex_iterator(); ++it)
    r.spill_bytes += std::stoi((*it)[1]);
  return r;
}

TEST(Cuda, NvrtcReportsItsVersionAndArchitecturesOrWhyNot) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) {
    EXPECT_FALSE(why.empty());
    EXPECT_TRUE(cuda::nvrtc_version().empty());
    GTEST_SKIP() << "no NVRTC: " << why;
  }
  EXPECT_FALSE(cuda::nvrtc_version().empty());
  const auto archs = cuda::nvrtc_supported_archs();
  ASSERT_FALSE(archs.empty());
  EXPECT_TRUE(std::find(archs.begin(), archs.end(), 90) != archs.end());
}

TEST(Cuda, ArchitecturesNewerThanNvrtcGetPtx) {
  SKIP_WITHOUT_NVRTC();
  const std::string src = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n";
  const auto cubin = cuda::nvrtc_compile(src, "k.cu", 90, "test");
  EXPECT_FALSE(cubin.ptx_only);
  EXPECT_EQ(cubin.arch, "sm_90");
  EXPECT_EQ(cubin.image.substr(0, 4),
            "\x7f"
            "ELF");
  const auto ptx = cuda::nvrtc_compile(src, "k.cu", cuda::nvrtc_supported_archs().back() + 1000, "test");
  EXPECT_TRUE(ptx.ptx_only);
  EXPECT_NE(ptx.image.find(".entry k"), std::string::npos);
}

TEST(Cuda, ACompileErrorNamesTheKeyAndNvrtcsLog) {
  SKIP_WITHOUT_NVRTC();
  try {
    cuda::nvrtc_compile("extern \"C\" __global__ void k() { undeclared_name = 1; }\n", "bad.cu", 90, "P1:|the-key");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the-key"), std::string::npos) << what;
    EXPECT_NE(what.find("undeclared_name"), std::string::npos) << what;
  }
}

// Every structure that random programs (forward and backward, float32 and float64) and training
// steps flush compiles for sm_90 without spilling much.
TEST(Cuda, EveryFlushedKernelStructureCompilesForSm90) {
  SKIP_WITHOUT_NVRTC();
  const auto start = std::chrono::steady_clock::now();
  // The library kernels with source first, so that the structure limit below keeps them all.
  Captured all = capture([] {
    (void)library_program::run(torch::kFloat);
    (void)library_program::run(torch::kDouble);
  });
  merge(all, capture(training_workloads));
  merge(all, random_program_kernels(360, 180));
  const double capture_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // ~50 ms of NVRTC each: 250 keep the suite within a minute on two busy cores.
  const size_t limit = size_t(std::max<int64_t>(
      1, std::atoll(std::getenv("KILN_CUDA_STRUCTURES") ? std::getenv("KILN_CUDA_STRUCTURES") : "250")));
  std::vector<const cuda::KernelSource*> sources;
  for (const auto& key : all.order)
    if (sources.size() < limit) sources.push_back(&all.sources.at(key));
  ASSERT_GE(sources.size(), std::min<size_t>(limit, 200)) << "too few kernel structures to check";
  std::map<cuda::Layout, int> layouts;
  std::set<std::string> library_ops;  // of the library kernels among them: "L|<op>.<dtype>..."
  for (const auto* s : sources) {
    ++layouts[s->layout];
    if (s->key.rfind("L|", 0) == 0) library_ops.insert(s->key.substr(2, s->key.find('.') - 2));
  }
  for (const char* op :
       {"IndexSelect", "Gather", "IndexAdd", "ScatterAdd", "Cat", "WriteView", "AddView", "ArgMax", "ArgMin", "CumSum",
        "SortIndex", "TopKIndex", "KthValueIndex", "MedianIndex", "ModeIndex", "SearchSorted"})
    EXPECT_TRUE(library_ops.count(op)) << "no " << op << " kernel among the structures checked";
  EXPECT_GT(layouts[cuda::Layout::Pointwise], 0);
  EXPECT_GT(layouts[cuda::Layout::BlockPerRow], 0);
  EXPECT_GT(layouts[cuda::Layout::SplitWhole], 0);
  EXPECT_GT(layouts[cuda::Layout::ThreadPerRow], 0);

  std::vector<PtxasReport> reports(sources.size());
  std::vector<std::string> errors(sources.size());
  std::atomic<size_t> next{0};
  // One range per thread, each compiling the next source until none is left.
  parallel_for_ranges(get_num_threads(), 1, [&](int64_t, int64_t) {
    for (size_t i = next++; i < sources.size(); i = next++) {
      const cuda::KernelSource& s = *sources[i];
      try {
        auto out = cuda::nvrtc_compile(s.source, s.name + ".cu", 90, s.key, {"--ptxas-options=-v"});
        reports[i] = parse_ptxas(out.log);
        if (out.image.substr(0, 4) !=
            "\x7f"
            "ELF")
          errors[i] = "not a cubin";
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  });
  int failed = 0, spilling = 0, max_registers = 0, max_spill = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!errors[i].empty() && ++failed <= 3) ADD_FAILURE() << errors[i] << "\nsource:\n" << kernel_text(*sources[i]);
    if (reports[i].spill_bytes > 0 && ++spilling <= 3)
      std::printf("[cuda] spills %d bytes: %s\n", reports[i].spill_bytes, sources[i]->key.c_str());
    max_registers = std::max(max_registers, reports[i].registers);
    max_spill = std::max(max_spill, reports[i].spill_bytes);
    EXPECT_LE(reports[i].spill_bytes, 64) << sources[i]->key;
  }
  EXPECT_EQ(failed, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "[cuda] %zu structures (%zu captured, %zu library ops, %d cuBLAS calls), layouts: %d pointwise, %d thread per "
      "row, "
      "%d block per row, %d split whole; %d failed; registers at most %d; %d spill (at most %d bytes); %.1f s (%.1f s "
      "capturing)\n",
      sources.size(), all.order.size(), library_ops.size(), all.library_kernels, layouts[cuda::Layout::Pointwise],
      layouts[cuda::Layout::ThreadPerRow], layouts[cuda::Layout::BlockPerRow], layouts[cuda::Layout::SplitWhole],
      failed, max_registers, spilling, max_spill, seconds, capture_seconds);
}

// Every elementwise op of the table, on operands of every dtype (and every cast), lowers to CUDA C
// that compiles: one program of all those kernels, so that it costs one NVRTC run.
TEST(Cuda, EveryElementwiseOpCompilesForEveryDtype) {
  SKIP_WITHOUT_NVRTC();
  const ScalarType dtypes[] = {kBool, kLong, kFloat, kDouble, kByte, kChar, kShort, kInt, kHalf, kBFloat16};
  std::vector<std::unique_ptr<ir::Node>> nodes;
  auto node = [&](ir::Op op, ScalarType t) {
    nodes.push_back(std::make_unique<ir::Node>());
    nodes.back()->op = op;
    nodes.back()->dtype = t;
    nodes.back()->shape = {7, 3};
    return nodes.back().get();
  };
  std::string program = cuda::prelude();
  int kernels = 0;
  for (int i = 0; i < ir::kOpCount; ++i) {
    const ir::Op op = ir::all_ops()[i];
    const ir::OpKind kind = ir::op_kind(op);
    const int arity = kind == ir::OpKind::Unary ? 1 : kind == ir::OpKind::Select ? 3 : 2;
    if (kind != ir::OpKind::Unary && kind != ir::OpKind::Binary && kind != ir::OpKind::Compare &&
        kind != ir::OpKind::Select)
      continue;
    for (ScalarType operand : dtypes)
      for (ScalarType result : dtypes) {
        // A result of another dtype only where ops make one: casts, comparisons (bool).
        if (kind == ir::OpKind::Compare ? result != kBool : op != ir::Op::Cast && result != operand) continue;
        fusion::Kernel k;
        k.kind = fusion::Kernel::Kind::Pointwise;
        k.domain = {7, 3};  // 2-D: the plain loop (a 1-D kernel's vector lanes would repeat each op)
        fusion::KernelNode kn{node(op, result), {}};
        for (int a = 0; a < arity; ++a) {
          const ScalarType t = kind == ir::OpKind::Select && a == 0 ? kBool : operand;
          k.reads.push_back(fusion::Read{node(ir::Op::Input, t), {3, 1}, 0});
          kn.args.push_back(~a);
        }
        k.nodes.push_back(kn);
        k.outputs = {0};
        program += kernel_text(cuda::kernel_source(k, true)).substr(std::string(cuda::kKernelMarker).size());
        ++kernels;
      }
  }
  EXPECT_GT(kernels, 150);
  const auto out = cuda::nvrtc_compile(program, "every_op.cu", 90, "every elementwise op");
  EXPECT_EQ(out.image.substr(0, 4),
            "\x7f"
            "ELF");
}

// A sample of the PTX checked by the toolkit's own ptxas, as a GPU machine's driver would take it.
TEST(Cuda, PtxasAcceptsThePtx) {
  SKIP_WITHOUT_NVRTC();
  const std::string ptxas = "/usr/local/cuda/bin/ptxas";
  if (!std::filesystem::exists(ptxas)) GTEST_SKIP() << "no " << ptxas;
  Captured c = random_program_kernels(12, 12);
  ASSERT_FALSE(c.order.empty());
  const auto dir = std::filesystem::temp_directory_path() / ("kiln_ptxas_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  int checked = 0;
  for (const auto& key : c.order) {
    if (checked == 4) break;
    const auto& s = c.sources.at(key);
    const auto out = cuda::nvrtc_compile(s.source, s.name + ".cu", 90, s.key);
    const auto ptx = dir / (s.name + ".ptx");
    std::ofstream(ptx) << out.ptx;
    const std::string cmd = ptxas + " -arch=sm_90 -v -o " + (dir / "out.cubin").string() + " " + ptx.string() + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string log;
    char buf[512];
    while (fgets(buf, sizeof buf, p)) log += buf;
    EXPECT_EQ(pclose(p), 0) << log;
    EXPECT_NE(log.find("registers"), std::string::npos) << log;
    ++checked;
  }
  std::filesystem::remove_all(dir);
}

// The kernel part of a source (the prelude aside), against tests/reference/<name>; with
// KILN_UPDATE_REFERENCE=1 the file is written instead.
void expect_reference(const std::string& name, const cuda::KernelSource& s) {
  const std::string kernel = kernel_text(s);
  const auto path = std::filesystem::path(KILN_TESTS_DIR) / "reference" / name;
  if (std::getenv("KILN_UPDATE_REFERENCE")) {
    std::ofstream(path) << kernel;
    return;
  }
  std::ifstream f(path);
  ASSERT_TRUE(f) << "missing " << path << " (KILN_UPDATE_REFERENCE=1 writes it)";
  std::stringstream expected;
  expected << f.rdbuf();
  EXPECT_EQ(kernel, expected.str()) << "generated source of " << name << " changed";
}

// The one kernel of `body`'s flushes of layout `layout`.
cuda::KernelSource only_kernel(const Captured& c, cuda::Layout layout) {
  std::vector<cuda::KernelSource> found;
  for (const auto& key : c.order)
    if (c.sources.at(key).layout == layout) found.push_back(c.sources.at(key));
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? cuda::KernelSource{} : found[0];
}

// The one library kernel of op `op` among `c`'s.
cuda::KernelSource library_kernel(const Captured& c, const std::string& op) {
  std::vector<cuda::KernelSource> found;
  for (const auto& key : c.order)
    if (key.rfind("L|" + op + ".", 0) == 0) found.push_back(c.sources.at(key));
  EXPECT_EQ(found.size(), 1u) << op;
  return found.empty() ? cuda::KernelSource{} : found[0];
}

TEST(Cuda, GeneratedSourcesMatchTheirReferences) {
  auto add = capture([] {
    auto a = torch::randn({100}), b = torch::randn({100});
    (void)(a + b).sum().item<float>();
  });
  expect_reference("cuda_add.txt", only_kernel(capture([] {
                                                 auto a = torch::randn({100}), b = torch::randn({100});
                                                 (void)(a + b).data_ptr<float>();
                                               }),
                                               cuda::Layout::Pointwise));
  expect_reference("cuda_sum.txt", only_kernel(add, cuda::Layout::SplitWhole));
  expect_reference("cuda_softmax.txt", only_kernel(capture([] {
                                                     auto x = torch::randn({4, 10});
                                                     (void)torch::softmax(x, 1).data_ptr<float>();
                                                   }),
                                                   cuda::Layout::BlockPerRow));
  expect_reference("cuda_index_add.txt", library_kernel(capture([] {
                                                          auto x = torch::randn({6, 3}, torch::requires_grad());
                                                          auto index = torch::tensor({1, 4, 1}, torch::kLong);
                                                          x.index_select(0, index).sum().backward();
                                                          (void)x.grad().data_ptr<float>();
                                                        }),
                                                        "IndexAdd"));
  expect_reference("cuda_argmax.txt", library_kernel(capture([] {
                                                       auto x = torch::randn({5, 7});
                                                       (void)x.argmax(1).data_ptr<int64_t>();
                                                     }),
                                                     "ArgMax"));
}

// A contiguous 1-D pointwise kernel moves its values 16 bytes at a time (float32: 4, float64: 2),
// once the kernel has checked alignment; the PTX has the vector accesses.
TEST(Cuda, ContiguousPointwiseKernelsUseVectorAccesses) {
  SKIP_WITHOUT_NVRTC();
  const std::pair<torch::Dtype, const char*> cases[] = {
      {torch::kFloat, ".v4.f32"}, {torch::kDouble, ".v2.f64"}, {torch::kHalf, ".v4.u16"}};
  for (const auto& [dtype, vector] : cases) {
    auto a = torch::randn({1001}).to(dtype), b = torch::randn({1001}).to(dtype);
    a.data_ptr(), b.data_ptr();  // computed before: the kernel reads them
    const cuda::KernelSource s = only_kernel(capture([&] { (void)(a * b + a).data_ptr(); }), cuda::Layout::Pointwise);
    const auto out = cuda::nvrtc_compile(s.source, "vector.cu", 90, s.key);
    EXPECT_NE(out.ptx.find(std::string("ld.global.nc") + vector), std::string::npos) << dtype;
    EXPECT_NE(out.ptx.find(std::string("st.global") + vector), std::string::npos) << dtype;
  }
}

// A second cache over the same folder loads what the first compiled; a damaged entry is logged
// and rebuilt; KILN_DUMP receives each compiled kernel's source.
TEST(Cuda, KernelCacheLoadsFromDiskAndRebuildsDamagedEntries) {
  SKIP_WITHOUT_NVRTC();
  const Config saved = config();
  const auto dir = std::filesystem::temp_directory_path() / ("kiln_cuda_cache_" + std::to_string(::getpid()));
  config().cache_dir = (dir / "cache").string();
  config().dump_dir = (dir / "dump").string();
  struct Counts {
    cuda::KernelCache::Counts first, second, third;
    std::vector<std::string> names;
  } counts;
  static std::function<void(const fusion::Kernel&)> check;
  check = [&](const fusion::Kernel& k) {
    const bool index32 = cuda::fits_int32_indices(k);
    cuda::KernelCache first(90);
    auto compiled = first.get(k, index32);
    EXPECT_EQ(first.get(k, index32), compiled);  // the second time from memory
    counts.first = first.counts();
    counts.names.push_back(compiled->name);
    cuda::KernelCache second(90);
    EXPECT_EQ(second.get(k, index32)->image, compiled->image);
    counts.second = second.counts();
    // Damage the entry's content: the third cache finds its checksum wrong and compiles again.
    for (const auto& f : std::filesystem::directory_iterator(second.disk().dir()))
      if (f.path().extension() == ".cubin") std::ofstream(f.path(), std::ios::binary | std::ios::trunc) << "garbage";
    cuda::KernelCache third(90);
    EXPECT_EQ(third.get(k, index32)->image, compiled->image);
    counts.third = third.counts();
  };
  on_kernel = &check;
  try {
    (void)capture([] {
      auto a = torch::randn({50});
      (void)(a.exp() * 2).data_ptr<float>();
    });
  } catch (...) {
    on_kernel = nullptr;
    throw;
  }
  on_kernel = nullptr;
  config() = saved;
  ASSERT_EQ(counts.names.size(), 1u);
  EXPECT_EQ(counts.first.compiled, 1);
  EXPECT_EQ(counts.first.in_memory, 1);
  EXPECT_EQ(counts.second.compiled, 0);
  EXPECT_EQ(counts.second.loaded, 1);
  EXPECT_EQ(counts.third.compiled, 1);
  EXPECT_TRUE(std::filesystem::exists(dir / "dump" / (counts.names[0] + ".cu")));
  std::filesystem::remove_all(dir);
}

// A sort's launch: a block per row; rows past one shared-memory tile take a workspace of 32 bytes
// per element and block, so long rows get fewer blocks (within 256 MiB, or one block).
TEST(Cuda, SortLaunchesBoundTheirWorkspace) {
  auto input = std::make_shared<ir::Node>();
  input->op = ir::Op::Input;
  input->dtype = kFloat;
  auto launch = [&](int64_t rows, int64_t length) {
    input->shape = {rows, length};
    ir::Node sort;
    sort.op = ir::Op::SortIndex;
    sort.dtype = kLong;
    sort.shape = input->shape;
    sort.ints = {1, 0};
    sort.inputs = {ir::Operand{input, ir::View{input->shape, {length, 1}, 0}}};
    fusion::Kernel k;
    k.kind = fusion::Kernel::Kind::Library;
    k.library_node = &sort;
    EXPECT_TRUE(cuda::has_cuda_source(k));
    EXPECT_TRUE(cuda::library_workspace(sort));
    return cuda::launch_dims(k, 132);
  };
  const cuda::LaunchDims small = launch(5000, 300), wide = launch(1000, 100000), single = launch(1, 1 << 24);
  EXPECT_EQ(small.grid, 132u * 8);
  EXPECT_EQ(small.workspace_bytes, 0u);  // rows within a tile stay in shared memory
  EXPECT_EQ(wide.grid, uint32_t((int64_t(256) << 20) / (32 * 100000)));
  EXPECT_EQ(wide.workspace_bytes, uint64_t(wide.grid) * 32 * 100000);
  EXPECT_EQ(single.grid, 1u);
  EXPECT_EQ(single.workspace_bytes, uint64_t(32) << 24);
}

}  // namespace
