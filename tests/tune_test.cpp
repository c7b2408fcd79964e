// Kernel autotuning (codegen/halide/tune.h): schedules named as text, the tuning database, and
// across processes (each case runs this test binary again as a child, TuneChild.Program, with its
// own KILN_CACHE_DIR): a process tunes a small kernel with a tiny budget, a later one uses the
// tuned kernel with the same results, KILN_TUNED=0 and a corrupt database fall back to the hand
// schedule, a candidate with a wrong answer is never kept, a kernel is tuned from the record of
// one run, and a candidate over its compile or run time limit is abandoned. Size specialization
// (specialize.h): a partial batch runs on the general kernels with no compile (SpecializeChild).
#include "codegen/halide/tune.h"

#include <gtest/gtest.h>
#include <kiln/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "codegen/halide/kernel_cache.h"
#include "codegen/halide/kernel_text.h"
#include "codegen/halide/schedule_params.h"
#include "runtime/config.h"
#include "runtime/stats.h"

namespace fs = std::filesystem;
using kiln::codegen::halide::RecordedKernel;
using kiln::codegen::halide::ScheduleChoice;
using kiln::codegen::halide::TuneRecord;

namespace {

std::string fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("kiln-tune-test-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(dir);
  return dir.string();
}

// Runs the child `test` in `mode` with `cache_dir`; returns its exit status (its output goes to a
// log file).
int run_child(const std::string& cache_dir, const std::string& mode, const std::string& env = "",
              const std::string& test = "TuneChild.Program") {
  const auto log = fs::temp_directory_path() /
                   ("kiln-tune-child-" + std::to_string(getpid()) + "-" + mode + test.substr(0, 4) + ".log");
  const std::string cmd = env + " KILN_CACHE_DIR='" + cache_dir + "' KILN_TUNE_CHILD=" + mode + " /proc/" +
                          std::to_string(getpid()) + "/exe --gtest_filter=" + test + " > '" + log.string() + "' 2>&1";
  return std::system(cmd.c_str());
}

// One pointwise kernel: exp over 96 x 300 floats, from a fixed seed.
std::vector<float> program() {
  torch::manual_seed(5);
  auto x = torch::randn({96, 300});
  auto y = (x * 0.5 + 0.25).exp();
  kiln::sync();
  return std::vector<float>(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
}

// A training step's values (the loss, the gradients) on a batch of `rows`: linear, ReLU, linear,
// cross-entropy, backward. Its loss is a mean over the rows: at 8 rows or fewer, a narrow reduction.
std::vector<float> step(int64_t rows) {
  torch::manual_seed(7);
  auto w1 = torch::randn({20, 32}, torch::requires_grad());
  auto w2 = torch::randn({32, 10}, torch::requires_grad());
  auto x = torch::randn({rows, 20});
  auto target = torch::randint(0, 10, {rows});
  auto loss = torch::cross_entropy(torch::relu(x.matmul(w1)).matmul(w2), target);
  loss.backward();
  std::vector<float> out = {loss.item<float>()};
  for (const auto& t : {w1.grad(), w2.grad()}) {
    auto c = t.contiguous();
    out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return out;
}

// Kernels whose small sizes specialize them: pooling windows, a row sum over rows of 1 to 8, a
// broadcast add whose inner dim is 1 to 4; the first call runs them at sizes that do not.
std::vector<float> small_sizes(bool large) {
  torch::manual_seed(9);
  std::vector<float> out;
  auto keep = [&](const torch::Tensor& t) {
    auto c = t.contiguous();
    out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  };
  auto image = torch::randn({2, 3, 20, 20});
  for (int64_t window : large ? std::vector<int64_t>{9} : std::vector<int64_t>{2, 3}) {
    keep(torch::max_pool2d(image, {window, window}, {1, 1}));  // stride 1: one structure for all windows
    keep(torch::avg_pool2d(image, {window, window}, {1, 1}));
  }
  for (int64_t row : large ? std::vector<int64_t>{40} : std::vector<int64_t>{1, 3, 5, 8}) {
    auto x = torch::randn({13, row});
    keep(x.exp().sum(1));
    keep(x + torch::randn({row}).unsqueeze(0) * 0 + torch::randn({13, 1}));
  }
  for (int64_t inner : large ? std::vector<int64_t>{16} : std::vector<int64_t>{1, 2, 3, 4})
    keep(torch::randn({7, inner}) * torch::randn({inner}) + 1);
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4 * std::abs(want[i]) + 1e-5) << i;
}

}  // namespace

// In a child with an empty cache: a partial batch after full ones runs on the general kernels the
// full batches compiled, with no compile on the step's path even with KILN_COMPILE=wait; then, with
// the measured rule made immediate, its specialized kernels compile in the background and serve.
TEST(SpecializeChild, Program) {
  const char* mode_env = std::getenv("KILN_SPECIALIZE_CHILD");
  if (!mode_env) GTEST_SKIP() << "runs as a child of the SizeSpecialization tests";
  const std::string mode = mode_env;
  kiln::config().compile_in_background = false;
  if (mode == "partial") {
    kiln::config().backend = "interp";
    const auto want = step(5);
    kiln::config().backend = "halide";
    step(64);  // compiles the general kernels
    kiln::reset_stats();
    expect_near(step(5), want);
    auto s = kiln::stats();
    EXPECT_EQ(s.kernels_compiled, 0);
    EXPECT_GT(s.kernels_served_general, 0);
    EXPECT_EQ(s.kernels_specialized, 0);  // the rule waits for a compile's worth of general runs
    EXPECT_EQ(s.kernels_unfused, 0);
    // The rule at once: the specialized kernels compile in the background, the general ones serve.
    kiln::config().specialize_after_ms = 0;
    kiln::reset_stats();
    expect_near(step(5), want);
    s = kiln::stats();
    EXPECT_GT(s.kernels_specialized, 0);
    EXPECT_EQ(s.kernels_compiled, 0);  // not on this thread: the queue's
    int64_t served = 1;
    for (int i = 0; i < 600 && served > 0; ++i) {  // until they are built (a minute at most)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      kiln::reset_stats();
      expect_near(step(5), want);
      served = kiln::stats().kernels_served_general;
    }
    EXPECT_EQ(served, 0);
  }
  if (mode == "small") {  // the general kernels at small sizes are right
    kiln::config().backend = "interp";
    const auto want = small_sizes(false);
    kiln::config().backend = "halide";
    small_sizes(true);
    kiln::reset_stats();
    expect_near(small_sizes(false), want);
    // Pooling windows and short rows of every size here (some small sizes change the structure
    // too, as a row of 1 that needs no reduction: those compile).
    EXPECT_GE(kiln::stats().kernels_served_general, 8);
  }
}

TEST(SizeSpecialization, APartialBatchRunsOnTheGeneralKernelsWithNoCompile) {
  const std::string dir = fresh_dir("partial");
  EXPECT_EQ(run_child(dir, "partial", "KILN_SPECIALIZE_CHILD=partial", "SpecializeChild.Program"), 0);
  fs::remove_all(dir);
}

TEST(SizeSpecialization, GeneralKernelsAtSmallSizesMatchTheInterpreter) {
  const std::string dir = fresh_dir("small");
  EXPECT_EQ(run_child(dir, "small", "KILN_SPECIALIZE_CHILD=small", "SpecializeChild.Program"), 0);
  fs::remove_all(dir);
}

TEST(Tune, ScheduleChoicesReadBackFromTheirText) {
  ScheduleChoice params;
  params.params.task_elements = 4096;
  params.params.reduction_vectors = 4;
  ScheduleChoice adams;
  adams.kind = ScheduleChoice::Kind::Auto;
  adams.autoscheduler = "Adams2019";
  adams.dropout = 50;
  adams.seed = 3;
  for (const ScheduleChoice& c : {ScheduleChoice{}, params, adams})
    EXPECT_EQ(ScheduleChoice::parse(c.text()).text(), c.text());
  EXPECT_EQ(ScheduleChoice{}.text(), "hand");
  EXPECT_EQ(params.text(), "params grain=4096 rvec=4");
  EXPECT_THROW(ScheduleChoice::parse("params colour=3"), kiln::Error);
  EXPECT_THROW(ScheduleChoice::parse("params grain"), kiln::Error);
  EXPECT_THROW(ScheduleChoice::parse("fast"), kiln::Error);
}

TEST(Tune, DatabaseRoundTripsAndIgnoresACorruptEntry) {
  const std::string dir = fresh_dir("db");
  const std::string saved = kiln::config().cache_dir;
  kiln::config().cache_dir = dir;
  kiln::codegen::halide::TuningDb db;
  TuneRecord r;
  r.key = "a kernel key\nwith two lines";
  r.bucket = "b7.10";
  r.schedule = "params grain=4096";
  r.kernel = "pointwise 100x1000, 3 nodes";
  r.hand_us = 12.5;
  r.tuned_us = 10.25;
  r.seconds = 3;
  r.candidates = 9;
  r.rejected = 1;
  r.failed = 2;
  db.store(r);
  const auto found = db.find(r.key, r.bucket);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->text(), r.text());
  EXPECT_FALSE(db.find(r.key, "b7.11"));
  ASSERT_EQ(db.all().size(), 1u);
  // Damage the entry's content: it is ignored (and removed), not read.
  for (auto& e : fs::directory_iterator(db.dir()))
    if (e.path().extension() == ".tune") std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << "schedule hand";
  EXPECT_FALSE(db.find(r.key, r.bucket));
  EXPECT_TRUE(db.all().empty());
  kiln::config().cache_dir = saved;
  fs::remove_all(dir);
}

TEST(TuneChild, Program) {
  const char* mode_env = std::getenv("KILN_TUNE_CHILD");
  if (!mode_env) GTEST_SKIP() << "runs as a child of the Tune tests";
  const std::string mode = mode_env;
  kiln::config().backend = "interp";
  const auto reference = program();
  kiln::config().backend = "halide";
  std::vector<TuneRecord> tuned;
  kiln::codegen::halide::set_tune_progress([&](const auto& p) { tuned.push_back(p.record); });
  if (mode == "tune" || mode == "wrong") {
    kiln::config().tune_seconds = 0.2;  // a couple of candidates
    kiln::config().tune_jobs = 2;
    // Any candidate that is not 100x slower is kept (timing is not what is tested); "wrong" adds
    // one to each candidate's first output value.
    kiln::codegen::halide::set_tune_testing(100, [&](std::vector<kiln::BufferPtr>& outputs) {
      if (mode == "wrong") outputs[0]->as<float>()[0] += 1;
    });
  }
  const std::string record_path = fs::temp_directory_path() / ("kiln-tune-record-" + std::to_string(getpid()));
  if (mode == "record" || mode == "compile_limit" || mode == "run_limit") kiln::config().tune_record = record_path;
  kiln::reset_stats();
  const auto values = program();
  kiln::config().tune_record.clear();
  const auto s = kiln::stats();
  ASSERT_EQ(values.size(), reference.size());
  for (size_t i = 0; i < values.size(); ++i) ASSERT_NEAR(values[i], reference[i], 1e-5 * std::abs(reference[i]) + 1e-6);
  if (mode == "tune") {
    ASSERT_EQ(tuned.size(), 1u);
    EXPECT_EQ(s.kernels_tuned, 1);
    EXPECT_TRUE(tuned[0].tuned()) << tuned[0].text();
    EXPECT_GT(tuned[0].candidates, 0);
    EXPECT_EQ(tuned[0].rejected, 0);
  }
  if (mode == "wrong") {
    ASSERT_EQ(tuned.size(), 1u);
    EXPECT_FALSE(tuned[0].tuned()) << tuned[0].text();
    EXPECT_GT(tuned[0].rejected, 0);
    EXPECT_EQ(tuned[0].rejected, tuned[0].candidates);
  }
  if (mode == "record") {  // tuned afterwards from the record of that run, as `kiln tune -- PROGRAM` does
    ASSERT_TRUE(tuned.empty());
    const std::vector<RecordedKernel> recorded = kiln::codegen::halide::read_tune_record(record_path);
    ASSERT_EQ(recorded.size(), 1u);
    EXPECT_FALSE(recorded[0].known);
    EXPECT_EQ(recorded[0].kernel.rfind("pointwise 28800", 0), 0u) << recorded[0].kernel;
    const auto rebuilt = kiln::codegen::halide::rebuild_kernel(recorded[0].text);
    EXPECT_EQ(kiln::codegen::halide::kernel_text(rebuilt.kernel), recorded[0].text);
    kiln::codegen::halide::TuneOptions options;
    options.seconds = 0.5;
    options.jobs = 2;
    options.margin = 100;  // any candidate not 100x slower is kept
    options.below_us = 0;
    const auto record = kiln::codegen::halide::tune_recorded(recorded[0], options);
    ASSERT_TRUE(record);
    EXPECT_TRUE(record->tuned()) << record->text();
    EXPECT_FALSE(kiln::codegen::halide::tune_recorded(recorded[0], options));  // now in the database
    fs::remove(record_path);
  }
  if (mode == "compile_limit" || mode == "run_limit") {  // every candidate abandoned, its process killed
    const std::vector<RecordedKernel> recorded = kiln::codegen::halide::read_tune_record(record_path);
    ASSERT_EQ(recorded.size(), 1u);
    kiln::codegen::halide::TuneOptions options;
    options.seconds = 1;
    options.jobs = 2;
    options.margin = 100;
    options.below_us = 0;
    if (mode == "compile_limit") options.compile_limit_s = 0.01;
    if (mode == "run_limit") options.run_limit_s = 1e-6;
    const auto started = std::chrono::steady_clock::now();
    const auto record = kiln::codegen::halide::tune_recorded(recorded[0], options);
    ASSERT_TRUE(record);
    EXPECT_FALSE(record->tuned()) << record->text();
    EXPECT_EQ(record->candidates, 0);
    EXPECT_GT(record->failed, 0);
    if (mode == "compile_limit") {  // each abandoned at once: a few seconds for them all
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 20);
    }
    fs::remove(record_path);
  }
  if (mode == "use") {  // the tuned kernel, from the kernel cache: nothing compiled
    EXPECT_EQ(s.kernels_tuned_used, 1);
    EXPECT_EQ(s.kernels_compiled, 0);
  }
  if (mode == "hand") {
    EXPECT_EQ(s.kernels_tuned_used, 0);
  }
}

TEST(Tune, ALaterProcessUsesTheTunedKernel) {
  const std::string dir = fresh_dir("later");
  ASSERT_EQ(run_child(dir, "tune"), 0);
  EXPECT_EQ(run_child(dir, "use"), 0);
  EXPECT_EQ(run_child(dir, "hand", "KILN_TUNED=0"), 0);
  // A damaged database entry: the hand schedule, and a warning.
  int damaged = 0;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".tune") {
      std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << "damaged";
      ++damaged;
    }
  EXPECT_EQ(damaged, 1);
  EXPECT_EQ(run_child(dir, "hand"), 0);
  fs::remove_all(dir);
}

TEST(Tune, AKernelRecordedInOneRunIsTunedFromItsRecord) {
  const std::string dir = fresh_dir("record");
  ASSERT_EQ(run_child(dir, "record"), 0);
  EXPECT_EQ(run_child(dir, "use"), 0);
  fs::remove_all(dir);
}

TEST(Tune, ACandidateOverItsCompileOrRunTimeLimitIsAbandoned) {
  const std::string dir = fresh_dir("limits");
  EXPECT_EQ(run_child(dir, "compile_limit"), 0);
  EXPECT_EQ(run_child(dir + "-run", "run_limit"), 0);
  fs::remove_all(dir);
  fs::remove_all(dir + "-run");
}

TEST(Tune, ACandidateWithAWrongAnswerIsRejected) {
  const std::string dir = fresh_dir("wrong");
  EXPECT_EQ(run_child(dir, "wrong"), 0);
  EXPECT_EQ(run_child(dir, "hand"), 0);  // the database says "hand"
  fs::remove_all(dir);
}

namespace {

// The kernels of `programs` (each a flush of its own, so not fused together), recorded
// (KILN_TUNE_RECORD) and rebuilt with random inputs.
std::vector<kiln::codegen::halide::RebuiltKernel> record_kernels(
    const std::vector<std::function<torch::Tensor()>>& programs) {
  const std::string path = fs::temp_directory_path() / ("kiln-tune-kinds-" + std::to_string(getpid()));
  fs::remove(path);
  kiln::codegen::halide::reset_tune_session();  // records each kernel again
  kiln::config().tune_record = path;
  for (const auto& program : programs) {
    auto t = program();
    kiln::sync();
  }
  kiln::config().tune_record.clear();
  std::vector<kiln::codegen::halide::RebuiltKernel> out;
  for (const RecordedKernel& r : kiln::codegen::halide::read_tune_record(path)) {
    out.push_back(kiln::codegen::halide::rebuild_kernel(r.text));
  }
  fs::remove(path);
  return out;
}

// A few small programs of each kind: a pointwise exp below the serial threshold, a row sum, a
// whole-tensor sum, a softmax (a row kernel) and a transposing add.
std::vector<kiln::codegen::halide::RebuiltKernel> recorded_kernels() {
  torch::manual_seed(3);
  auto x = torch::randn({96, 300});
  auto y = torch::randn({300, 2000});
  return record_kernels({[&] { return (x * 0.5 + 0.25).exp(); }, [&] { return y.sum(1); }, [&] { return y.sum(); },
                         [&] { return torch::softmax(y, 1); }, [&] { return y.t() * 2 + 1; }});
}

// A kernel's outputs as floats, run with `fn` (taken from its nodes, as tuning does).
std::vector<float> run_kernel(const kiln::fusion::Kernel& k, kiln::codegen::halide::KernelFn fn) {
  kiln::codegen::halide::launch(k, fn);
  std::vector<float> out;
  for (int o : k.outputs) {
    kiln::BufferPtr& b = k.nodes[size_t(o)].node->result;
    out.insert(out.end(), b->as<float>(), b->as<float>() + b->bytes() / sizeof(float));
    b.reset();
  }
  return out;
}

}  // namespace

// Candidates that would compile to the hand kernel, or to another candidate's, are not tried: a
// grain where the kernel runs on the calling thread, a whole-tensor sum's grain (its chunks are
// chunk_steps), lanes of a reduction that is not a row kernel, tiles of a kernel that does not
// transpose, the hand's own lanes.
TEST(Tune, CandidatesLeaveOutParametersTheKernelDoesNotRead) {
  using kiln::codegen::halide::effective_params;
  using kiln::codegen::halide::ScheduleParams;
  using Kind = kiln::fusion::Kernel::Kind;
  const std::string saved = kiln::config().cache_dir;
  kiln::config().cache_dir = fresh_dir("kinds");
  const auto kernels = recorded_kernels();
  ASSERT_EQ(kernels.size(), 5u);
  const int native = 8;  // any target's: effective_params is told it
  auto with = [](auto set) {
    ScheduleParams p;
    set(p);
    return p;
  };
  const ScheduleParams hand,
      grain = with([](auto&p) { p.task_elements = 4096; }), serial = with([](auto&p) { p.serial_below = 16384; }),
      lanes = with([](auto&p) { p.element_lanes = 16; }), hand_lanes = with([](auto&p) { p.element_lanes = 32; }),
      rvec = with([](auto&p) { p.reduction_vectors = 4; }), chunk = with([](auto&p) { p.chunk_steps = 256; }),
      tile = with([](auto&p) { p.tile = 4; });
  int seen = 0;
  for (const auto& rebuilt : kernels) {
    const kiln::fusion::Kernel& k = rebuilt.kernel;
    auto effective = [&](const ScheduleParams& p) { return effective_params(k, p, native); };
    if (k.kind == Kind::Pointwise &&
        k.domain == kiln::Shape{28800}) {  // the exp: on the calling thread, 32 lanes by hand
      seen |= 1;
      EXPECT_EQ(effective(grain), hand);
      EXPECT_EQ(effective(serial), serial);
      EXPECT_EQ(effective(hand_lanes), hand);
      EXPECT_EQ(effective(lanes), lanes);
      EXPECT_EQ(effective(rvec), hand);
      EXPECT_EQ(effective(tile), hand);
    } else if (k.kind == Kind::Pointwise) {  // y.t() * 2 + 1: transposing, 600K elements
      seen |= 2;
      EXPECT_EQ(effective(tile), tile);
      EXPECT_EQ(effective(grain), grain);
      EXPECT_EQ(effective(serial), hand);  // on the same side of 600K elements as the hand's
      EXPECT_EQ(effective(chunk), hand);
    } else if (k.row_kernel()) {  // softmax: rows in tasks whatever the size
      seen |= 4;
      EXPECT_EQ(effective(grain), grain);
      EXPECT_EQ(effective(lanes), lanes);
      EXPECT_EQ(effective(rvec), rvec);
      EXPECT_EQ(effective(serial), hand);
    } else if (std::count(k.reduced.begin(), k.reduced.end(), true) == int(k.reduced.size())) {  // y.sum()
      seen |= 8;
      EXPECT_EQ(effective(grain), hand);
      EXPECT_EQ(effective(chunk), chunk);
      EXPECT_EQ(effective(lanes), hand);
    } else {  // y.sum(1)
      seen |= 16;
      EXPECT_EQ(effective(grain), grain);
      EXPECT_EQ(effective(rvec), rvec);
      EXPECT_EQ(effective(chunk), hand);
      EXPECT_EQ(effective(lanes), hand);
    }
    // Every candidate is one of a kind: none is the hand schedule or another's effective twin.
    const auto candidates = kiln::codegen::halide::tune_candidates(k);
    EXPECT_FALSE(candidates.empty());
    for (size_t i = 0; i < candidates.size(); ++i) {
      EXPECT_FALSE(candidates[i].is_hand());
      for (size_t j = 0; j < i; ++j) EXPECT_NE(candidates[i].text(), candidates[j].text());
    }
  }
  EXPECT_EQ(seen, 31);
  fs::remove_all(kiln::config().cache_dir);
  kiln::config().cache_dir = saved;
}

// Element loops in half the native vector on AVX-512 (8 lanes, a candidate there): the candidate
// compiles, and a pointwise kernel's and a row kernel's outputs are the hand schedule's.
TEST(Tune, HalfVectorLanesGiveTheHandScheduleOutputs) {
  const std::string saved = kiln::config().cache_dir;
  kiln::config().cache_dir = fresh_dir("lanes");
  int compared = 0;
  for (const auto& rebuilt : recorded_kernels()) {
    const kiln::fusion::Kernel& k = rebuilt.kernel;
    if (k.kind != kiln::fusion::Kernel::Kind::Pointwise && !k.row_kernel()) continue;
    const std::string key = k.key();
    auto hand = kiln::codegen::halide::kernel_cache().load_or_build_or_null(k, key);
    ASSERT_TRUE(hand);
    const std::string schedule = "params lanes=8";
    auto half = kiln::codegen::halide::kernel_cache().load_or_build_or_null(
        k, kiln::codegen::halide::tuned_kernel_key(key, "test", schedule), schedule);
    ASSERT_TRUE(half) << schedule;
    const auto want = run_kernel(k, hand), got = run_kernel(k, half);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i]) + 1e-6) << i;
    ++compared;
  }
  EXPECT_EQ(compared, 3);
  fs::remove_all(kiln::config().cache_dir);
  kiln::config().cache_dir = saved;
}

// The candidates of the kinds the hand schedule does not choose: tiles over a batch of transposes
// (`tiles`, its two innermost dims), short rows in one masked vector (`masked`). Each compiles and
// gives the hand schedule's outputs; a batch of transposes is tuned with them (every candidate
// checked against the hand's outputs, none rejected).
TEST(Tune, TilesOverTransposesAndMaskedRowsGiveTheHandScheduleOutputs) {
  const std::string saved = kiln::config().cache_dir;
  kiln::config().cache_dir = fresh_dir("kinds2");
  torch::manual_seed(4);
  auto batch = torch::randn({6, 40, 50});
  auto rows = torch::randn({8, 5, 16}).slice(2, 1, 15);  // rows of 14, 16 apart
  const auto kernels = record_kernels({[&] { return batch.transpose(1, 2) * 2 + 1; }, [&] { return rows * 3; }});
  ASSERT_EQ(kernels.size(), 2u);
  int compared = 0;
  for (const auto& rebuilt : kernels) {
    const kiln::fusion::Kernel& k = rebuilt.kernel;
    const bool transposing = k.domain.size() == 3;
    EXPECT_EQ(kiln::codegen::halide::transposed_dim(k), transposing ? 1 : -1);
    std::vector<std::string> kinds;
    for (const ScheduleChoice& c : kiln::codegen::halide::tune_candidates(k))
      if (c.text().find("tiles=") != std::string::npos) kinds.push_back(c.text());
    EXPECT_EQ(kinds.size(), transposing ? 3u : 0u);
    if (!transposing) kinds = {"params masked=1"};  // a candidate on AVX-512, compiled here on any target
    const std::string key = k.key();
    auto hand = kiln::codegen::halide::kernel_cache().load_or_build_or_null(k, key);
    ASSERT_TRUE(hand);
    const auto want = run_kernel(k, hand);
    for (const std::string& schedule : kinds) {
      auto fn = kiln::codegen::halide::kernel_cache().load_or_build_or_null(
          k, kiln::codegen::halide::tuned_kernel_key(key, "test", schedule), schedule);
      ASSERT_TRUE(fn) << schedule;
      EXPECT_EQ(run_kernel(k, fn), want) << schedule;
      ++compared;
    }
    if (transposing) {
      kiln::codegen::halide::TuneOptions options;
      options.seconds = 4;
      options.jobs = 2;
      options.margin = 100;
      options.below_us = 0;
      const TuneRecord r = kiln::codegen::halide::tune_kernel(k, key, hand, options);
      EXPECT_GT(r.candidates, 0);
      EXPECT_EQ(r.rejected, 0) << r.text();
    }
  }
  EXPECT_EQ(compared, 4);
  fs::remove_all(kiln::config().cache_dir);
  kiln::config().cache_dir = saved;
}

// A kernel of a hundred nodes and more tries only candidates that leave its code's size as it is
// (no wider vectors, no autoscheduler), and may compile for twice as long as its hand schedule took
// in this process (KernelCache::compile_seconds, known once it compiled here).
TEST(Tune, ALargeKernelTriesOnlyCheapCandidates) {
  const std::string saved = kiln::config().cache_dir;
  const bool background = kiln::config().compile_in_background;
  kiln::config().cache_dir = fresh_dir("large");
  kiln::config().compile_in_background = false;
  torch::manual_seed(6);
  auto x = torch::randn({64, 100});
  const auto kernels = record_kernels({[&] {
    auto y = x;
    for (int i = 0; i < 60; ++i) y = (y * 0.999 + 0.001).abs();
    return y;
  }});
  ASSERT_EQ(kernels.size(), 1u);
  const kiln::fusion::Kernel& k = kernels[0].kernel;
  ASSERT_GE(k.nodes.size(), 100u);
  const auto candidates = kiln::codegen::halide::tune_candidates(k);
  EXPECT_FALSE(candidates.empty());
  for (const ScheduleChoice& c : candidates) {
    EXPECT_EQ(c.kind, ScheduleChoice::Kind::Params) << c.text();
    EXPECT_TRUE(c.params.element_lanes == 0 || c.params.element_lanes < 16) << c.text();
  }
  EXPECT_EQ(kiln::codegen::halide::kernel_cache().compile_seconds("no such kernel"), 0);
  ASSERT_TRUE(kiln::codegen::halide::kernel_cache().load_or_build_or_null(k, k.key()));
  EXPECT_GT(kiln::codegen::halide::kernel_cache().compile_seconds(k.key()), 0);
  fs::remove_all(kiln::config().cache_dir);
  kiln::config().cache_dir = saved;
  kiln::config().compile_in_background = background;
}
