// The Halide backend: partitions a plan into kernels, finds each kernel's compiled code (in
// memory, else on disk, else compiles it), and launches it on the buffers of the flush.
#include "codegen/backend.h"

#include <HalideRuntime.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "codegen/halide/arguments.h"
#include "codegen/halide/compiler.h"
#include "fusion/kernel.h"
#include "fusion/partition_cache.h"
#include "fusion/passes.h"
#include "runtime/config.h"
#include "runtime/disk_cache.h"
#include "runtime/log.h"
#include "runtime/parallel.h"
#include "runtime/stats.h"
#include "runtime/version.h"

namespace kiln::codegen {
namespace {

using fusion::Kernel;
using KernelFn = int (*)(void**);

halide_type_t storage_type(ScalarType t) {
  switch (t) {
    case kBool: return {halide_type_uint, 8, 1};
    case kLong: return {halide_type_int, 64, 1};
    case kFloat: return {halide_type_float, 32, 1};
    case kDouble: return {halide_type_float, 64, 1};
  }
  return {halide_type_float, 32, 1};
}

// A contiguous buffer over `data` with the given extents (outermost first), min 0 in every dim:
// kernels are compiled assuming so (lower.cpp constrains the inputs' mins and inner strides and
// two-output row kernels' output mins and extents; the target drops the checks): a cropped or
// offset buffer would give wrong results, not an error.
struct HalideBuffer {
  halide_buffer_t buf{};
  halide_dimension_t dims[kMaxDims]{};
  HalideBuffer(void* data, ScalarType t, const Shape& extents) {
    buf.host = static_cast<uint8_t*>(data);
    buf.type = storage_type(t);
    buf.dimensions = int(extents.size());
    buf.dim = dims;
    int32_t stride = 1;
    for (size_t i = 0; i < extents.size(); ++i) {  // Halide's dim 0 is the innermost
      dims[i] = {0, int32_t(extents[extents.size() - 1 - i]), stride, 0};
      stride *= int32_t(extents[extents.size() - 1 - i]);
    }
  }
};

std::string shell_quote(const std::string& s) { return "'" + s + "'"; }

// The kernels' parallel loops run on kiln's threads (runtime/parallel.h), which the BLAS pieces and
// the interpreter use too, not on the Halide runtime's own pool: its workers slept between kernels
// (a ~43 us wake-up on the VMs measured) and took a lock per task. The first failing task's code is
// the loop's result, as in Halide's pool.
using DoParFor = int (*)(void* user_context, halide_task_t task, int min, int size, uint8_t* closure);
int do_par_for_on_kiln_threads(void* user_context, halide_task_t task, int min, int size, uint8_t* closure) {
  struct Loop {
    halide_task_t task;
    void* user_context;
    int min;
    uint8_t* closure;
    std::atomic<int> result{0};
  } loop{task, user_context, min, closure};
  try {  // nothing may unwind through the kernel's frames
    parallel_for(
        size,
        [](void* ctx, int i) {
          auto& l = *static_cast<Loop*>(ctx);
          if (int r = l.task(l.user_context, l.min + i, l.closure)) {
            int none = 0;
            l.result.compare_exchange_strong(none, r);
          }
        },
        &loop);
  } catch (...) {
    return halide_error_code_generic_error;
  }
  return loop.result.load();
}

class HalideBackend final : public Backend {
 public:
  const char* name() const override { return "halide"; }

  void execute(fusion::Plan& plan) override {
    fusion::eliminate_common_subexpressions(plan);
    fusion::simplify(plan);
    const fusion::Partition& partition = fusion::partition_cached(plan);
    const std::vector<KernelFn> fns = prepare(partition);
    for (size_t i = 0; i < partition.kernels.size(); ++i) {
      run(partition.kernels[i], fns[i]);
      for (ir::Node* done : partition.release[i]) done->result.reset();
    }
    fusion::forget_computed_inputs(plan);
    stats_add(&Stats::nodes_executed, int64_t(plan.steps.size()));
  }

 private:
  // `fn` is the kernel's compiled function (see prepare); without one it runs on the interpreter.
  void run(const Kernel& k, KernelFn fn) {
    if (k.kind == Kernel::Kind::Library) {
      const bool trace = log().should_log(spdlog::level::trace);
      const auto start = trace ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      run_node(*k.library_node);
      if (trace)
        log().trace("library {:.1f} us {} {}", std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count(),
                    ir::op_name(k.library_node->op), detail::concat(k.library_node->shape));
      stats_add(&Stats::kernel_launches, 1);
      return;
    }
    if (!fn) return interpret(k);
    launch(k, fn);
  }

  // Halide indexes with int32: larger tensors go to the interpreter.
  static bool fits_int32(const Kernel& k) {
    if (numel_of(k.domain) > INT32_MAX) return false;
    for (const auto& r : k.reads)
      if (r.node->numel() > INT32_MAX) return false;
    return true;
  }

  // Runs the kernel's nodes one by one on the interpreter, keeping only its outputs and what was
  // in memory before (a constant that every kernel reading it computes may be another kernel's
  // output, already written: a library call reads it later).
  void interpret(const Kernel& k) {
    std::vector<bool> keep(k.nodes.size(), false);
    for (int o : k.outputs) keep[o] = true;
    for (size_t i = 0; i < k.nodes.size(); ++i) {
      if (k.nodes[i].node->computed())
        keep[i] = true;
      else
        run_node(*k.nodes[i].node);
    }
    for (size_t i = 0; i < k.nodes.size(); ++i)
      if (!keep[i]) k.nodes[i].node->result.reset();
    stats_add(&Stats::kernel_launches, int64_t(k.nodes.size()));
  }

  void launch(const Kernel& k, KernelFn fn) {
    std::vector<HalideBuffer> buffers;
    buffers.reserve(k.reads.size() + k.outputs.size());
    std::vector<int32_t> ints;
    ints.reserve(k.domain.size() + k.reads.size() * (1 + k.domain.size()));
    union ConstArgument {  // a Const's value as arguments.h passes it
      double floating;
      int64_t integer;
    };
    std::vector<ConstArgument> consts;
    std::vector<void*> argv;
    // The order of arguments.h.
    for (const auto& r : k.reads) {
      KILN_CHECK(r.node->result, "halide: kernel reads ", ir::op_name(r.node->op), " before it is computed (", k.key(), ")");
      buffers.emplace_back(r.node->result->data(), r.node->dtype, Shape{r.node->numel()});
    }
    for (auto& b : buffers) argv.push_back(&b.buf);
    for (auto e : k.domain) ints.push_back(int32_t(e));
    for (const auto& r : k.reads) {
      ints.push_back(int32_t(r.offset));
      for (auto s : r.strides)
        if (halide::stride_class(s) == 's') ints.push_back(int32_t(s));
    }
    for (auto& i : ints) argv.push_back(&i);
    for (const auto& kn : k.nodes)
      if (kn.node->op == ir::Op::Const) {
        ConstArgument& c = consts.emplace_back();
        if (kn.node->dtype == kLong)
          c.integer = kn.node->int_scalar;
        else
          c.floating = kn.node->scalar;
      }
    for (auto& c : consts) argv.push_back(&c);
    Shape row_extents;  // a Reduction's per-row outputs: the kept dims
    for (size_t d = 0; d < k.domain.size(); ++d)
      if (k.kind == Kernel::Kind::Reduction && !k.reduced[d]) row_extents.push_back(k.domain[d]);
    for (int o : k.outputs) {
      ir::Node& n = *k.nodes[o].node;
      n.result = make_buffer(n.numel() * element_size(n.dtype));
      buffers.emplace_back(n.result->data(), n.dtype, k.nodes[o].per_row ? row_extents : k.domain);
      argv.push_back(&buffers.back().buf);
    }
    if (numel_of(k.domain) == 0 && k.kind == Kernel::Kind::Pointwise) return;
    const bool trace = log().should_log(spdlog::level::trace);
    const auto start = trace ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    const int rc = fn(argv.data());
    if (trace)
      log().trace("launch {:.1f} us {} over {}",
                  std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count(), k.key(),
                  detail::concat(k.domain));
    KILN_CHECK(rc == 0, "halide: kernel failed with code ", rc, " (", k.key(), ")");
    stats_add(&Stats::kernel_launches, 1);
  }

  // Each kernel's function (null for a library call, a kernel too large for 32-bit indices, or one
  // that failed to build: see run), after loading or compiling at once the kernels of the flush
  // not yet in memory: a first step compiles some thirty kernels, each mostly on one thread (Halide
  // and LLVM, then the linker), and Halide compiles distinct pipelines concurrently. As many
  // threads as kernels run on (set_num_threads). Each key is looked up once per flush.
  std::vector<KernelFn> prepare(const fusion::Partition& partition) {
    const std::vector<Kernel>& kernels = partition.kernels;
    std::vector<KernelFn> fns(kernels.size(), nullptr);
    std::vector<std::pair<const Kernel*, const std::string*>> missing;
    std::vector<std::pair<size_t, size_t>> waiting;  // (kernel, its entry in missing)
    const bool background = config().compile_in_background;
    if (background) take_built_in_background();
    for (size_t i = 0; i < kernels.size(); ++i) {
      const Kernel& k = kernels[i];
      if (k.kind == Kernel::Kind::Library || !fits_int32(k)) continue;
      const std::string& key = partition.keys[i];
      if (auto it = loaded_.find(key); it != loaded_.end()) {
        stats_add(&Stats::kernel_cache_hits, 1);
        fns[i] = it->second;
        continue;
      }
      if (background && !cache().find(key, ".so")) {
        if (compile_in_background(k, key)) continue;  // interpreted (null) until built
        fns[i] = loaded_[key];
        continue;
      }
      size_t m = 0;
      while (m < missing.size() && *missing[m].second != key) ++m;
      if (m == missing.size())
        missing.emplace_back(&k, &key);
      else
        stats_add(&Stats::kernel_cache_hits, 1);  // built once for this flush, then found
      waiting.emplace_back(i, m);
    }
    if (missing.empty()) return fns;
    const size_t workers = std::min<size_t>(missing.size(), std::max(1, get_num_threads()));
    log().debug("loading or compiling {} kernels on {} threads", missing.size(), workers);
    // With an empty cache the shared Halide runtime is built too: as the first job, beside the
    // kernels (they need it only to be loaded, and wait for it there).
    const size_t first = runtime_ready_ ? 1 : 0;
    std::vector<KernelFn> built(missing.size(), nullptr);
    struct Compiling {
      HalideBackend* backend;
      const decltype(missing)& jobs;
      std::vector<KernelFn>& built;
      std::atomic<size_t> next;
    } compiling{this, missing, built, {first}};
    // `workers` iterations, each taking the next job until none is left: jobs differ in length.
    parallel_for(
        int(workers),
        [](void* ctx, int) {
          auto& c = *static_cast<Compiling*>(ctx);
          for (size_t i; (i = c.next.fetch_add(1)) < c.jobs.size() + 1;) {
            if (i == 0)
              c.backend->ensure_runtime_or_log();
            else
              c.built[i - 1] = c.backend->load_or_build_or_null(*c.jobs[i - 1].first, *c.jobs[i - 1].second);
          }
        },
        &compiling);
    for (size_t m = 0; m < missing.size(); ++m) loaded_[*missing[m].second] = built[m];
    for (auto [i, m] : waiting) fns[i] = built[m];
    return fns;
  }

  // Background compilation (Config::compile_in_background): background tasks (runtime/parallel.h)
  // take kernels from a queue and leave what they built for the next flush to take. A job holds a
  // copy of its kernel with nodes of its own: the flush's nodes are freed before the job runs.
  //
  // At exit the workers are stopped (each finishes the kernel it is building) by a handler that
  // must run before the destructors of every static a compilation uses, Halide's and LLVM's
  // function-local ones included, which come to exist during the first compilations: so the
  // first kernel is compiled on the calling thread before any worker starts (a process exiting
  // while that first build ran on a worker aborted in LLVM), and the handler is registered again
  // after each build (handlers run in the reverse order of registration; a second run is a no-op).
  struct Job {
    std::string key;
    Kernel kernel;
    std::vector<ir::NodePtr> nodes;  // what kernel's nodes and reads point to
  };
  static void register_stop_at_exit() {
    std::atexit([] { static_cast<HalideBackend&>(halide_backend()).stop_background(); });
  }
  // Whether `k` is left to the workers; false: it was built here, at once (the first one).
  bool compile_in_background(const Kernel& k, const std::string& key) {
    std::lock_guard<std::mutex> lock(background_mutex_);
    if (!background_started_) {
      loaded_[key] = load_or_build_or_null(k, key);
      register_stop_at_exit();
      background_started_ = true;
      return false;
    }
    if (!submitted_.insert(key).second) return true;
    Job job{key, k, {}};
    auto own = [&](ir::Node* n) {
      auto copy = std::make_shared<ir::Node>();
      copy->op = n->op;
      copy->dtype = n->dtype;
      copy->shape = n->shape;
      copy->ints = n->ints;
      copy->scalar = n->scalar;
      copy->int_scalar = n->int_scalar;
      job.nodes.push_back(copy);
      return copy.get();
    };
    for (auto& kn : job.kernel.nodes) kn.node = own(kn.node);
    for (auto& r : job.kernel.reads) r.node = own(r.node);
    job.kernel.library_node = nullptr;
    queue_.push_back(std::move(job));
    background_.run([this] { build_one_in_background(); });
    return true;
  }
  // One background task per job queued: it builds the job at the front of the queue.
  void build_one_in_background() {
    Job job;
    {
      std::lock_guard<std::mutex> lock(background_mutex_);
      if (stopping_ || queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    KernelFn fn = load_or_build_or_null(job.kernel, job.key);
    register_stop_at_exit();
    std::lock_guard<std::mutex> lock(background_mutex_);
    built_.emplace_back(job.key, fn);
  }
  void take_built_in_background() {
    std::lock_guard<std::mutex> lock(background_mutex_);
    for (auto& [key, fn] : built_) loaded_[key] = fn;
    built_.clear();
  }
  void stop_background() {
    {
      std::lock_guard<std::mutex> lock(background_mutex_);
      stopping_ = true;
    }
    background_.wait();
  }

  // A kernel that cannot be built is logged and runs on the interpreter (null).
  KernelFn load_or_build_or_null(const Kernel& k, const std::string& key) {
    try {
      return load_or_build(k, key);
    } catch (const Error& e) {
      log().error("{}; running this kernel on the interpreter", e.what());
      return nullptr;
    }
  }

  KernelFn load_or_build(const Kernel& k, const std::string& key) {
    const std::string name = "kiln_" + std::to_string(fnv1a64(key.data(), key.size()));
    if (auto path = cache().find(key, ".so")) {
      ensure_runtime();
      if (KernelFn fn = open(*path, name)) {
        stats_add(&Stats::kernels_loaded, 1);
        log().debug("loaded kernel {} from {}", name, *path);
        return fn;
      }
      log().warn("cache entry {} could not be loaded; rebuilding it", *path);
      std::filesystem::remove(*path);
    }
    const auto start = std::chrono::steady_clock::now();
    const std::string object = cache().temp_path(".o"), shared = cache().temp_path(".so");
    const char* dump = std::getenv("KILN_DUMP");
    if (dump) std::filesystem::create_directories(dump);
    halide::compile_kernel_object(k, name, object, dump ? dump : "");
    link(object, shared);
    const std::string path = cache().store(key, ".so", shared);
    ensure_runtime();
    KernelFn fn = open(path, name);
    KILN_CHECK(fn, "halide: could not load the kernel just built at ", path, ": ", dlerror());
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    stats_add(&Stats::kernels_compiled, 1);
    stats_add(&Stats::compile_ms, ms);
    log().debug("compiled kernel {} in {} ms: {}", name, ms, key);
    return fn;
  }

  // By the linker itself: through the c++ driver a link took ~50 ms of a kernel's ~200 (start-up
  // files and libraries a kernel does not need), ~15 ms so. The Halide runtime's symbols resolve
  // when the kernel is loaded (ensure_runtime loads it first); a kernel calling libm (erf, log1p)
  // names libm itself. KILN_CXX links through that C++ driver instead.
  static void link(const std::string& object, const std::string& shared) {
    const char* cxx = std::getenv("KILN_CXX");
    const std::string cmd = (cxx ? std::string(cxx) + " -shared" : std::string("ld -shared --as-needed")) + " -o " +
                            shell_quote(shared) + " " + shell_quote(object) + " -lm 2>&1";
    const int rc = std::system(cmd.c_str());
    std::filesystem::remove(object);
    KILN_CHECK(rc == 0, "halide: linking a kernel failed (", cmd, " exited with ", rc, ")");
  }

  static KernelFn open(const std::string& path, const std::string& name) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return nullptr;
    return reinterpret_cast<KernelFn>(dlsym(handle, (name + "_argv").c_str()));
  }

  // Kernels are built without the Halide runtime; one shared copy is loaded before any of them,
  // globally. Compiling threads call this too: the first builds it, the others wait for it.
  void ensure_runtime() {
    std::lock_guard<std::mutex> lock(runtime_mutex_);
    if (runtime_ready_) return;
    if (load_runtime(prebuilt_runtime())) return;
    const std::string key = "halide-runtime";
    std::string path;
    if (auto found = cache().find(key, ".so")) {
      path = *found;
    } else {
      const std::string object = cache().temp_path(".o"), shared = cache().temp_path(".so");
      halide::compile_runtime_object(object);
      link(object, shared);
      path = cache().store(key, ".so", shared);
    }
    KILN_CHECK(load_runtime(path), "halide: could not load its runtime from ", path, ": ", dlerror());
  }
  bool load_runtime(const std::string& path) {
    void* runtime = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!runtime) return false;
    auto set_do_par_for = reinterpret_cast<DoParFor (*)(DoParFor)>(dlsym(runtime, "halide_set_custom_do_par_for"));
    KILN_CHECK(set_do_par_for, "halide: its runtime at ", path, " has no halide_set_custom_do_par_for");
    set_do_par_for(&do_par_for_on_kiln_threads);
    runtime_ready_ = true;
    return true;
  }
  // The runtime built with kiln (CMake target kiln_halide_runtime), if it was built on this CPU
  // (KILN_PREBUILT_RUNTIME=0 ignores it: the cache tests build one as another machine would).
  static std::string prebuilt_runtime() {
#ifdef KILN_PREBUILT_RUNTIME_DIR
    if (const char* use = std::getenv("KILN_PREBUILT_RUNTIME"); use && std::string(use) == "0") return "";
    const std::string dir = KILN_PREBUILT_RUNTIME_DIR;
    std::string cpu;
    if (std::ifstream(dir + "/cpu.txt") >> cpu && cpu == halide::host_cpu_id() &&
        std::filesystem::exists(dir + "/libkiln_halide_runtime.so"))
      return dir + "/libkiln_halide_runtime.so";
#endif
    return "";
  }
  // In the compiling pool: a failure is left for the kernels to report (they call ensure_runtime).
  void ensure_runtime_or_log() {
    try {
      ensure_runtime();
    } catch (const Error& e) {
      log().error("{}", e.what());
    }
  }

  const DiskCache& cache() {
    static const DiskCache c("kiln-" + std::string(version()) + "-" + halide::compiler_revision() + "-halide14-" +
                             halide::host_cpu_id());
    return c;
  }

  std::unordered_map<std::string, KernelFn> loaded_;
  std::mutex background_mutex_;  // guards the background state below
  std::deque<Job> queue_;
  std::unordered_set<std::string> submitted_;
  std::vector<std::pair<std::string, KernelFn>> built_;  // not yet in loaded_
  BackgroundTasks background_;                           // the builds of queue_'s jobs
  bool background_started_ = false;
  bool stopping_ = false;
  std::mutex runtime_mutex_;
  std::atomic<bool> runtime_ready_{false};
};

}  // namespace

Backend& halide_backend() {
  static HalideBackend backend;
  return backend;
}

}  // namespace kiln::codegen
