#include "codegen/halide/tune.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "codegen/halide/compiler.h"
#include "codegen/halide/kernel_cache.h"
#include "codegen/halide/kernel_text.h"
#include "codegen/halide/schedule_params.h"
#include "codegen/halide/specialize.h"
#include "runtime/config.h"
#include "runtime/dtype.h"
#include "runtime/log.h"
#include "runtime/stats.h"

namespace kiln::codegen::halide {
namespace {

using fusion::Kernel;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Candidates timed again against the hand schedule, interleaved.
constexpr size_t kFinalists = 3;
// Nodes from which a kernel's candidates leave its code's size as it is (tune_candidates).
constexpr size_t kLargeKernelNodes = 100;

// "reduction 256x[512], 14 nodes": the kind, the domain (reduced dims in brackets).
std::string describe(const Kernel& k) {
  std::ostringstream os;
  os << (k.row_kernel() ? "row" : k.kind == Kernel::Kind::Reduction ? "reduction" : "pointwise") << " ";
  for (size_t d = 0; d < k.domain.size(); ++d) {
    const bool reduced = k.kind == Kernel::Kind::Reduction && k.reduced[d];
    os << (d ? "x" : "") << (reduced ? "[" : "") << k.domain[d] << (reduced ? "]" : "");
  }
  os << ", " << k.nodes.size() << " nodes";
  return os.str();
}

// Runs `fn` on k's inputs and takes its outputs away from the nodes (the real launch comes later).
std::vector<BufferPtr> run_detached(const Kernel& k, KernelFn fn) {
  launch(k, fn);
  std::vector<BufferPtr> outputs;
  for (int o : k.outputs) outputs.push_back(std::move(k.nodes[size_t(o)].node->result));
  for (int o : k.outputs) k.nodes[size_t(o)].node->result.reset();
  return outputs;
}

double element(const void* data, ScalarType t, int64_t i) {
  switch (t) {
    case kFloat: return static_cast<const float*>(data)[i];
    case kDouble: return static_cast<const double*>(data)[i];
    case kHalf: return half_bits_to_float(static_cast<const uint16_t*>(data)[i]);
    case kBFloat16: return bfloat16_bits_to_float(static_cast<const uint16_t*>(data)[i]);
    case kBool:
    case kLong:
    case kByte:
    case kChar:
    case kShort:
    case kInt: break;
  }
  return 0;
}

// Whether a candidate's outputs are the hand schedule's: integers and bools exactly, floats within
// what another order of a sum's additions changes (relative to the output's largest value).
bool same_outputs(const Kernel& k, const std::vector<BufferPtr>& hand, const std::vector<BufferPtr>& got,
                  std::string& why) {
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const ir::Node& n = *k.nodes[size_t(k.outputs[o])].node;
    const size_t bytes = std::min(hand[o]->bytes(), got[o]->bytes());
    if (!is_floating(n.dtype)) {
      if (std::memcmp(hand[o]->data(), got[o]->data(), bytes) != 0) {
        why = "output " + std::to_string(o) + " differs";
        return false;
      }
      continue;
    }
    const int64_t count = int64_t(bytes / element_size(n.dtype));
    const double rtol = n.dtype == kDouble ? 1e-9 : n.dtype == kFloat ? 1e-4 : 2e-2;
    double scale = 0;
    for (int64_t i = 0; i < count; ++i)
      if (const double v = std::abs(element(hand[o]->data(), n.dtype, i)); std::isfinite(v)) scale = std::max(scale, v);
    for (int64_t i = 0; i < count; ++i) {
      const double a = element(hand[o]->data(), n.dtype, i), b = element(got[o]->data(), n.dtype, i);
      const bool same = std::isnan(a)   ? std::isnan(b)
                        : std::isinf(a) ? a == b
                                        : std::abs(a - b) <= rtol * (std::abs(a) + 0.1 * scale) + 1e-30;
      if (!same) {
        why = "output " + std::to_string(o) + " element " + std::to_string(i) + " is " + std::to_string(b) +
              " where the hand schedule gives " + std::to_string(a);
        return false;
      }
    }
  }
  return true;
}

// The median of `runs` timed launches, microseconds (outputs dropped).
double median_us(const Kernel& k, KernelFn fn, int runs) {
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    run_detached(k, fn);
    us.push_back(seconds_since(start) * 1e6);
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

// Float32 lanes of the target's vector (compiler_target names its features).
int native_lanes() {
  static const int lanes = compiler_target().find("avx512") != std::string::npos ? 16 : 8;
  return lanes;
}

}  // namespace

// Each of the hand schedule's parameters varied alone, then Halide's autoschedulers, taken in
// turns (the first value of each, then the second of each, ...), so that a kernel whose budget
// compiles a few candidates still tries every kind.
std::vector<ScheduleChoice> tune_candidates(const Kernel& k) {
  const int native = native_lanes();
  std::vector<std::vector<ScheduleChoice>> kinds;
  auto vary = [&](const std::vector<int>& values, auto set) {
    kinds.emplace_back();
    for (int v : values) {
      ScheduleChoice c;
      set(c.params, v);
      // The hand schedule shifts a parallel chunk inwards only above serial_below elements.
      c.params.serial_below = std::max(c.params.serial_below, c.params.task_elements);
      c.params = effective_params(k, c.params, native);
      if (!c.is_hand()) kinds.back().push_back(c);
    }
  };
  // A kernel this large compiles for tens of seconds by hand (the Adam step's of 137 and 138 nodes),
  // and wider vectors or an autoscheduler's fused loops take longer still: it tries only what
  // leaves the code's size as it is (grains, serial thresholds) or narrower vectors.
  const bool large = k.nodes.size() >= kLargeKernelNodes;
  // Half the native vector where that is 8 lanes or more (AVX-512): Adam's updates (a square root
  // and two divisions an element) ran 1.3-1.4x faster in 8 lanes than in the hand's 16.
  std::vector<int> lanes;
  if (!large) lanes = {2 * native, native, std::min(4 * native, 32)};
  if (native >= 16) lanes.push_back(native / 2);
  vary(lanes, [](ScheduleParams& p, int v) { p.element_lanes = v; });
  vary({1 << 12, 1 << 16, 1 << 11, 1 << 15, 1 << 13, 1 << 17}, [](ScheduleParams& p, int v) { p.task_elements = v; });
  vary({1 << 14, 1 << 18, 1 << 20}, [](ScheduleParams& p, int v) { p.serial_below = v; });
  vary({native / 2, std::min(2 * native, 32)}, [](ScheduleParams& p, int v) { p.tile = v; });  // transposing kernels
  // Batches of transposes (a permute of the two innermost dims, made contiguous), which the hand
  // schedule reads in gathered rows; on AVX-512, which masks loads and stores, short rows (an
  // image's 14 or 28) in one masked vector, not two shifted ones.
  vary({native, native / 2, std::min(2 * native, 32)}, [](ScheduleParams& p, int v) { p.tiles = v; });
  if (native >= 16) vary({1}, [](ScheduleParams& p, int v) { p.masked_rows = v; });  // short rows (14, 28)
  vary({1, 4}, [](ScheduleParams& p, int v) { p.reduction_vectors = v; });
  vary({4096, 256}, [](ScheduleParams& p, int v) { p.chunk_steps = v; });
  vary({4, 16, 2}, [](ScheduleParams& p, int v) { p.column_vectors = v; });
  vary({512, 8192}, [](ScheduleParams& p, int v) { p.column_run = v; });
  kinds.emplace_back();
  // Adams2019 also sampling its search at random (dropout 50, one beam): on the CNN's batch-norm
  // reductions its samples found 1.4-2x where its beam search and kiln's parameters found less.
  static const std::vector<std::pair<const char*, int>> autoschedulers = {
      {"Adams2019", 0}, {"Mullapudi2016", 0}, {"Adams2019", 1}, {"Li2018", 0},
      {"Adams2019", 2}, {"Adams2019", 3},     {"Adams2019", 4}};
  for (const auto& [name, seed] : large ? decltype(autoschedulers){} : autoschedulers) {
    ScheduleChoice c;
    c.kind = ScheduleChoice::Kind::Auto;
    c.autoscheduler = name;
    if (seed > 0) {
      c.dropout = 50;
      c.seed = seed;
    }
    kinds.back().push_back(c);
  }
  std::vector<ScheduleChoice> out;
  for (size_t i = 0;; ++i) {
    bool more = false;
    for (const auto& kind : kinds) {
      more |= i < kind.size();
      if (i < kind.size() &&
          std::none_of(out.begin(), out.end(), [&](const auto& o) { return o.text() == kind[i].text(); }))
        out.push_back(kind[i]);
    }
    if (!more) break;
  }
  return out;
}

namespace {

struct Built {
  ScheduleChoice choice;
  bool general = false;  // the general kernel of a size-specialized one (specialize.h), its own key
  std::string key;
  KernelCache::Candidate candidate;
  bool ok = false;
  std::string error;
  double compile_s = 0;
  double us = 0;  // its median alone

  std::string name() const { return general ? kGeneralSchedule : choice.text(); }
};

// Compiles the candidates, `jobs` at once, starting none after `stop_starting`; one whose compile
// or first run exceeds its limit (KernelCache::build_candidate) counts as failed.
void compile_all(const Kernel& k, std::vector<Built>& built, int jobs, Clock::time_point stop_starting,
                 const TuneOptions& options) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; Clock::now() < stop_starting && (i = next.fetch_add(1)) < built.size();) {
      Built& b = built[i];
      const auto start = Clock::now();
      try {
        if (b.general) {  // the kernel full batches run: into the kernel cache, as they would
          b.candidate.fn = kernel_cache().load_or_build_or_null(general_kernel(k), b.key);
          KILN_CHECK(b.candidate.fn, "the general kernel did not build");
        } else {
          b.candidate =
              kernel_cache().build_candidate(k, b.key, b.choice.text(), options.compile_limit_s, options.run_limit_s);
        }
        b.ok = true;
      } catch (const Error& e) {
        b.error = e.what();
      }
      b.compile_s = seconds_since(start);
    }
  };
  std::vector<std::thread> workers;
  for (int j = 1; j < jobs; ++j) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
}

std::mutex g_mutex;  // what follows, and the tuned kernels by key
std::function<void(const TuneProgress&)> g_progress;
std::function<void(std::vector<BufferPtr>&)> g_candidate_hook;
double g_margin = TuneOptions().margin, g_below_us = TuneOptions().below_us;
std::set<std::string> g_seen;  // key and bucket of each kernel recorded or tuned in this process
int g_done = 0;
struct TunedFn {
  std::string bucket;
  KernelFn fn;  // null: the hand schedule
};
std::unordered_map<std::string, std::vector<TunedFn>> g_tuned;

void remember_tuned(const std::string& key, const std::string& bucket, KernelFn fn) {
  auto& v = g_tuned[key];
  for (auto& t : v)
    if (t.bucket == bucket) {
      t.fn = fn;
      return;
    }
  v.push_back({bucket, fn});
}

void print_progress(const TuneProgress& p) {
  const TuneRecord& r = p.record;
  std::fprintf(stderr, "tune [%d] %s (%s): hand %.1f us, %s %.1f us (%.2fx), %d candidates in %.1f s\n", p.done,
               r.kernel.c_str(), r.bucket.c_str(), r.hand_us,
               r.tuned() ? r.schedule.c_str() : "kept the hand schedule,", r.tuned_us,
               r.hand_us / std::max(r.tuned_us, 1e-9), r.candidates, r.seconds);
}

}  // namespace

TuneRecord tune_kernel(const Kernel& k, const std::string& key, KernelFn hand, const TuneOptions& options) {
  const auto start = Clock::now();
  // At sizes that specialize it, the flush may have given the general kernel (specialize.h).
  if (size_specialized(k)) hand = kernel_cache().load_or_build_or_null(k, key);
  KILN_CHECK(hand, "tune: the hand-scheduled kernel did not build");
  TuneRecord record;
  record.key = key;
  record.bucket = size_bucket(k);
  record.kernel = describe(k);
  record.schedule = "hand";
  const std::vector<BufferPtr> reference = run_detached(k, hand);
  run_detached(k, hand);  // warm
  const double hand_us = median_us(k, hand, 5);
  record.hand_us = record.tuned_us = hand_us;
  if (hand_us < options.below_us) {  // a launch's own cost: no schedule would show
    if (size_specialized(k)) {       // nor would the specialization: the general kernel serves
      record.schedule = kGeneralSchedule;
      if (KernelFn general = kernel_cache().load_or_build_or_null(general_kernel(k), general_kernel(k).key()))
        record.tuned_us = median_us(k, general, 5);
    }
    record.seconds = seconds_since(start);
    tuning_db().store(record);
    stats_add(&Stats::kernels_tuned, 1);
    return record;
  }
  std::vector<Built> built;
  // A size-specialized kernel is measured against its general kernel too: kGeneralSchedule is
  // stored unless the specialization is faster by the margin.
  if (size_specialized(k)) {
    Built general;
    general.general = true;
    general.key = general_kernel(k).key();
    built.push_back(std::move(general));
  }
  // A candidate may compile for the limit; a large kernel's (its candidates only vary what leaves
  // the code's size as it is) for twice as long as its hand schedule took here where that is
  // longer (the Adam step's kernels of 137 and 138 nodes on a loaded machine).
  TuneOptions limits = options;
  if (k.nodes.size() >= kLargeKernelNodes)
    limits.compile_limit_s = std::max(options.compile_limit_s, 2 * kernel_cache().compile_seconds(key));
  std::string names;
  for (const ScheduleChoice& c : tune_candidates(k)) {
    built.push_back({c, false, tuned_kernel_key(key, record.bucket, c.text()), {}, false, "", 0, 0});
    names += (names.empty() ? "" : "; ") + c.text();
  }
  log().debug("tune: {} candidates for {}: {}", built.size(), record.kernel, names);
  // Half the budget compiles; the rest checks and times, first alone, then the best interleaved.
  const double budget = std::max(options.seconds, 0.05);
  compile_all(k, built, std::max(1, options.jobs),
              start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget * 0.5)), limits);
  // Each compiled candidate gets runs worth a share of a quarter of the budget (3 to 50).
  size_t compiled = 0;
  for (const Built& b : built) compiled += b.ok;
  const int runs =
      int(std::clamp(budget * 0.25 / std::max<size_t>(compiled, 1) / std::max(hand_us * 1e-6, 1e-7), 3.0, 50.0));
  std::vector<Built*> passed;
  // Checks a built candidate against the hand schedule's outputs and times it alone.
  auto check_and_time = [&](Built& b) {
    if (!b.ok) {
      record.failed += b.error.empty() ? 0 : 1;  // no error: never started (out of time)
      if (!b.error.empty()) log().debug("tune: {} failed for {}: {}", b.name(), record.kernel, b.error);
      return;
    }
    ++record.candidates;
    try {
      std::vector<BufferPtr> outputs = run_detached(k, b.candidate.fn);
      if (options.after_candidate_run) options.after_candidate_run(outputs);
      std::string why;
      if (!same_outputs(k, reference, outputs, why)) {
        ++record.rejected;
        log().warn("tune: rejected {} for {}: {}", b.name(), record.kernel, why);
        return;
      }
      run_detached(k, b.candidate.fn);  // warm
      b.us = median_us(k, b.candidate.fn, runs);
      log().debug("tune: {} {:.1f} us (hand {:.1f}) for {}", b.name(), b.us, hand_us, record.kernel);
      passed.push_back(&b);
    } catch (const Error& e) {
      ++record.failed;
      log().warn("tune: {} failed to run for {}: {}", b.name(), record.kernel, e.what());
    }
  };
  for (Built& b : built) check_and_time(b);
  // Then the parameters that won alone, combined: all of them (the best candidate's values first),
  // and the best with each of the next few, which leaves out values that clash with it.
  std::sort(passed.begin(), passed.end(), [](const Built* a, const Built* b) { return a->us < b->us; });
  std::vector<ScheduleParams> winners, combined;
  for (const Built* b : passed)
    if (!b->general && b->choice.kind == ScheduleChoice::Kind::Params && b->us < hand_us)
      winners.push_back(b->choice.params);
  auto combine = [&](ScheduleParams p) {
    p.serial_below = std::max(p.serial_below, p.task_elements);
    p = effective_params(k, p, native_lanes());
    const auto same = [&](const Built& b) {
      return !b.general && b.choice.kind == ScheduleChoice::Kind::Params && b.choice.params == p;
    };
    if (p != ScheduleParams{} && std::none_of(built.begin(), built.end(), same) &&
        std::find(combined.begin(), combined.end(), p) == combined.end())
      combined.push_back(p);
  };
  ScheduleParams together;
  int merged = 0;
  for (const ScheduleParams& w : winners) merged += together.merge(w);
  if (merged >= 2) combine(together);
  for (size_t i = 1; i < winners.size() && i <= 3; ++i)
    if (ScheduleParams pair = winners[0]; pair.merge(winners[i])) combine(pair);
  std::vector<Built> second(seconds_since(start) < budget * 0.6 ? combined.size() : 0);
  for (size_t i = 0; i < second.size(); ++i) {
    second[i].choice.params = combined[i];
    second[i].key = tuned_kernel_key(key, record.bucket, second[i].choice.text());
  }
  compile_all(k, second, std::max(1, options.jobs),
              start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget * 0.75)),
              limits);
  for (Built& b : second) check_and_time(b);
  std::sort(passed.begin(), passed.end(), [](const Built* a, const Built* b) { return a->us < b->us; });
  const auto general = std::find_if(passed.begin(), passed.end(), [](const Built* b) { return b->general; });
  Built* general_built = general == passed.end() ? nullptr : *general;
  if (general_built) passed.erase(general);
  if (passed.size() > kFinalists) passed.resize(kFinalists);
  while (!passed.empty() && passed.back()->us >= hand_us * std::max(options.margin, 1.0)) passed.pop_back();
  if (general_built) passed.push_back(general_built);  // a finalist however it did alone

  // The finalists and the hand schedule in turns, rounds of a few runs each, until the budget is
  // spent (5 to 30 rounds); each finalist's figure is its median ratio to the hand schedule.
  if (!passed.empty()) {
    std::vector<std::vector<double>> ratios(passed.size()), times(passed.size());
    std::vector<double> hand_times;
    for (int round = 0; round < 30 && (round < 5 || seconds_since(start) < budget); ++round) {
      const double h = median_us(k, hand, 3);
      hand_times.push_back(h);
      for (size_t f = 0; f < passed.size(); ++f) {
        times[f].push_back(median_us(k, passed[f]->candidate.fn, 3));
        ratios[f].push_back(times[f].back() / h);
      }
    }
    auto median = [](std::vector<double> v) {
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      return v[v.size() / 2];
    };
    size_t best = passed.size();
    for (size_t f = 0; f < passed.size(); ++f)
      if (!passed[f]->general && (best == passed.size() || median(ratios[f]) < median(ratios[best]))) best = f;
    record.hand_us = median(hand_times);
    record.tuned_us = record.hand_us;
    // Faster by the margin both round by round (the median ratio) and overall (the median times):
    // on a busy machine the two can disagree, and then the hand schedule stays.
    const bool faster = best < passed.size() && median(ratios[best]) <= options.margin &&
                        median(times[best]) <= record.hand_us * options.margin;
    // The general kernel serves unless the specialized one (the hand schedule or the best
    // candidate found for it) is faster than it by the margin.
    if (general_built) {
      const size_t g = passed.size() - 1;
      const double special = faster ? std::min(median(ratios[best]), 1.0) : 1.0;
      if (special > median(ratios[g]) * options.margin) {
        record.schedule = kGeneralSchedule;
        record.tuned_us = median(times[g]);
      }
    }
    if (faster && record.schedule != kGeneralSchedule) {
      record.schedule = passed[best]->choice.text();
      record.tuned_us = median(times[best]);
      kernel_cache().store_candidate(passed[best]->key, passed[best]->candidate);
      std::lock_guard<std::mutex> lock(g_mutex);
      remember_tuned(key, record.bucket, passed[best]->candidate.fn);
    }
  }
  for (const auto* list : {&built, &second})
    for (const Built& b : *list)
      if (!b.candidate.path.empty() && b.name() != record.schedule) {
        std::error_code ec;
        std::filesystem::remove(b.candidate.path, ec);
      }
  record.seconds = seconds_since(start);
  tuning_db().store(record);
  stats_add(&Stats::kernels_tuned, 1);
  return record;
}

void use_tuned_kernels(const fusion::Partition& partition, std::vector<KernelFn>& fns) {
  if (!config().use_tuned) return;
  for (size_t i = 0; i < fns.size(); ++i) {
    if (!fns[i]) continue;
    const Kernel& k = partition.kernels[i];
    const std::string& key = partition.keys[i];
    const std::string bucket = size_bucket(k);
    KernelFn fn = nullptr;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      const TunedFn* found = nullptr;
      if (auto it = g_tuned.find(key); it != g_tuned.end())
        for (const TunedFn& t : it->second)
          if (t.bucket == bucket) found = &t;
      if (found) {
        fn = found->fn;
      } else {  // first time in this process: the database says
        if (auto record = tuning_db().find(key, bucket);
            record && record->tuned() && record->schedule != kGeneralSchedule)
          fn = kernel_cache().load_or_build_or_null(k, tuned_kernel_key(key, bucket, record->schedule),
                                                    record->schedule);
        remember_tuned(key, bucket, fn);
      }
    }
    if (fn) {
      fns[i] = fn;
      stats_add(&Stats::kernels_tuned_used, 1);
    }
  }
}

bool tuning() { return !config().tune_record.empty() || config().tune_seconds > 0; }

void tune_before_launch(const Kernel& k, const std::string& key, KernelFn hand) {
  if (k.kind == Kernel::Kind::Library || numel_of(k.domain) > INT32_MAX) return;  // Halide indexes with int32
  const std::string bucket = size_bucket(k);
  TuneOptions options;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_seen.insert(key + "\n" + bucket).second) return;
    options.after_candidate_run = g_candidate_hook;
    options.margin = g_margin;
    options.below_us = g_below_us;
  }
  const bool known = tuning_db().find(key, bucket).has_value();
  if (const std::string& path = config().tune_record; !path.empty()) {
    std::ofstream out(path, std::ios::app);
    out << "kernel " << bucket << " " << known << " " << describe(k) << "\n" << kernel_text(k) << "end\n";
  }
  if (config().tune_seconds <= 0 || known) return;
  if (!hand) hand = kernel_cache().load_or_build_or_null(k, key);  // compiling in the background
  if (!hand) return;
  options.seconds = config().tune_seconds;
  options.jobs = config().tune_jobs > 0 ? config().tune_jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  try {
    const TuneRecord r = tune_kernel(k, key, hand, options);
    std::lock_guard<std::mutex> lock(g_mutex);
    (g_progress ? g_progress : print_progress)(TuneProgress{r, ++g_done});
  } catch (const Error& e) {
    log().warn("tune: tuning {} failed: {}", describe(k), e.what());
  }
}

void set_tune_progress(std::function<void(const TuneProgress&)> report) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_progress = std::move(report);
}

void reset_tune_session() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_seen.clear();
  g_done = 0;
}

void set_tune_testing(double margin, std::function<void(std::vector<BufferPtr>&)> after_candidate_run) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_margin = margin;
  g_below_us = 0;
  g_candidate_hook = std::move(after_candidate_run);
}

std::vector<RecordedKernel> read_tune_record(const std::string& path) {
  std::vector<RecordedKernel> out;
  std::ifstream in(path);
  RecordedKernel* open = nullptr;  // the entry whose text is being read
  for (std::string line; std::getline(in, line);) {
    if (open) {
      if (line == "end")
        open = nullptr;
      else
        open->text += line + "\n";
      continue;
    }
    std::istringstream is(line);
    std::string word;
    RecordedKernel r;
    int known = 0;
    if (!(is >> word >> r.bucket >> known) || word != "kernel") continue;
    r.known = known != 0;
    std::getline(is >> std::ws, r.kernel);
    out.push_back(r);
    open = &out.back();
  }
  return out;
}

std::optional<TuneRecord> tune_recorded(const RecordedKernel& r, const TuneOptions& options) {
  RebuiltKernel rebuilt = rebuild_kernel(r.text);
  const Kernel& k = rebuilt.kernel;
  const std::string key = k.key();
  if (tuning_db().find(key, size_bucket(k))) return std::nullopt;
  KernelFn hand = kernel_cache().load_or_build_or_null(k, key);
  KILN_CHECK(hand, "tune: the hand-scheduled kernel did not build: ", r.kernel);
  return tune_kernel(k, key, hand, options);
}

}  // namespace kiln::codegen::halide
