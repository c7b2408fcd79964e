// libtorch's torch::data API in kiln: MNIST read from IDX files (raw, gzip, Fashion-MNIST where
// installed), Example, the dataset interfaces and .map(), the transforms (Normalize, Stack,
// Lambda), the samplers (RandomSampler drawing libtorch's order after manual_seed), and
// make_data_loader with and without worker threads: order, drop_last, a loader destroyed
// mid-epoch, a worker's exception, and the data part of libtorch's MNIST example.
#include <gtest/gtest.h>
#include <kiln/torch.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "expect_error.h"

namespace {

using namespace torch::data;  // as libtorch programs write it
using kiln::Tensor;
using Bytes = std::vector<uint8_t>;

// An IDX ubyte file: magic (0, 0, 0x08, rank), big-endian uint32 dims, the bytes.
Bytes idx_ubyte(const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes out = {0, 0, 0x08, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(d >> shift));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// A temporary folder holding an MNIST layout of `n` images of 2 x 3 pixels (pixel p of image i is
// 10 * i + p) and labels i % 10, per split, raw or gzip-compressed.
class MnistFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kiln_torch_data_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& name, const Bytes& bytes, bool gzip) {
    const std::string path = dir_ + "/" + name + (gzip ? ".gz" : "");
    if (!gzip) {
      std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      return;
    }
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
    gzclose(f);
  }
  void write_split(const std::string& split, uint32_t n, bool gzip, uint32_t labels = 0) {
    Bytes pixels, targets;
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t p = 0; p < 6; ++p) pixels.push_back(uint8_t(10 * i + p));
      targets.push_back(uint8_t(i % 10));
    }
    if (labels == 0) labels = n;
    targets.resize(labels, 1);
    write(split + "-images-idx3-ubyte", idx_ubyte({n, 2, 3}, pixels), gzip);
    write(split + "-labels-idx1-ubyte", idx_ubyte({labels}, targets), gzip);
  }

  std::string dir_;
};

std::vector<float> floats(const Tensor& t) { return t.contiguous().to_vector<float>(); }
std::vector<int64_t> longs(const Tensor& t) { return t.contiguous().to_vector<int64_t>(); }

// --- MNIST ---

TEST_F(MnistFiles, ReadsTheSplitsRawAndGzip) {
  write_split("train", 5, /*gzip=*/false);
  write_split("t10k", 3, /*gzip=*/true);
  datasets::MNIST train(dir_, datasets::MNIST::Mode::kTrain);
  datasets::MNIST test(dir_, datasets::MNIST::Mode::kTest);
  EXPECT_TRUE(train.is_train());
  EXPECT_FALSE(test.is_train());
  ASSERT_EQ(train.size(), std::optional<size_t>(5));
  ASSERT_EQ(test.size().value(), 3u);
  EXPECT_EQ(train.images().sizes().vec(), (std::vector<int64_t>{5, 1, 2, 3}));
  EXPECT_EQ(train.images().dtype(), kiln::kFloat);
  EXPECT_EQ(train.targets().dtype(), kiln::kLong);
  EXPECT_EQ(longs(test.targets()), (std::vector<int64_t>{0, 1, 2}));

  Example<> e = test.get(2);
  EXPECT_EQ(e.data.sizes().vec(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(e.target.dim(), 0);
  EXPECT_EQ(e.target.item<int64_t>(), 2);
  const std::vector<float> pixels = floats(e.data);
  for (int p = 0; p < 6; ++p) EXPECT_FLOAT_EQ(pixels[p], float(20 + p) / 255.0f);
  EXPECT_EQ(datasets::MNIST(dir_).size().value(), 5u);  // kTrain is the default
}

TEST_F(MnistFiles, ErrorsNameTheFileAndTheFault) {
  EXPECT_THROW_WITH((void)datasets::MNIST(dir_), dir_ + "/train-images-idx3-ubyte");
  EXPECT_THROW_WITH((void)datasets::MNIST(dir_, datasets::MNIST::Mode::kTest), "MNIST(\"" + dir_ + "\", kTest)");
  write_split("train", 4, false, /*labels=*/3);
  EXPECT_THROW_WITH((void)datasets::MNIST(dir_),
                    "holds 4 images [4, 2, 3] but " + dir_ + "/train-labels-idx1-ubyte holds 3");
  write_split("t10k", 2, false);
  datasets::MNIST test(dir_, datasets::MNIST::Mode::kTest);
  EXPECT_THROW_WITH(test.get(2), "MNIST::get: index 2 is out of range for 2 examples (images [2, 1, 2, 3])");
}

// Values from libtorch 1.13's MNIST over the same files, uncompressed.
TEST(TorchDataMnist, FashionMnistAsLibtorchReadsIt) {
  const std::string dir = kiln::data::fashion_mnist_dir();
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz") &&
      !std::filesystem::exists(dir + "/train-images-idx3-ubyte"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  datasets::MNIST train(dir), test(dir, datasets::MNIST::Mode::kTest);
  EXPECT_EQ(train.size().value(), 60000u);
  EXPECT_EQ(test.size().value(), 10000u);
  EXPECT_EQ(train.get(0).data.sizes().vec(), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(longs(train.targets().narrow(0, 0, 10)), (std::vector<int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  EXPECT_EQ(longs(test.targets().narrow(0, 0, 10)), (std::vector<int64_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
  EXPECT_NEAR(train.get(0).data.sum().item<float>(), 299.007874f, 1e-3);
  EXPECT_NEAR(test.get(9999).data.sum().item<float>(), 95.6470566f, 1e-3);
  EXPECT_NEAR(train.images().mean().item<double>(), 0.286040574, 1e-6);

  // A shuffled, normalized, stacked epoch with two workers, as libtorch gave it after manual_seed(1).
  torch::manual_seed(1);
  auto loader =
      make_data_loader(std::move(test).map(transforms::Normalize<>(0.2860, 0.3530)).map(transforms::Stack<>()),
                       DataLoaderOptions().batch_size(64).workers(2));
  int batches = 0;
  for (auto& batch : *loader) {
    if (batches == 0) {
      EXPECT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{64, 1, 28, 28}));
      EXPECT_EQ(longs(batch.target.narrow(0, 0, 8)), (std::vector<int64_t>{9, 3, 6, 2, 0, 2, 2, 2}));
      EXPECT_NEAR(batch.data.sum().item<double>(), 335.057709, 0.05);
    }
    if (batches == 1) {
      EXPECT_EQ(longs(batch.target.narrow(0, 0, 8)), (std::vector<int64_t>{0, 4, 9, 6, 2, 1, 4, 7}));
      EXPECT_NEAR(batch.data.sum().item<double>(), -23.5712681, 0.05);
    }
    ++batches;
  }
  EXPECT_EQ(batches, 157);
}

// --- datasets, examples, transforms ---

// Example i: data [2] filled with i, target i.
struct Numbers : datasets::Dataset<Numbers> {
  size_t n;
  explicit Numbers(size_t n) : n(n) {}
  Example<> get(size_t i) override { return {torch::full({2}, double(i)), torch::tensor(int64_t(i))}; }
  torch::optional<size_t> size() const override { return n; }
};

TEST(TorchDataDatasets, ExampleBatchAndMap) {
  Example<> e(torch::ones({2}), torch::tensor(int64_t(3)));
  EXPECT_EQ(e.target.item<int64_t>(), 3);
  TensorExample t(torch::zeros({4}));
  Tensor& as_tensor = t;
  EXPECT_EQ(as_tensor.size(0), 4);
  static_assert(!Numbers::is_stateful, "a Dataset is stateless");

  Numbers numbers(6);
  std::vector<Example<>> batch = numbers.get_batch({4, 1});
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].target.item<int64_t>(), 4);
  EXPECT_EQ(batch[1].target.item<int64_t>(), 1);

  // Chained maps: a per-example Lambda, a TensorLambda on the data, then Stack.
  auto mapped = numbers
                    .map(transforms::Lambda<Example<>>([](Example<> x) {
                      x.target = x.target * 10;
                      return x;
                    }))
                    .map(transforms::TensorLambda<>([](Tensor x) { return x + 0.5; }))
                    .map(transforms::Stack<>());
  EXPECT_EQ(mapped.size().value(), 6u);
  Example<> stacked = mapped.get_batch(std::vector<size_t>{2, 5, 0});
  EXPECT_EQ(stacked.data.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(floats(stacked.data), (std::vector<float>{2.5f, 2.5f, 5.5f, 5.5f, 0.5f, 0.5f}));
  EXPECT_EQ(longs(stacked.target), (std::vector<int64_t>{20, 50, 0}));

  // TensorDataset and Stack<TensorExample>.
  auto tensors =
      datasets::TensorDataset(torch::arange(12, torch::kFloat).reshape({4, 3})).map(transforms::Stack<TensorExample>());
  TensorExample rows = tensors.get_batch({3, 0});
  EXPECT_EQ(floats(rows.data), (std::vector<float>{9, 10, 11, 0, 1, 2}));

  // A BatchLambda (Collate) over the whole vector.
  auto count = numbers.map(transforms::Collate<Example<>>([](std::vector<Example<>> xs) {
    return Example<>(torch::tensor(int64_t(xs.size())), torch::tensor(int64_t(0)));
  }));
  EXPECT_EQ(count.get_batch({1, 2, 3}).data.item<int64_t>(), 3);
}

// Values from libtorch 1.13: Normalize<>(0.1307, 0.3081) and Normalize<>({0.5, 0.25}, {0.2, 0.4})
// of arange(8).view({2, 2, 2}) / 7.
TEST(TorchDataTransforms, NormalizeAsLibtorch) {
  Tensor x = torch::arange(8, torch::kFloat).view({2, 2, 2}) / 7;
  const std::vector<float> scalar = {-0.424212962f, 0.0394584313f, 0.50312984f, 0.966801107f,
                                     1.43047261f,   1.89414406f,   2.35781527f, 2.82148671f};
  const std::vector<float> per_channel = {-2.5f,        -1.78571427f, -1.07142854f, -0.357142836f,
                                          0.803571463f, 1.16071427f,  1.51785719f,  1.875f};
  const std::vector<float> a = floats(transforms::Normalize<>(0.1307, 0.3081)(x));
  const std::vector<float> b = floats(transforms::Normalize<>({0.5, 0.25}, {0.2, 0.4})(x));
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_NEAR(a[i], scalar[i], 1e-6) << i;
    EXPECT_NEAR(b[i], per_channel[i], 1e-6) << i;
  }
  transforms::Normalize<> norm(0.5, 2.0);
  EXPECT_EQ(norm.mean.sizes().vec(), (std::vector<int64_t>{1, 1, 1}));
  // Through apply(): the target passes through.
  Example<> e = norm.apply({torch::ones({1, 2, 2}), torch::tensor(int64_t(7))});
  EXPECT_EQ(floats(e.data), (std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f}));
  EXPECT_EQ(e.target.item<int64_t>(), 7);
  EXPECT_THROW_WITH(transforms::Normalize<>(std::vector<double>{}, 1.0), "Normalize: mean must hold one value");
}

TEST(TorchDataTransforms, StackShapesAndErrors) {
  std::vector<Example<>> examples;
  for (int i = 0; i < 3; ++i) examples.push_back({torch::zeros({1, 4, 5}), torch::tensor(int64_t(i))});
  Example<> batch = transforms::Stack<>().apply_batch(examples);
  EXPECT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{3, 1, 4, 5}));
  EXPECT_EQ(batch.target.sizes().vec(), (std::vector<int64_t>{3}));
  examples.push_back({torch::zeros({1, 4, 6}), torch::tensor(int64_t(3))});
  EXPECT_THROW_WITH(transforms::Stack<>().apply_batch(examples),
                    "Stack: example 3 has data of shape [1, 4, 6] but example 0 has data of shape [1, 4, 5]");
  examples.back() = {torch::zeros({1, 4, 5}), torch::zeros({2})};
  EXPECT_THROW_WITH(transforms::Stack<>().apply_batch(examples), "example 3 has target of shape [2]");
  EXPECT_THROW_WITH(transforms::Stack<>().apply_batch({}), "Stack: cannot collate an empty batch");
}

// --- the data part of libtorch's MNIST example (examples/cpp/mnist), with a linear model ---

template <typename DataLoader>
double train_epoch(torch::nn::Linear& model, torch::Device device, DataLoader& data_loader,
                   torch::optim::Optimizer& optimizer, size_t dataset_size) {
  model->train();
  size_t batch_idx = 0, seen = 0;
  double last_loss = 0;
  for (auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = torch::log_softmax(model->forward(data.flatten(1)), /*dim=*/1);
    auto loss = torch::nll_loss(output, targets);
    EXPECT_FALSE(std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();
    ++batch_idx;
    seen += size_t(batch.data.size(0));
    last_loss = loss.template item<float>();
  }
  EXPECT_EQ(seen, dataset_size);
  EXPECT_EQ(batch_idx, (dataset_size + 3) / 4);
  return last_loss;
}

TEST_F(MnistFiles, CanonicalMnistExampleDataPart) {
  write_split("train", 10, /*gzip=*/true);
  write_split("t10k", 6, /*gzip=*/false);
  const std::string kDataRoot = dir_;
  torch::manual_seed(1);
  torch::Device device(torch::kCPU);
  torch::nn::Linear model(6, 10);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));

  auto train_dataset = torch::data::datasets::MNIST(kDataRoot)
                           .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                           .map(torch::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(train_dataset),
                                                                                              /*kTrainBatchSize=*/4);

  auto test_dataset = torch::data::datasets::MNIST(kDataRoot, torch::data::datasets::MNIST::Mode::kTest)
                          .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                          .map(torch::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  auto test_loader = torch::data::make_data_loader(std::move(test_dataset), /*kTestBatchSize=*/1000);

  for (size_t epoch = 1; epoch <= 2; ++epoch) train_epoch(model, device, *train_loader, optimizer, train_dataset_size);

  torch::NoGradGuard no_grad;
  model->eval();
  double test_loss = 0;
  int32_t correct = 0;
  for (const auto& batch : *test_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = torch::log_softmax(model->forward(data.flatten(1)), 1);
    test_loss += torch::nn::functional::nll_loss(output, targets,
                                                 torch::nn::functional::NLLLossFuncOptions().reduction(torch::kSum))
                     .template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
    EXPECT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{6, 1, 2, 3}));
  }
  EXPECT_EQ(test_dataset_size, 6u);
  EXPECT_TRUE(std::isfinite(test_loss));
  EXPECT_GE(correct, 0);
}

}  // namespace
