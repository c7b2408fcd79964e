// kiln's threads (runtime/parallel.h): every iteration runs once, on as many threads as asked and
// no more, and loops inside loops, loops from several threads at once, exceptions and changes of
// the thread count all end with every iteration done and the threads still working. Background
// jobs run beside the caller, as many at once as the thread count, and never hold up a loop.
#include "runtime/parallel.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/config.h"

namespace {

// Restores the thread count when a test ends.
struct Threads {
  explicit Threads(int n) : saved(kiln::get_num_threads()) { kiln::set_num_threads(n); }
  ~Threads() { kiln::set_num_threads(saved); }
  int saved;
};

// Counts how many callers are inside at once, and the most there were.
struct Concurrency {
  std::atomic<int> now{0}, most{0};
  void enter() {
    const int n = ++now;
    for (int m = most.load(); n > m && !most.compare_exchange_weak(m, n);) {
    }
  }
  void leave() { --now; }
};

// Counts each iteration's runs and the threads that ran them.
struct Tally {
  explicit Tally(int n) : runs(size_t(n)) {}
  std::vector<std::atomic<int>> runs;
  std::mutex mutex;
  std::set<std::thread::id> threads;
  static void body(void* ctx, int i) {
    auto& t = *static_cast<Tally*>(ctx);
    t.runs[size_t(i)].fetch_add(1);
    std::lock_guard<std::mutex> lock(t.mutex);
    t.threads.insert(std::this_thread::get_id());
  }
  void expect_each_once() const {
    for (size_t i = 0; i < runs.size(); ++i) ASSERT_EQ(runs[i].load(), 1) << "iteration " << i;
  }
};

// Waits until `done()`, for 20 s at most.
template <typename F>
void wait_until(F done) {
  for (int i = 0; i < 20000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// A Tally whose iterations wait until `threads` threads have been inside at once: a loop on that
// many threads passes however late its workers come, one on fewer gives up after 20 s.
struct Gathering {
  Gathering(int n, int threads) : tally(n), threads(threads) {}
  Tally tally;
  int threads;
  Concurrency inside;
  std::atomic<bool> gave_up{false};
  static void body(void* ctx, int i) {
    auto& g = *static_cast<Gathering*>(ctx);
    g.inside.enter();
    wait_until([&] { return g.inside.most >= g.threads || g.gave_up; });
    if (g.inside.most < g.threads) g.gave_up = true;
    Tally::body(&g.tally, i);
    g.inside.leave();
  }
};

// A Tally whose body throws at the iterations in `throw_at`, after counting them.
struct Throwing {
  Throwing(int n, std::vector<int> at) : tally(n), throw_at(std::move(at)) {}
  Tally tally;
  std::vector<int> throw_at;
  static void body(void* ctx, int i) {
    auto& t = *static_cast<Throwing*>(ctx);
    Tally::body(&t.tally, i);
    if (std::find(t.throw_at.begin(), t.throw_at.end(), i) != t.throw_at.end())
      throw std::runtime_error("iteration " + std::to_string(i));
  }
};

TEST(Parallel, EveryIterationRunsOnce) {
  Threads threads(4);
  for (int n : {0, 1, 2, 3, 4, 5, 7, 64, 1000, 100000}) {
    Tally tally(n);
    kiln::parallel_for(n, &Tally::body, &tally);
    tally.expect_each_once();
  }
}

TEST(Parallel, LoopsRunOnSeveralThreads) {
  Threads threads(2);
  Gathering gathering(64, 2);
  kiln::parallel_for(64, &Gathering::body, &gathering);
  gathering.tally.expect_each_once();
  EXPECT_EQ(gathering.tally.threads.size(), 2u);
}

// As many threads as set, more than the machine's cores included, and never more at once.
TEST(Parallel, LoopsRunOnAsManyThreadsAsSet) {
  for (int n : {3, 2}) {
    Threads threads(n);
    Gathering gathering(60, n);
    kiln::parallel_for(60, &Gathering::body, &gathering);
    gathering.tally.expect_each_once();
    EXPECT_EQ(gathering.tally.threads.size(), size_t(n));
    EXPECT_EQ(gathering.inside.most.load(), n);
  }
}

TEST(Parallel, OneThreadRunsOnTheCaller) {
  Threads threads(1);
  Tally tally(100);
  kiln::parallel_for(100, &Tally::body, &tally);
  tally.expect_each_once();
  EXPECT_EQ(tally.threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(Parallel, NestedLoopsRunSerially) {
  Threads threads(3);
  struct Outer {
    std::vector<std::atomic<int>> runs = std::vector<std::atomic<int>>(50 * 40);
    std::atomic<int> elsewhere{0};  // inner iterations run by another thread than their outer one
    static void body(void* ctx, int i) {
      struct Inner {
        Outer* outer;
        int row;
        std::thread::id thread;
      } inner{static_cast<Outer*>(ctx), i, std::this_thread::get_id()};
      kiln::parallel_for(
          40,
          [](void* c, int j) {
            auto& in = *static_cast<Inner*>(c);
            in.outer->runs[size_t(in.row * 40 + j)]++;
            if (std::this_thread::get_id() != in.thread) in.outer->elsewhere++;
          },
          &inner);
    }
  } outer;
  kiln::parallel_for(50, &Outer::body, &outer);
  for (const auto& r : outer.runs) ASSERT_EQ(r.load(), 1);
  EXPECT_EQ(outer.elsewhere.load(), 0);
}

// A loop of one iteration leaves the threads to the loops it starts.
TEST(Parallel, ALoopInsideASingleIterationRunsInParallel) {
  Threads threads(2);
  Gathering gathering(64, 2);
  kiln::parallel_for(
      1, [](void* ctx, int) { kiln::parallel_for(64, &Gathering::body, ctx); }, &gathering);
  gathering.tally.expect_each_once();
  EXPECT_EQ(gathering.tally.threads.size(), 2u);
}

TEST(Parallel, LoopsFromSeveralThreadsAtOnce) {
  Threads threads(2);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round) {
        Tally tally(37);
        kiln::parallel_for(37, &Tally::body, &tally);
        for (const auto& r : tally.runs) failures += r.load() != 1;
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Parallel, AnExceptionReachesTheCallerAfterEveryIteration) {
  Threads threads(2);
  Throwing throwing(100, {3, 13, 23, 33, 43, 53, 63, 73, 83, 93});
  EXPECT_THROW(kiln::parallel_for(100, &Throwing::body, &throwing), std::runtime_error);
  throwing.tally.expect_each_once();
  Tally after(100);  // the pool still works
  kiln::parallel_for(100, &Tally::body, &after);
  after.expect_each_once();
}

TEST(Parallel, OnOneThreadTooAnExceptionComesAfterEveryIteration) {
  Threads threads(1);
  Throwing throwing(10, {2, 5});
  try {
    kiln::parallel_for(10, &Throwing::body, &throwing);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "iteration 2");  // the first
  }
  throwing.tally.expect_each_once();
}

// A child process after fork has none of the parent's workers; its loops must still run (and
// with more threads than before, which starts new ones), not wait for threads that are not there.
TEST(Parallel, AForkedChildRunsLoops) {
  Threads threads(2);
  Tally warm(100);
  kiln::parallel_for(100, &Tally::body, &warm);                // the parent's workers exist,
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // and are asleep (past the spin)
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a hang ends the child with SIGALRM, which the parent reports
    bool ok = true;
    for (int n : {2, 3}) {
      kiln::set_num_threads(n);
      Tally tally(1000);
      kiln::parallel_for(1000, &Tally::body, &tally);
      for (const auto& r : tally.runs) ok = ok && r.load() == 1;
    }
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(Parallel, TheThreadCountMayChangeBetweenLoops) {
  Threads threads(2);
  for (int n : {2, 4, 1, 3, 2}) {
    kiln::set_num_threads(n);
    for (int round = 0; round < 50; ++round) {
      Tally tally(9);
      kiln::parallel_for(9, &Tally::body, &tally);
      tally.expect_each_once();
    }
  }
}

// Many short loops back to back, the workers spinning or asleep in between: none is lost. With
// more threads than the machine has cores too (the spinning workers yield their cores).
TEST(Parallel, ManyShortLoops) {
  for (int n : {2, 8}) {
    Threads threads(n);
    for (int round = 0; round < 20000; ++round) {
      Tally tally(n);
      kiln::parallel_for(n, &Tally::body, &tally);
      for (const auto& r : tally.runs)
        if (r != 1) FAIL() << n << " threads, round " << round;
      if (round % 5000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin
    }
  }
}

// parallel_for_ranges: contiguous ranges, in order, that cover [0, n) once, as many as
// parallel_ranges says (one per thread at most, none shorter than the grain), each told its index.
TEST(ParallelRanges, RangesCoverTheLoopOnceInOrder) {
  Threads threads(3);
  for (int64_t n : {0, 1, 5, 9, 10, 11, 100, 12345}) {
    for (int64_t grain : {1, 4, 1000}) {
      const int64_t ranges = kiln::parallel_ranges(n, grain);
      EXPECT_EQ(ranges, std::max<int64_t>(1, std::min<int64_t>(3, n / grain))) << n << " by " << grain;
      std::vector<std::pair<int64_t, int64_t>> seen(size_t(ranges), {-1, -1});
      std::atomic<int> calls{0};
      kiln::parallel_for_ranges(n, grain, [&](int64_t r, int64_t begin, int64_t end) {
        seen[size_t(r)] = {begin, end};
        ++calls;
      });
      ASSERT_EQ(calls.load(), ranges);
      int64_t at = 0;
      for (auto [begin, end] : seen) {
        EXPECT_EQ(begin, at) << n << " by " << grain;
        EXPECT_TRUE(end - begin >= std::min(grain, n)) << n << " by " << grain << ": [" << begin << ", " << end << ")";
        at = end;
      }
      EXPECT_EQ(at, n);
    }
  }
}

TEST(ParallelRanges, RunOnSeveralThreadsAndSeriallyInsideALoop) {
  Threads threads(2);
  Gathering gathering(2, 2);
  kiln::parallel_for_ranges(2, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) Gathering::body(&gathering, int(i));
  });
  gathering.tally.expect_each_once();
  EXPECT_EQ(gathering.tally.threads.size(), 2u);
  std::atomic<int> inner_ranges{0};
  kiln::parallel_for_ranges(2, 1, [&](int64_t, int64_t) {
    EXPECT_EQ(kiln::parallel_ranges(1000, 1), 1);
    kiln::parallel_for_ranges(1000, 1, [&](int64_t, int64_t) { ++inner_ranges; });
  });
  EXPECT_EQ(inner_ranges.load(), 2);
}

TEST(ParallelRanges, AnExceptionReachesTheCaller) {
  Threads threads(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(kiln::parallel_for_ranges(100, 10,
                                         [&](int64_t begin, int64_t) {
                                           ++ran;
                                           if (begin == 0) throw std::runtime_error("first range");
                                         }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 2);
}

TEST(BackgroundTasks, JobsRunBesideTheCaller) {
  Threads threads(1);  // even so: a job runs on a thread of its own
  kiln::BackgroundTasks tasks;
  std::atomic<bool> started{false}, go{false};
  std::thread::id ran_on;
  tasks.run([&] {
    started = true;
    ran_on = std::this_thread::get_id();
    wait_until([&] { return go.load(); });
  });
  // The job starts while the caller waits for it here, not in wait(), which could run it itself.
  wait_until([&] { return started.load(); });
  go = true;
  tasks.wait();
  EXPECT_TRUE(started.load());
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(BackgroundTasks, AsManyAtOnceAsTheThreadCount) {
  Threads threads(2);
  kiln::BackgroundTasks tasks;
  Concurrency inside;
  std::atomic<int> ran{0};
  for (int j = 0; j < 8; ++j)
    tasks.run([&] {
      inside.enter();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ++ran;
      inside.leave();
    });
  tasks.wait();
  EXPECT_EQ(ran.load(), 8);
  EXPECT_LE(inside.most.load(), 2);
}

TEST(BackgroundTasks, WaitRethrowsAJobsExceptionAfterTheOthers) {
  Threads threads(2);
  kiln::BackgroundTasks tasks;
  std::atomic<int> ran{0};
  tasks.run([] { throw std::runtime_error("job"); });
  for (int j = 0; j < 4; ++j) tasks.run([&] { ++ran; });
  EXPECT_THROW(tasks.wait(), std::runtime_error);
  tasks.wait();  // nothing left
  EXPECT_EQ(ran.load(), 4);
}

// Jobs that take all their threads for a long time (kernels compiling) leave a loop its own.
TEST(BackgroundTasks, BusyJobsLeaveLoopsTheirThreads) {
  Threads threads(2);
  kiln::BackgroundTasks tasks;
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  for (int j = 0; j < 2; ++j)
    tasks.run([&] {
      ++started;
      wait_until([&] { return release.load(); });
    });
  wait_until([&] { return started == 2; });
  Gathering gathering(64, 2);
  kiln::parallel_for(64, &Gathering::body, &gathering);
  release = true;
  tasks.wait();
  EXPECT_EQ(started.load(), 2);
  gathering.tally.expect_each_once();
  EXPECT_EQ(gathering.tally.threads.size(), 2u);
}

}  // namespace
