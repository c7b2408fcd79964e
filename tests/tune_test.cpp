// Kernel autotuning (codegen/halide/tune.h): schedules named as text, the tuning database, and
// across processes (each case runs this test binary again as a child, TuneChild.Program, with its
// own KILN_CACHE_DIR): a process tunes a small kernel with a tiny budget, a later one uses the
// tuned kernel with the same results, KILN_TUNED=0 and a corrupt database fall back to the hand
// schedule, and a candidate with a wrong answer is never kept.
#include "codegen/halide/tune.h"

#include <gtest/gtest.h>
#include <kiln/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "codegen/halide/schedule_params.h"
#include "runtime/config.h"
#include "runtime/stats.h"

namespace fs = std::filesystem;
using kiln::codegen::halide::ScheduleChoice;
using kiln::codegen::halide::TuneRecord;

namespace {

std::string fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("kiln-tune-test-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(dir);
  return dir.string();
}

// Runs the child in `mode` with `cache_dir`; returns its exit status (its output goes to a log file).
int run_child(const std::string& cache_dir, const std::string& mode, const std::string& env = "") {
  const auto log = fs::temp_directory_path() / ("kiln-tune-child-" + std::to_string(getpid()) + "-" + mode + ".log");
  const std::string cmd = env + " KILN_CACHE_DIR='" + cache_dir + "' KILN_TUNE_CHILD=" + mode + " /proc/" +
                          std::to_string(getpid()) + "/exe --gtest_filter=TuneChild.Program > '" + log.string() +
                          "' 2>&1";
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

}  // namespace

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
  kiln::reset_stats();
  const auto values = program();
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

TEST(Tune, ACandidateWithAWrongAnswerIsRejected) {
  const std::string dir = fresh_dir("wrong");
  EXPECT_EQ(run_child(dir, "wrong"), 0);
  EXPECT_EQ(run_child(dir, "hand"), 0);  // the database says "hand"
  fs::remove_all(dir);
}
