// The generated CUDA kernels' meaning, checked without a GPU: each kernel's source is compiled
// as host C++ with a small emulation of CUDA's execution model (a block's threads as real
// threads, __syncthreads and warp shuffles as barriers, __shared__ as block-wide statics, blocks
// run one after another) and run on random programs, whose results must match the interpreter's.
// The index math, the folds across threads and blocks, and every op's lowering are checked so;
// the CUDA math library's accuracy and the hardware's memory model are not (a GPU check's work).
#include "cuda_emulation.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "codegen/arguments.h"
#include "codegen/backend.h"
#include "codegen/cuda/nvrtc.h"
#include "codegen/cuda/ops.h"
#include "codegen/cuda/source.h"
#include "flush_capture.h"
#include "library_program.h"
#include "random_program.h"
#include "runtime/config.h"

namespace {

using namespace kiln;
namespace cuda = kiln::codegen::cuda;

// Kernels compiled for the host: a first run of a workload collects their sources (learn), one
// host compile builds them all (build: the headers are parsed once), and a second run launches
// them (run).
class Emulator {
 public:
  // A folder of its own per emulator: dlopen returns the library already loaded from a path.
  Emulator()
      : dir_(std::filesystem::temp_directory_path() /
             ("kiln_cuda_emulation_" + std::to_string(::getpid()) + "_" + std::to_string(instances()++))) {
    std::filesystem::create_directories(dir_);
  }
  ~Emulator() { std::filesystem::remove_all(dir_); }

  int compiled = 0, launched = 0;
  std::set<std::string> library_ops;  // the ops of the library kernels learned
  std::string cuda_program;           // the kernels learned, as one CUDA program after the prelude

  // Records the sources of the partition's kernels and runs it on the interpreter.
  void learn(const fusion::Partition& partition) {
    for (const fusion::Kernel& k : partition.kernels) {
      if (!cuda::has_cuda_source(k)) continue;
      if (k.kind == fusion::Kernel::Kind::Library) library_ops.insert(ir::op_name(k.library_node->op));
      const cuda::KernelSource s = cuda::kernel_source(k, cuda::fits_int32_indices(k));
      if (!names_.emplace(s.key, s.name).second) continue;
      const size_t at = s.source.find(cuda::kKernelMarker);
      // Each in a namespace of its own: the index type's typedef differs between kernels.
      program_ += "namespace " + s.name + "_ns {\n" + s.source.substr(at) + "}\n" + wrapper(k, s, s.name);
      cuda_program += "namespace " + s.name + "_ns {\n" + s.source.substr(at) + "}\n";
      if (!s.init_name.empty()) {
        program_ += wrapper(k, s, s.init_name);
        inits_[s.key] = s.init_name;
      }
      ++compiled;
    }
    codegen::interpreter().run(partition);
  }

  void build() {
    const std::string base = (dir_ / "kernels").string();
    std::ofstream(base + ".cpp") << kHostCuda << cuda::prelude() << program_;
    const std::string cmd = "c++ -std=c++17 -O0 -w -shared -fPIC -o " + base + ".so " + base + ".cpp 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string log;
    char buf[512];
    while (p && fgets(buf, sizeof buf, p)) log += buf;
    KILN_CHECK(p && pclose(p) == 0, "host compile failed:\n", log.substr(0, 4000));
    lib_ = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    KILN_CHECK(lib_, "dlopen: ", dlerror());
    grid_ = reinterpret_cast<void (*)(unsigned, unsigned)>(dlsym(lib_, "kiln_host_grid"));
    block_ = reinterpret_cast<void (*)(unsigned)>(dlsym(lib_, "kiln_host_block"));
    thread_ = reinterpret_cast<void (*)(unsigned)>(dlsym(lib_, "kiln_host_thread"));
  }

  void run(const fusion::Partition& partition) {
    for (size_t i = 0; i < partition.kernels.size(); ++i) {
      const fusion::Kernel& k = partition.kernels[i];
      if (cuda::has_cuda_source(k))
        launch(k);
      else
        codegen::interpret(k);
      for (ir::Node* done : partition.release[i]) done->result.reset();
    }
  }

 private:
  // `extern "C" void <name>_run(void** a)`: the kernel called with its arguments from an array of
  // pointers to them.
  static std::string wrapper(const fusion::Kernel& k, const cuda::KernelSource& s, const std::string& function) {
    std::string call = "extern \"C\" void " + function + "_run(void** a) {\n  " + s.name + "_ns::" + function + "(";
    int n = 0;
    auto arg = [&](const std::string& type) {
      call += (n ? ", *(" : "*(") + type + "*)a[" + std::to_string(n) + "]";
      ++n;
    };
    if (k.kind == fusion::Kernel::Kind::Library) {  // source.h: inputs, scalars, output
      const ir::Node& n = *k.library_node;
      for (const auto& in : n.inputs) arg(std::string("const ") + cuda::storage_type(in.node->dtype) + "*");
      for (size_t i = 0; i < cuda::library_scalars(k).size(); ++i) arg("long long");
      arg(std::string(cuda::storage_type(n.dtype)) + "*");
      if (cuda::library_workspace(n)) arg("unsigned long long*");
      return call + ");\n}\n";
    }
    codegen::for_each_argument(k, [&](const codegen::KernelArgument& a) {
      using Kind = codegen::KernelArgument::Kind;
      switch (a.kind) {
        case Kind::Input:
          arg(std::string("const ") + cuda::storage_type(k.reads[size_t(a.read)].node->dtype) + "*");
          break;
        case Kind::Extent:
        case Kind::Offset:
        case Kind::Stride:
        case Kind::Int64Const: arg("long long"); break;
        case Kind::Float64Const: arg("double"); break;
        case Kind::Output: arg(std::string(cuda::storage_type(k.nodes[size_t(a.node)].node->dtype)) + "*"); break;
      }
    });
    if (s.layout == cuda::Layout::SplitWhole) {
      arg("unsigned long long*");
      arg("unsigned int*");
    }
    return call + ");\n}\n";
  }

  void launch(const fusion::Kernel& k) {
    const std::string key = cuda::cuda_key(k, cuda::fits_int32_indices(k));
    ASSERT_TRUE(names_.count(key)) << "a kernel the first run did not flush: " << key;
    auto run = reinterpret_cast<void (*)(void**)>(dlsym(lib_, (names_.at(key) + "_run").c_str()));
    ASSERT_NE(run, nullptr);
    union Scalar {
      long long i;
      double d;
      void* p;
    };
    std::vector<Scalar> values;
    values.reserve(64);
    std::vector<unsigned long long> library_workspace;
    if (k.kind == fusion::Kernel::Kind::Library) {
      ir::Node& n = *k.library_node;
      for (const auto& in : n.inputs) values.push_back(Scalar{}), values.back().p = in.node->result->data();
      for (int64_t v : cuda::library_scalars(k)) values.push_back(Scalar{}), values.back().i = v;
      n.result = make_buffer(size_t(n.numel()) * element_size(n.dtype));
      values.push_back(Scalar{});
      values.back().p = n.result->data();
      if (cuda::library_workspace(n)) {
        library_workspace.resize(cuda::launch_dims(k, 1).workspace_bytes / 8 + 1);
        values.push_back(Scalar{});
        values.back().p = library_workspace.data();
      }
    } else {
      codegen::for_each_argument(k, [&](const codegen::KernelArgument& a) {
        using Kind = codegen::KernelArgument::Kind;
        Scalar v{};
        switch (a.kind) {
          case Kind::Input: v.p = k.reads[size_t(a.read)].node->result->data(); break;
          case Kind::Extent: v.i = k.domain[size_t(a.dim)]; break;
          case Kind::Offset: v.i = k.reads[size_t(a.read)].offset; break;
          case Kind::Stride: v.i = k.reads[size_t(a.read)].strides[size_t(a.dim)]; break;
          case Kind::Int64Const: v.i = k.nodes[size_t(a.node)].node->int_scalar; break;
          case Kind::Float64Const: v.d = k.nodes[size_t(a.node)].node->scalar; break;
          case Kind::Output: {
            ir::Node& n = *k.nodes[size_t(a.node)].node;
            n.result = make_buffer(size_t(n.numel()) * element_size(n.dtype));
            v.p = n.result->data();
            break;
          }
        }
        values.push_back(v);
      });
    }
    // Small grids and blocks, so that grid-stride loops, several warps and several blocks all run.
    const cuda::Layout layout = cuda::layout_of(k);
    const unsigned blocks = layout == cuda::Layout::SplitWhole ? 3 : 2;
    const unsigned threads = layout == cuda::Layout::Pointwise || layout == cuda::Layout::ThreadPerRow ? 32 : 64;
    std::vector<unsigned long long> workspace(blocks * k.reduces.size() + 1);
    unsigned int block_count = 0;
    if (layout == cuda::Layout::SplitWhole) {
      values.push_back(Scalar{});
      values.back().p = workspace.data();
      values.push_back(Scalar{});
      values.back().p = &block_count;
    }
    std::vector<void*> args;
    for (auto& v : values) args.push_back(&v);
    grid_(blocks, threads);
    auto run_grid = [&](void (*function)(void**)) {
      for (unsigned b = 0; b < blocks; ++b) {
        block_(b);
        std::vector<std::thread> team;
        for (unsigned t = 0; t < threads; ++t)
          team.emplace_back([&, t] {
            thread_(t);
            function(args.data());
          });
        for (auto& t : team) t.join();
      }
    };
    if (inits_.count(key)) {  // a scatter's first launch: the base copied into the output
      auto init = reinterpret_cast<void (*)(void**)>(dlsym(lib_, (inits_.at(key) + "_run").c_str()));
      ASSERT_NE(init, nullptr);
      run_grid(init);
    }
    run_grid(run);
    EXPECT_EQ(block_count, 0u) << "the last block leaves the counter zero";
    ++launched;
  }

  static int& instances() {
    static int count = 0;
    return count;
  }

  std::filesystem::path dir_;
  std::map<std::string, std::string> names_;  // key -> function name
  std::map<std::string, std::string> inits_;  // key -> its first launch's function name, where it has one
  std::string program_;
  void* lib_ = nullptr;
  void (*grid_)(unsigned, unsigned) = nullptr;
  void (*block_)(unsigned) = nullptr;
  void (*thread_)(unsigned) = nullptr;
};

// Random programs (forward and backward, float32 and float64) through the emulated kernels match
// the interpreter.
TEST(Cuda, EmulatedKernelsMatchTheInterpreter) {
  if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler (c++)";
  Emulator emulator;
  const int programs = 16, structures = 16;
  std::vector<fuzz::Program> all;
  for (int i = 0; i < programs; ++i) {
    const uint64_t structure = uint64_t(i % structures);
    all.push_back(fuzz::generate(structure + 7000, uint64_t(i), 4 + int(structure % 7)));
    all.back().dtype = i % 3 == 2 ? kDouble : kFloat;
  }
  // Row kernels: softmax, log-softmax and layer norm, forward and backward.
  auto rows = [] {
    namespace F = torch::nn::functional;
    torch::manual_seed(1);
    auto x = torch::randn({5, 70}, torch::requires_grad());
    auto w = torch::randn({70}, torch::requires_grad());
    auto total = F::softmax(x, F::SoftmaxFuncOptions(1)).pow(2).sum() +
                 F::log_softmax(x, F::LogSoftmaxFuncOptions(1)).mean() +
                 F::layer_norm(x, F::LayerNormFuncOptions({70}).weight(w)).pow(3).sum();
    total.backward();
    std::vector<float> out{total.item<float>()};
    auto g = x.grad().contiguous();
    const float* d = g.data_ptr<float>();
    out.insert(out.end(), d, d + g.numel());
    return out;
  };
  // The first run on the interpreter gives the expected values and the kernels' sources.
  std::vector<fuzz::Result> expected;
  std::vector<float> expected_rows;
  flush_capture::with_partition_runner([&](const fusion::Partition& part) { emulator.learn(part); },
                                       [&] {
                                         for (const auto& p : all) expected.push_back(fuzz::run(p));
                                         expected_rows = rows();
                                       });
  emulator.build();
  int failures = 0;
  for (size_t i = 0; i < all.size() && failures < 3; ++i) {
    fuzz::Result actual;
    flush_capture::with_partition_runner([&](const fusion::Partition& part) { emulator.run(part); },
                                         [&] { actual = fuzz::run(all[i]); });
    const std::string diff = fuzz::compare(expected[i], actual, all[i].dtype);
    if (!diff.empty()) {
      ++failures;
      ADD_FAILURE() << "program " << i << " differs: " << diff << "\n" << all[i].to_string();
    }
  }
  std::vector<float> actual_rows;
  flush_capture::with_partition_runner([&](const fusion::Partition& part) { emulator.run(part); },
                                       [&] { actual_rows = rows(); });
  ASSERT_EQ(expected_rows.size(), actual_rows.size());
  for (size_t i = 0; i < expected_rows.size(); ++i)
    EXPECT_NEAR(actual_rows[i], expected_rows[i], 1e-4 * (1 + std::abs(expected_rows[i]))) << "element " << i;
  std::printf("[cuda emulation] %d kernels compiled for the host, %d launches\n", emulator.compiled, emulator.launched);
  EXPECT_GT(emulator.compiled, 10);
}

// Every library kernel with generated source (gathers, scatters, cat, view writes, arg-reductions, scans,
// sorts),
// on odd sizes, broadcast and non-contiguous operands, repeated indices, NaN and ties, float32 and
// float64: the emulated kernels match the interpreter.
TEST(Cuda, EmulatedLibraryKernelsMatchTheInterpreter) {
  if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler (c++)";
  Emulator emulator;
  const torch::Dtype dtypes[] = {torch::kFloat, torch::kDouble};
  std::vector<std::vector<double>> expected;
  flush_capture::with_partition_runner([&](const fusion::Partition& part) { emulator.learn(part); },
                                       [&] {
                                         for (auto t : dtypes) expected.push_back(library_program::run(t));
                                       });
  for (const char* op :
       {"IndexSelect", "Gather",    "IndexAdd",      "ScatterAdd",  "Cat",          "WriteView",   "AddView",
        "ArgMax",      "ArgMin",    "CumSum",        "CumProd",     "LogCumSumExp", "CumMaxIndex", "CumMinIndex",
        "SortIndex",   "TopKIndex", "KthValueIndex", "MedianIndex", "ModeIndex",    "SearchSorted"})
    EXPECT_TRUE(emulator.library_ops.count(op)) << op << " was not flushed as a library kernel";
  emulator.build();
  for (size_t i = 0; i < expected.size(); ++i) {
    std::vector<double> actual;
    flush_capture::with_partition_runner([&](const fusion::Partition& part) { emulator.run(part); },
                                         [&] { actual = library_program::run(dtypes[i]); });
    ASSERT_EQ(actual.size(), expected[i].size());
    const double tolerance = i == 0 ? 1e-4 : 1e-10;  // float atomics add in arrival order
    for (size_t j = 0; j < actual.size(); ++j) {
      if (std::isnan(actual[j]) && std::isnan(expected[i][j])) continue;  // scans carry NaN along
      EXPECT_NEAR(actual[j], expected[i][j], tolerance * (1 + std::abs(expected[i][j])))
          << "dtype " << i << " value " << j;
    }
  }
  EXPECT_GT(emulator.launched, 9);
}

// A program over one narrow dtype (int8 ... int32, uint8, float16, bfloat16): arithmetic that
// wraps or rounds, casts both ways, comparisons, where, reductions, bitwise ops on integers, and
// the library kernels that move values (gather, cat, view writes), each result widened to float64.
std::vector<double> narrow_program(torch::Dtype t) {
  torch::manual_seed(4);
  const bool integer = !kiln::is_floating(t);
  auto a = (torch::randn({6, 37}) * 60).to(t), b = (torch::randn({6, 37}) * 60).to(t);
  auto index = torch::tensor({3, 0, 36, 3}, torch::kLong);
  std::vector<torch::Tensor> outs = {a + b,
                                     a * b - a,
                                     a * b * 100,  // past int16: wraps for the narrower ones
                                     torch::maximum(a, b),
                                     torch::where(a > b, a, b),
                                     (a == b).to(t),
                                     a.to(torch::kFloat) * 0.5,
                                     a.sum(1),
                                     a.amax(0),
                                     a.to(torch::kLong) * 1000,
                                     torch::cat({a, b}, 1),
                                     a.index_select(1, index),
                                     -a.abs(),
                                     (a.to(torch::kDouble) / 3).to(t),
                                     a.reshape({-1}).narrow(0, 1, 201) * 2,  // misaligned: the plain loop
                                     a.reshape({-1}).narrow(0, 4, 201) - b.reshape({-1}).narrow(0, 8, 201)};
  if (integer) {
    outs.push_back(a.bitwise_and(b));
    outs.push_back(a.floor_divide(b + (b == 0).to(t)));
  } else {
    outs.push_back((a * 0.05).exp());
    outs.push_back(a.sqrt());
    outs.push_back(a.sum());
  }
  auto c = a.clone();
  c.narrow(1, 2, 5).copy_(b.narrow(1, 0, 5));
  outs.push_back(c);
  std::vector<double> values;
  for (const auto& o : outs) {
    const auto v = o.to(torch::kDouble).contiguous().to_vector<double>();
    values.insert(values.end(), v.begin(), v.end());
  }
  return values;
}

// The narrow dtypes' kernels: the emulated kernels match the interpreter (integers exactly, the
// reduced floats within a rounding of theirs), and NVRTC compiles them for sm_90.
TEST(Cuda, EmulatedNarrowDtypeKernelsMatchTheInterpreter) {
  if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler (c++)";
  Emulator emulator;
  const torch::Dtype dtypes[] = {torch::kByte, torch::kChar, torch::kShort,
                                 torch::kInt,  torch::kHalf, torch::kBFloat16};
  std::vector<std::vector<double>> expected;
  flush_capture::with_partition_runner([&](const fusion::Partition& part) { emulator.learn(part); },
                                       [&] {
                                         for (auto t : dtypes) expected.push_back(narrow_program(t));
                                       });
  emulator.build();
  for (size_t i = 0; i < expected.size(); ++i) {
    std::vector<double> actual;
    flush_capture::with_partition_runner([&](const fusion::Partition& part) { emulator.run(part); },
                                         [&] { actual = narrow_program(dtypes[i]); });
    ASSERT_EQ(actual.size(), expected[i].size());
    const double tolerance = kiln::is_floating(dtypes[i]) ? 1e-2 : 0;
    int failures = 0;
    for (size_t j = 0; j < actual.size() && failures < 5; ++j) {
      const double x = actual[j], y = expected[i][j];
      if ((std::isnan(x) && std::isnan(y)) || x == y || std::abs(x - y) <= tolerance * std::abs(y)) continue;
      ++failures;
      ADD_FAILURE() << "dtype " << dtypes[i] << " value " << j << ": " << x << " (emulated) vs " << y;
    }
  }
  std::printf("[cuda emulation] %d narrow-dtype kernels, %d launches\n", emulator.compiled, emulator.launched);
  EXPECT_GT(emulator.compiled, 30);
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << "no NVRTC: " << why;
  const auto out = cuda::nvrtc_compile(cuda::prelude() + emulator.cuda_program, "narrow.cu", 90, "narrow dtypes");
  EXPECT_EQ(out.image.substr(0, 4),
            "\x7f"
            "ELF");
}

}  // namespace
