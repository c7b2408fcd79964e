// The pieces a data loader's worker threads share with the thread that iterates: a blocking
// queue, the job/result shuttle counting the jobs in flight, the iterator type, and the exception
// a worker's failure becomes.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <utility>

#include "runtime/error.h"

namespace kiln::data {

// What the iterating thread throws when a worker's get_batch threw: the original exception is
// kept in original_exception and its message appended, as libtorch's WorkerException does.
struct WorkerException : Error {
  explicit WorkerException(std::exception_ptr original)
      : Error(describe(original)), original_exception(std::move(original)) {}
  std::exception_ptr original_exception;

 private:
  static std::string describe(const std::exception_ptr& original) {
    std::string message = "Caught exception in DataLoader worker thread.";
    try {
      std::rethrow_exception(original);
    } catch (const std::exception& e) {
      message += " Original message: ";
      message += e.what();
    } catch (...) {
    }
    return message;
  }
};

namespace detail {

template <typename T>
class Queue {
 public:
  void push(T value) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push(std::move(value));
    }
    ready_.notify_one();
  }

  // Waits for a value; with a timeout, throws kiln::Error when none comes in time.
  T pop(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto has_value = [this] { return !queue_.empty(); };
    if (!timeout) {
      ready_.wait(lock, has_value);
    } else {
      KILN_CHECK(ready_.wait_for(lock, *timeout, has_value),
                 "DataLoader: timeout while waiting for the next batch (timeout was ", timeout->count(), " ms)");
    }
    T value = std::move(queue_.front());
    queue_.pop();
    return value;
  }

  // Drops the values waiting; returns how many there were.
  size_t clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t cleared = queue_.size();
    queue_ = {};
    return cleared;
  }

 private:
  std::queue<T> queue_;
  std::mutex mutex_;
  std::condition_variable ready_;
};

// Jobs go to the workers, results come back; each job pushed is in flight until its result is
// popped (or it is cleared unstarted), so the iterating thread knows when to stop waiting.
template <typename Job, typename Result>
class DataShuttle {
 public:
  void push_job(Job job) {
    jobs_.push(std::move(job));
    ++in_flight_;
  }
  void push_result(Result result) { results_.push(std::move(result)); }
  Job pop_job() { return jobs_.pop(); }

  // The next result, or nullopt when no job is in flight.
  std::optional<Result> pop_result(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    if (in_flight_ == 0) return std::nullopt;
    Result result = results_.pop(timeout);
    --in_flight_;
    return result;
  }

  // Forgets the jobs not yet started and waits out (dropping) the results of those started.
  void drain() {
    in_flight_ -= jobs_.clear();
    while (in_flight_ > 0) pop_result();
  }

  size_t in_flight_jobs() const noexcept { return in_flight_; }

 private:
  Queue<Job> jobs_;
  Queue<Result> results_;
  size_t in_flight_ = 0;  // touched by the iterating thread only
};

}  // namespace detail

// An input iterator over a loader's batches. The begin iterator fetches its first batch when
// first dereferenced or compared, each ++ fetches the next; it equals end() once the loader has
// no batch left. Copies share their position.
template <typename Batch>
class Iterator {
 public:
  using difference_type = std::ptrdiff_t;
  using value_type = Batch;
  using pointer = Batch*;
  using reference = Batch&;
  using iterator_category = std::input_iterator_tag;
  using BatchProducer = std::function<std::optional<Batch>()>;

  Iterator() = default;  // the end
  explicit Iterator(BatchProducer next_batch) : state_(std::make_shared<State>()) {
    state_->next_batch = std::move(next_batch);
  }

  Iterator& operator++() {
    KILN_CHECK(state_, "DataLoader: cannot increment the past-the-end iterator");
    fill();
    KILN_CHECK(state_->batch, "DataLoader: attempted to increment an iterator past the end");
    state_->batch = state_->next_batch();
    return *this;
  }
  Batch& operator*() {
    KILN_CHECK(state_, "DataLoader: cannot dereference the past-the-end iterator");
    fill();
    KILN_CHECK(state_->batch, "DataLoader: attempted to dereference an iterator that is past the end");
    return *state_->batch;
  }
  Batch* operator->() { return &**this; }

  bool operator==(const Iterator& other) const {
    if (state_ && other.state_) return state_ == other.state_;
    if (!state_ && !other.state_) return true;
    return (state_ ? *this : other).exhausted();
  }
  bool operator!=(const Iterator& other) const { return !(*this == other); }

 private:
  struct State {
    BatchProducer next_batch;
    std::optional<Batch> batch;
    bool fetched = false;
  };
  void fill() const {
    if (state_->fetched) return;
    state_->fetched = true;
    state_->batch = state_->next_batch();
  }
  bool exhausted() const {
    fill();
    return !state_->batch;
  }

  std::shared_ptr<State> state_;  // null: the end
};

}  // namespace kiln::data
