// torch::data's samplers and loaders in kiln: RandomSampler's order after manual_seed equal to
// libtorch 1.13's, the distributed samplers, make_data_loader's overloads, drop_last, worker
// threads giving the batches of the main thread in order, a loader destroyed mid-epoch, a worker's
// exception, a stateful dataset, and the data part of libtorch's MNIST example.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "expect_error.h"

namespace {

using namespace torch::data;
using kiln::Tensor;

// Example i: data [2] filled with i, target i; `delay` per example makes workers slow.
struct Numbers : datasets::Dataset<Numbers> {
  size_t n;
  std::chrono::milliseconds delay{0};
  explicit Numbers(size_t n) : n(n) {}
  Example<> get(size_t i) override {
    if (delay.count()) std::this_thread::sleep_for(delay);
    return {torch::full({2}, double(i)), torch::tensor(int64_t(i))};
  }
  torch::optional<size_t> size() const override { return n; }
};

// The targets of each batch of one epoch.
template <typename Loader>
std::vector<std::vector<int64_t>> epoch(Loader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (auto& batch : loader) {
    std::vector<int64_t> targets;
    if constexpr (std::is_same_v<std::decay_t<decltype(batch)>, Example<>>) {
      targets = batch.target.template to_vector<int64_t>();
      EXPECT_EQ(batch.data.size(0), batch.target.size(0));
    } else {
      for (auto& e : batch) targets.push_back(e.target.template item<int64_t>());
    }
    batches.push_back(targets);
  }
  return batches;
}

using Batches = std::vector<std::vector<int64_t>>;

// Values from libtorch 1.13: torch::randperm after manual_seed(0).
TEST(TorchDataSamplers, RandpermAsLibtorch) {
  torch::manual_seed(0);
  EXPECT_EQ(torch::randperm(10).to_vector<int64_t>(), (std::vector<int64_t>{4, 1, 7, 5, 3, 9, 0, 8, 6, 2}));
  torch::manual_seed(0);
  const std::vector<int64_t> big = torch::randperm(100000).to_vector<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(big.begin(), big.begin() + 5),
            (std::vector<int64_t>{36044, 73702, 76369, 2549, 52523}));
  EXPECT_EQ(std::vector<int64_t>(big.end() - 5, big.end()), (std::vector<int64_t>{83825, 70481, 47534, 99934, 84786}));
  int64_t weighted = 0;
  for (int64_t i = 0; i < 100000; ++i) weighted += i * big[i];
  EXPECT_EQ(weighted, 249799464714015);
}

// Values from libtorch 1.13: make_data_loader(Ints(10), batch_size 4) after manual_seed(42), two
// epochs, then torch::rand({1}) (so the sampler drew as often as libtorch's: once when made, once
// per epoch).
TEST(TorchDataSamplers, RandomSamplerDrawsLibtorchsOrder) {
  torch::manual_seed(42);
  auto loader = make_data_loader(Numbers(10), DataLoaderOptions().batch_size(4));
  EXPECT_EQ(epoch(*loader), (Batches{{3, 5, 8, 9}, {4, 6, 1, 0}, {7, 2}}));
  EXPECT_EQ(epoch(*loader), (Batches{{7, 5, 0, 3}, {1, 6, 9, 8}, {4, 2}}));
  EXPECT_NEAR(torch::rand({1}).item<float>(), 0.199364f, 1e-6);
}

TEST(TorchDataSamplers, SequentialAndDistributed) {
  samplers::SequentialSampler sequential(5);
  EXPECT_EQ(sequential.next(3).value(), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(sequential.next(3).value(), (std::vector<size_t>{3, 4}));
  EXPECT_FALSE(sequential.next(3).has_value());
  sequential.reset(2);
  EXPECT_EQ(sequential.next(8).value(), (std::vector<size_t>{0, 1}));

  samplers::StreamSampler stream(5);
  EXPECT_EQ(stream.next(2), std::optional<size_t>(2));
  EXPECT_EQ(stream.next(2), std::optional<size_t>(2));
  EXPECT_EQ(stream.next(2), std::optional<size_t>(1));
  EXPECT_FALSE(stream.next(2).has_value());

  // Values from libtorch 1.13 (size 10, 3 replicas).
  samplers::DistributedRandomSampler random(10, 3, 1);
  EXPECT_EQ(random.next(100).value(), (std::vector<size_t>{9, 1, 4, 7}));
  random.set_epoch(1);
  random.reset();
  EXPECT_EQ(random.next(3).value(), (std::vector<size_t>{1, 4, 6}));
  EXPECT_EQ(random.next(3).value(), (std::vector<size_t>{3}));
  EXPECT_FALSE(random.next(3).has_value());
  samplers::DistributedSequentialSampler last_rank(10, 3, 2);
  EXPECT_EQ(last_rank.next(100).value(), (std::vector<size_t>{8, 9, 0, 1}));
  samplers::DistributedRandomSampler no_duplicates(10, 3, 2, /*allow_duplicates=*/false);
  EXPECT_EQ(no_duplicates.next(100).value(), (std::vector<size_t>{8, 3, 7}));
  EXPECT_THROW_WITH(samplers::DistributedSequentialSampler(10, 2, 2),
                    "DistributedSampler: rank 2 must be in [0, num_replicas)");
}

TEST(TorchDataLoader, SequentialBatchesOptionsAndDropLast) {
  auto loader = make_data_loader<samplers::SequentialSampler>(Numbers(10), 4);  // a batch size converts to options
  EXPECT_EQ(loader->options().batch_size, 4u);
  EXPECT_EQ(epoch(*loader), (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  EXPECT_EQ(epoch(*loader), (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));  // each range-for: a new epoch

  auto stacked = make_data_loader(Numbers(10).map(transforms::Stack<>()), samplers::SequentialSampler(10),
                                  DataLoaderOptions().batch_size(3).drop_last(true));
  EXPECT_EQ(epoch(*stacked), (Batches{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}));

  // Values from libtorch 1.13: manual_seed(7), Stack, batch 3, drop_last, two workers.
  torch::manual_seed(7);
  auto random = make_data_loader(Numbers(10).map(transforms::Stack<>()),
                                 DataLoaderOptions().batch_size(3).drop_last(true).workers(2));
  EXPECT_EQ(epoch(*random), (Batches{{1, 8, 9}, {5, 7, 4}, {0, 3, 6}}));

  EXPECT_THROW_WITH(make_data_loader(Numbers(10), DataLoaderOptions().batch_size(0)),
                    "DataLoader: batch_size must be positive, got 0");
}

TEST(TorchDataLoader, WorkersGiveTheMainThreadsBatchesInOrder) {
  for (size_t batch_size : {1, 7}) {
    auto main_thread = make_data_loader(Numbers(50).map(transforms::Stack<>()), batch_size);
    Numbers slow(50);
    slow.delay = std::chrono::milliseconds(1);
    auto workers = make_data_loader(std::move(slow).map(transforms::Stack<>()),
                                    DataLoaderOptions().batch_size(batch_size).workers(2));
    for (int e = 0; e < 2; ++e) {
      std::vector<std::vector<float>> data_main, data_workers;
      Batches targets_main, targets_workers;
      torch::manual_seed(10 + e);  // the same permutation for both
      for (auto& b : *main_thread) {
        data_main.push_back(b.data.to_vector<float>());
        targets_main.push_back(b.target.to_vector<int64_t>());
      }
      torch::manual_seed(10 + e);
      for (auto& b : *workers) {
        data_workers.push_back(b.data.to_vector<float>());
        targets_workers.push_back(b.target.to_vector<int64_t>());
      }
      EXPECT_EQ(targets_workers, targets_main) << "batch size " << batch_size << ", epoch " << e;
      EXPECT_EQ(data_workers, data_main);
      EXPECT_EQ(targets_main.size(), (50 + batch_size - 1) / batch_size);
    }
  }
  // Without enforce_ordering every example still comes once.
  auto unordered = make_data_loader(Numbers(30), DataLoaderOptions().batch_size(4).workers(3).enforce_ordering(false));
  std::multiset<int64_t> seen;
  for (auto& batch : epoch(*unordered)) seen.insert(batch.begin(), batch.end());
  std::multiset<int64_t> all;
  for (int64_t i = 0; i < 30; ++i) all.insert(i);
  EXPECT_EQ(seen, all);
}

TEST(TorchDataLoader, DestroyedMidEpochJoinsItsWorkers) {
  for (size_t workers : {1, 3}) {
    Numbers slow(1000);
    slow.delay = std::chrono::milliseconds(2);
    auto loader = make_data_loader(slow, DataLoaderOptions().batch_size(4).workers(workers));
    int taken = 0;
    for (auto& batch : *loader) {
      EXPECT_EQ(batch.size(), 4u);
      if (++taken == 3) break;
    }
    const auto start = std::chrono::steady_clock::now();
    loader.reset();  // waits only for the batches being made
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  }
  // A loader left mid-epoch starts the next epoch afresh.
  auto loader =
      make_data_loader<samplers::SequentialSampler>(Numbers(10), DataLoaderOptions().batch_size(4).workers(2));
  for (auto& batch : *loader) {
    EXPECT_EQ(batch[0].target.item<int64_t>(), 0);
    break;
  }
  EXPECT_EQ(epoch(*loader), (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
}

TEST(TorchDataLoader, TimeoutWaitingForAWorker) {
  Numbers slow(4);
  slow.delay = std::chrono::milliseconds(300);
  auto loader =
      make_data_loader(slow, DataLoaderOptions().batch_size(2).workers(1).timeout(std::chrono::milliseconds(10)));
  EXPECT_THROW_WITH(epoch(*loader), "DataLoader: timeout while waiting for the next batch (timeout was 10 ms)");
}

// Throws at example 5.
struct Faulty : datasets::Dataset<Faulty> {
  Example<> get(size_t i) override {
    if (i == 5) throw std::runtime_error("no example 5 here");
    return {torch::zeros({1}), torch::tensor(int64_t(i))};
  }
  torch::optional<size_t> size() const override { return 8; }
};

TEST(TorchDataLoader, AWorkersExceptionReachesTheLoop) {
  auto loader = make_data_loader<samplers::SequentialSampler>(Faulty(), DataLoaderOptions().batch_size(2).workers(2));
  int batches = 0;
  try {
    for (auto& batch : *loader) {
      (void)batch;
      ++batches;
    }
    ADD_FAILURE() << "expected a WorkerException";
  } catch (const WorkerException& e) {
    EXPECT_NE(
        std::string(e.what()).find("Caught exception in DataLoader worker thread. Original message: no example 5 here"),
        std::string::npos)
        << e.what();
    EXPECT_THROW(std::rethrow_exception(e.original_exception), std::runtime_error);
  }
  EXPECT_EQ(batches, 2);  // batches {0, 1} and {2, 3}; {4, 5} failed
  // Without workers the exception itself comes through.
  auto main_thread = make_data_loader<samplers::SequentialSampler>(Faulty(), 2);
  EXPECT_THROW(epoch(*main_thread), std::runtime_error);
}

// Counts to `limit` in batches, then ends the epoch; reset() starts again.
struct Counter : datasets::StatefulDataset<Counter, std::vector<int64_t>> {
  int64_t next = 0, limit;
  std::mutex mu;
  explicit Counter(int64_t limit) : limit(limit) {}
  Counter(const Counter& o) : next(o.next), limit(o.limit) {}
  torch::optional<std::vector<int64_t>> get_batch(size_t batch_size) override {
    std::lock_guard<std::mutex> lock(mu);
    if (next >= limit) return torch::nullopt;
    std::vector<int64_t> batch;
    for (size_t i = 0; i < batch_size && next < limit; ++i) batch.push_back(next++);
    return batch;
  }
  torch::optional<size_t> size() const override { return size_t(limit); }
  void reset() override { next = 0; }
  void save(torch::serialize::OutputArchive&) const override {}
  void load(torch::serialize::InputArchive&) override {}
};

TEST(TorchDataLoader, StatefulDatasetEndsItsEpoch) {
  for (size_t workers : {0, 2}) {
    auto loader = make_data_loader(Counter(7), DataLoaderOptions().batch_size(3).workers(workers));
    for (int e = 0; e < 2; ++e) {
      std::multiset<int64_t> seen;
      for (auto& batch : *loader) seen.insert(batch.begin(), batch.end());
      EXPECT_EQ(seen, (std::multiset<int64_t>{0, 1, 2, 3, 4, 5, 6})) << workers << " workers";
    }
  }
}

}  // namespace
