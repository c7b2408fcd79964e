// The process groups' collective queue: jobs run in call order, on the queue's thread or, where
// that one has not started them, on the thread that waits for one.
#include "frontend/distributed/collective_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "expect_error.h"

namespace {

using kiln::distributed::Work;
using kiln::distributed::detail::CollectiveQueue;

// The queue's thread starts only once release() is called: until then, only waiters run jobs.
struct Gate {
  std::mutex mutex;
  std::condition_variable opened;
  bool open = false;
  void pass() {
    std::unique_lock<std::mutex> lock(mutex);
    opened.wait(lock, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    opened.notify_all();
  }
};

struct Ran {
  std::mutex mutex;
  std::vector<std::pair<int, std::thread::id>> jobs;  // job number, thread
  void add(int job) {
    std::lock_guard<std::mutex> lock(mutex);
    jobs.emplace_back(job, std::this_thread::get_id());
  }
};

TEST(CollectiveQueue, WaiterRunsTheJobsUpToItsOwnInOrder) {
  Gate gate;
  Ran ran;
  {
    CollectiveQueue queue("test", [&] { gate.pass(); });
    std::vector<std::shared_ptr<Work>> works;
    for (int i = 0; i < 3; ++i) works.push_back(queue.enqueue("job" + std::to_string(i), [&ran, i] { ran.add(i); }));
    EXPECT_TRUE(works[1]->wait());
    EXPECT_TRUE(works[0]->isCompleted());
    EXPECT_FALSE(works[2]->isCompleted());
    ASSERT_EQ(ran.jobs.size(), 2u);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(ran.jobs[size_t(i)].first, i);
      EXPECT_EQ(ran.jobs[size_t(i)].second, std::this_thread::get_id());
    }
    gate.release();
    EXPECT_TRUE(works[2]->wait());
    EXPECT_TRUE(works[0]->wait());  // done already: returns at once
  }
  ASSERT_EQ(ran.jobs.size(), 3u);
  EXPECT_EQ(ran.jobs[2].first, 2);
}

TEST(CollectiveQueue, JobFailingOnTheWaiterFailsItsWork) {
  Gate gate;
  CollectiveQueue queue("test", [&] { gate.pass(); });
  auto failing = queue.enqueue("all_reduce(SUM)", [] { throw std::runtime_error("peer gone"); });
  std::atomic<bool> later_ran{false};
  auto later = queue.enqueue("barrier", [&] { later_ran = true; });
  EXPECT_THROW_WITH(failing->wait(), "all_reduce(SUM) (test) failed: peer gone");
  EXPECT_FALSE(failing->isSuccess());
  EXPECT_TRUE(later->wait());  // the queue goes on
  EXPECT_TRUE(later_ran);
  gate.release();
}

TEST(CollectiveQueue, WithoutWaitersRunningJobsTheQueuesThreadRunsThem) {
  Gate gate;
  std::thread::id ran_on;
  CollectiveQueue queue(
      "test", [&] { gate.pass(); }, /*waiters_run_jobs=*/false);
  auto work = queue.enqueue("job", [&] { ran_on = std::this_thread::get_id(); });
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate.release();
  });
  EXPECT_TRUE(work->wait());
  opener.join();
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

// A waiter and the queue's thread racing for many jobs: each runs once, in call order.
TEST(CollectiveQueue, JobsRunOnceInCallOrderWhoeverRunsThem) {
  std::vector<int> order;
  std::mutex mutex;
  CollectiveQueue queue("test");
  std::vector<std::shared_ptr<Work>> works;
  for (int i = 0; i < 2000; ++i) {
    works.push_back(queue.enqueue("job", [&, i] {
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(i);
    }));
    if (i % 3 == 0) works[size_t(i / 2)]->wait();
  }
  for (auto& w : works) w->wait();
  ASSERT_EQ(order.size(), 2000u);
  for (int i = 0; i < 2000; ++i) EXPECT_EQ(order[size_t(i)], i);
}

}  // namespace
