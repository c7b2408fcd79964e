// torch::data::make_data_loader and the loaders it makes, as libtorch's:
//
//   auto dataset = torch::data::datasets::MNIST(root)
//                      .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
//                      .map(torch::data::transforms::Stack<>());
//   auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
//       std::move(dataset), torch::data::DataLoaderOptions().batch_size(64).workers(2));
//   for (auto& batch : *loader) train_step(batch.data, batch.target);  // each range-for: one epoch
//
// Each begin() starts an epoch: the sampler is reset (RandomSampler, the default, draws a new
// permutation), then batches are made from its index lists. With workers == 0 the iterating
// thread makes each batch when the iterator asks; with workers > 0 each worker thread holds its
// own copy of the dataset (a stateful dataset is shared) and up to max_jobs (default 2 * workers)
// batches are made ahead, computed on the worker (kiln::sync there) so that loading overlaps the
// training step; they come back in order unless enforce_ordering is off. An exception in a worker
// is thrown to the iterating thread as a WorkerException. Destroying a loader mid-epoch drops the
// batches not started, waits for those being made and joins the workers.
#pragma once
#include <chrono>
#include <cstddef>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "frontend/data/dataloader_queue.h"
#include "frontend/data/datasets.h"
#include "frontend/data/samplers.h"
#include "frontend/nn/arg.h"
#include "frontend/tensor.h"
#include "runtime/error.h"

namespace kiln::data {

struct DataLoaderOptions {
  DataLoaderOptions() = default;
  /* implicit */ DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}

  KILN_ARG(size_t, batch_size) = 1;
  // Threads making batches in the background; 0 makes them on the iterating thread.
  KILN_ARG(size_t, workers) = 0;
  // Batches requested ahead at most; default 2 * workers.
  KILN_ARG(std::optional<size_t>, max_jobs);
  // How long the iterating thread waits for a worker's batch before throwing.
  KILN_ARG(std::optional<std::chrono::milliseconds>, timeout);
  // Batches come back in the sampler's order (otherwise as workers finish them).
  KILN_ARG(bool, enforce_ordering) = true;
  // Drops the last batch of an epoch when it is smaller than batch_size.
  KILN_ARG(bool, drop_last) = false;
};

// The options with max_jobs resolved.
struct FullDataLoaderOptions {
  explicit FullDataLoaderOptions(DataLoaderOptions options)
      : batch_size(options.batch_size()),
        workers(options.workers()),
        max_jobs(options.max_jobs().value_or(2 * options.workers())),
        timeout(options.timeout()),
        enforce_ordering(options.enforce_ordering()),
        drop_last(options.drop_last()) {
    KILN_CHECK(batch_size > 0, "DataLoader: batch_size must be positive, got 0");
    KILN_CHECK(workers == 0 || max_jobs > 0, "DataLoader: max_jobs must be positive with ", workers, " workers, got 0");
  }
  size_t batch_size;
  size_t workers;
  size_t max_jobs;
  std::optional<std::chrono::milliseconds> timeout;
  bool enforce_ordering;
  bool drop_last;
};

// What StatelessDataLoader and StatefulDataLoader share: the epoch's iteration, the workers, the
// job queue and the reordering of their results.
template <typename Dataset, typename Batch, typename BatchRequest>
class DataLoaderBase {
 public:
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;

  DataLoaderBase(DataLoaderOptions options, std::unique_ptr<Dataset> main_thread_dataset = nullptr)
      : options_(std::move(options)), main_thread_dataset_(std::move(main_thread_dataset)) {}
  DataLoaderBase(const DataLoaderBase&) = delete;
  DataLoaderBase& operator=(const DataLoaderBase&) = delete;
  virtual ~DataLoaderBase() { join(); }

  // Starts an epoch. An epoch left unfinished is abandoned (libtorch throws here instead).
  Iterator<Batch> begin() {
    reset();
    return Iterator<Batch>([this] { return next(); });
  }
  Iterator<Batch> end() { return Iterator<Batch>(); }

  // Stops the workers (the destructor calls this).
  void join() {
    if (joined_) return;
    joined_ = true;
    shuttle_.drain();
    for (size_t w = 0; w < workers_.size(); ++w) shuttle_.push_job(Job{});  // a job without a request: quit
    for (auto& worker : workers_) worker.join();
  }

  const FullDataLoaderOptions& options() const noexcept { return options_; }

 protected:
  struct Job {
    size_t sequence_number = 0;
    std::optional<BatchRequest> request;  // none: the worker quits
  };
  struct Result {
    size_t sequence_number = 0;
    std::optional<Batch> batch;  // none with no exception: a stateful dataset's epoch ended
    std::exception_ptr exception;
  };

  // The next batch request of the epoch, or nullopt at its end.
  virtual std::optional<BatchRequest> get_batch_request() = 0;

  virtual void reset() {
    KILN_CHECK(!joined_, "DataLoader: cannot start an epoch after join()");
    shuttle_.drain();
    next_sequence_number_ = 0;
    next_expected_ = 0;
    early_results_.clear();
    prefetch(options_.max_jobs);
  }

  // Starts `workers` threads, each running worker_loop over the dataset `dataset_for(w)` gives.
  template <typename DatasetFor>
  void start_workers(DatasetFor dataset_for) {
    for (size_t w = 0; w < options_.workers; ++w) workers_.emplace_back(dataset_for(w));
  }

  void worker_loop(Dataset& dataset) {
    while (true) {
      Job job = shuttle_.pop_job();
      if (!job.request) return;
      Result result;
      result.sequence_number = job.sequence_number;
      try {
        result.batch = dataset.get_batch(std::move(*job.request));
        kiln::sync();  // compute the batch here, so the iterating thread gets it ready
      } catch (...) {
        result.batch.reset();
        result.exception = std::current_exception();
      }
      shuttle_.push_result(std::move(result));
    }
  }

  const FullDataLoaderOptions options_;
  std::unique_ptr<Dataset> main_thread_dataset_;
  std::vector<std::thread> workers_;

 private:
  void prefetch(size_t jobs) {
    for (size_t j = 0; j < jobs; ++j) {
      std::optional<BatchRequest> request = get_batch_request();
      if (!request) return;
      shuttle_.push_job(Job{next_sequence_number_++, std::move(request)});
    }
  }

  std::optional<Batch> next() {
    if (options_.workers == 0) {
      std::optional<BatchRequest> request = get_batch_request();
      if (!request) return std::nullopt;
      return main_thread_dataset_->get_batch(std::move(*request));
    }
    while (std::optional<Result> result = next_result()) {
      if (result->exception) throw WorkerException(result->exception);
      if (result->batch) {
        prefetch(1);  // keep max_jobs in flight
        return std::move(result->batch);
      }
    }
    return std::nullopt;
  }

  // The next result in the sampler's order (or in arrival order without enforce_ordering).
  std::optional<Result> next_result() {
    if (!options_.enforce_ordering) return shuttle_.pop_result(options_.timeout);
    while (true) {
      auto early = early_results_.find(next_expected_);
      if (early != early_results_.end()) {
        Result result = std::move(early->second);
        early_results_.erase(early);
        ++next_expected_;
        return result;
      }
      std::optional<Result> result = shuttle_.pop_result(options_.timeout);
      if (!result) return std::nullopt;
      if (result->sequence_number == next_expected_) {
        ++next_expected_;
        return result;
      }
      early_results_.emplace(result->sequence_number, std::move(*result));
    }
  }

  detail::DataShuttle<Job, Result> shuttle_;
  size_t next_sequence_number_ = 0;         // of the next job pushed
  size_t next_expected_ = 0;                // of the next result handed out in order
  std::map<size_t, Result> early_results_;  // results that came before their turn
  bool joined_ = false;
};

// A loader over a dataset answering index lists, with a sampler choosing them.
template <typename Dataset, typename Sampler>
class StatelessDataLoader
    : public DataLoaderBase<Dataset, typename Dataset::BatchType, typename Sampler::BatchRequestType> {
 public:
  using super = DataLoaderBase<Dataset, typename Dataset::BatchType, typename Sampler::BatchRequestType>;
  using typename super::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : super(std::move(options)), sampler_(std::move(sampler)) {
    if (this->options_.workers == 0) {
      this->main_thread_dataset_ = std::make_unique<Dataset>(std::move(dataset));
      return;
    }
    // Each worker owns a copy of the dataset.
    this->start_workers(
        [this, &dataset](size_t) { return [this, copy = dataset]() mutable { this->worker_loop(copy); }; });
  }
  ~StatelessDataLoader() override { this->join(); }

  Sampler& sampler() noexcept { return sampler_; }

 private:
  void reset() override {
    sampler_.reset();
    super::reset();
  }
  std::optional<BatchRequestType> get_batch_request() override {
    auto indices = sampler_.next(this->options_.batch_size);
    if (!indices) return std::nullopt;
    if (this->options_.drop_last && request_size(*indices) < this->options_.batch_size) return std::nullopt;
    return indices;
  }
  template <typename Request>
  static size_t request_size(const Request& request) {
    if constexpr (std::is_convertible_v<Request, size_t>) {
      return size_t(request);
    } else {
      return request.size();
    }
  }

  Sampler sampler_;
};

// A loader over a stateful dataset, which ends each epoch itself; its workers share the dataset,
// which must therefore be thread-safe, as in libtorch.
template <typename Dataset>
class StatefulDataLoader
    : public DataLoaderBase<Dataset, typename Dataset::BatchType::value_type, typename Dataset::BatchRequestType> {
 public:
  using super = DataLoaderBase<Dataset, typename Dataset::BatchType::value_type, typename Dataset::BatchRequestType>;
  using typename super::BatchRequestType;

  StatefulDataLoader(Dataset dataset, DataLoaderOptions options)
      : super(std::move(options), std::make_unique<Dataset>(std::move(dataset))) {
    this->start_workers([this](size_t) { return [this] { this->worker_loop(*this->main_thread_dataset_); }; });
  }
  ~StatefulDataLoader() override { this->join(); }

 private:
  void reset() override {
    this->main_thread_dataset_->reset();
    super::reset();
  }
  std::optional<BatchRequestType> get_batch_request() override { return this->options_.batch_size; }
};

// A stateless loader with the given sampler.
template <typename Dataset, typename Sampler>
std::enable_if_t<!Dataset::is_stateful, std::unique_ptr<StatelessDataLoader<Dataset, Sampler>>> make_data_loader(
    Dataset dataset, Sampler sampler, DataLoaderOptions options) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler),
                                                                 std::move(options));
}

// A stateless loader with a Sampler(dataset.size()) (a RandomSampler by default).
template <typename Sampler = samplers::RandomSampler, typename Dataset>
std::enable_if_t<!Dataset::is_stateful && std::is_constructible<Sampler, size_t>::value,
                 std::unique_ptr<StatelessDataLoader<Dataset, Sampler>>>
make_data_loader(Dataset dataset, DataLoaderOptions options = DataLoaderOptions()) {
  const std::optional<size_t> size = dataset.size();
  KILN_CHECK(size.has_value(), "make_data_loader: expected the dataset to be sized in order to construct the Sampler");
  return make_data_loader(std::move(dataset), Sampler(*size), std::move(options));
}

// A loader over a stateful dataset.
template <typename Dataset, typename = std::enable_if_t<Dataset::is_stateful>>
std::unique_ptr<StatefulDataLoader<Dataset>> make_data_loader(Dataset dataset,
                                                              DataLoaderOptions options = DataLoaderOptions()) {
  return std::make_unique<StatefulDataLoader<Dataset>>(std::move(dataset), std::move(options));
}

}  // namespace kiln::data
