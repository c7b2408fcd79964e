// Data support: IDX files read back (raw and gzip, each element type, big-endian to host order),
// the errors for missing and malformed files, image/label pairs as tensors, the DataLoader's
// batching and seeded shuffling, and Fashion-MNIST itself where dataset-fashion-mnist is installed.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "expect_error.h"
#include "runtime/config.h"

namespace {

using kiln::Tensor;
using kiln::data::Batch;
using kiln::data::DataLoader;
using kiln::data::IdxArray;

using Bytes = std::vector<uint8_t>;

// An IDX file's bytes: the magic (0, 0, type, rank), big-endian uint32 dims, then `payload`
// (already big-endian).
Bytes idx_bytes(uint8_t type_code, const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes out = {0, 0, type_code, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(d >> shift));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// Big-endian bytes of each value.
template <typename T>
Bytes big_endian(const std::vector<T>& values) {
  Bytes out;
  for (T v : values) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    for (int i = int(sizeof(T)) - 1; i >= 0; --i) out.push_back(b[i]);  // the tests run on little-endian hosts
  }
  return out;
}

// A temporary folder, removed with its files at the end of each test.
class IdxFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kiln_data_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write_raw(const std::string& name, const Bytes& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return path;
  }
  std::string write_gzip(const std::string& name, const Bytes& bytes) {
    const std::string path = dir_ + "/" + name;
    gzFile f = gzopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
    gzclose(f);
    return path;
  }
  // The first `keep` bytes of a file, rewritten in place.
  void cut(const std::string& path, size_t keep) { std::filesystem::resize_file(path, keep); }

  std::string dir_;
};

// --- reading IDX files ---

TEST_F(IdxFiles, ReadsUbyteRank3RawAndGzip) {
  Bytes pixels(2 * 3 * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t(i * 10);
  const Bytes file = idx_bytes(0x08, {2, 3, 4}, pixels);
  for (const std::string& path : {write_raw("images-idx3-ubyte", file), write_gzip("images-idx3-ubyte.gz", file)}) {
    const IdxArray a = kiln::data::read_idx(path);
    EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 3, 4})) << path;
    EXPECT_EQ(a.type_code, 0x08);
    EXPECT_EQ(a.numel(), 24);
    EXPECT_EQ(a.data, pixels) << path;
  }
}

TEST_F(IdxFiles, ConvertsIntFloatDoubleShortToHostOrder) {
  const std::vector<int32_t> ints = {1, -2, 0x01020304, -100000};
  const IdxArray i = kiln::data::read_idx(write_gzip("ints.gz", idx_bytes(0x0C, {4}, big_endian(ints))));
  ASSERT_EQ(i.dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(std::vector<int32_t>(i.as<int32_t>(), i.as<int32_t>() + 4), ints);

  const std::vector<float> floats = {0.5f, -1.25f, 3e7f};
  const IdxArray f = kiln::data::read_idx(write_raw("floats", idx_bytes(0x0D, {3, 1}, big_endian(floats))));
  ASSERT_EQ(f.dims, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(std::vector<float>(f.as<float>(), f.as<float>() + 3), floats);

  const std::vector<double> doubles = {1.0 / 3, -2.5};
  const IdxArray d = kiln::data::read_idx(write_raw("doubles", idx_bytes(0x0E, {2}, big_endian(doubles))));
  EXPECT_EQ(std::vector<double>(d.as<double>(), d.as<double>() + 2), doubles);

  const std::vector<int16_t> shorts = {-3, 0x0102};
  const IdxArray s = kiln::data::read_idx(write_raw("shorts", idx_bytes(0x0B, {2}, big_endian(shorts))));
  EXPECT_EQ(std::vector<int16_t>(s.as<int16_t>(), s.as<int16_t>() + 2), shorts);

  const IdxArray b = kiln::data::read_idx(write_raw("sbytes", idx_bytes(0x09, {2}, {0xff, 0x7f})));
  EXPECT_EQ(b.as<int8_t>()[0], -1);
  EXPECT_EQ(b.as<int8_t>()[1], 127);
}

TEST_F(IdxFiles, ErrorsNameTheFileAndTheFault) {
  const std::string missing = dir_ + "/nothing-here";
  EXPECT_THROW(kiln::data::read_idx(missing), kiln::Error);
  EXPECT_THROW_WITH(kiln::data::read_idx(missing), missing + ": no such file");

  const std::string bad_magic = write_raw("bad-magic", {0x12, 0x34, 0x08, 0x01, 0, 0, 0, 0});
  EXPECT_THROW_WITH(kiln::data::read_idx(bad_magic), bad_magic + ": bad magic");

  const std::string unknown = write_gzip("unknown.gz", idx_bytes(0x0A, {1}, {7}));
  EXPECT_THROW_WITH(kiln::data::read_idx(unknown), unknown + ": unknown type code 0xa");

  const std::string rank0 = write_raw("rank0", {0, 0, 0x08, 0});
  EXPECT_THROW_WITH(kiln::data::read_idx(rank0), rank0 + ": rank 0 is not supported");
  const std::string rank9 = write_raw("rank9", idx_bytes(0x08, std::vector<uint32_t>(9, 1), {1}));
  EXPECT_THROW_WITH(kiln::data::read_idx(rank9), "rank 9 is not supported");

  const std::string short_header = write_raw("short-header", {0, 0});
  EXPECT_THROW_WITH(kiln::data::read_idx(short_header), short_header + ": raw file is too short");
  const std::string cut_dims = write_raw("cut-dims", {0, 0, 0x08, 3, 0, 0, 0, 2});
  EXPECT_THROW_WITH(kiln::data::read_idx(cut_dims), "ends inside the header");

  const std::string extra = write_raw("extra", idx_bytes(0x08, {2}, {1, 2, 3, 4, 5}));
  EXPECT_THROW_WITH(kiln::data::read_idx(extra), extra + ": 3 extra bytes");
}

TEST_F(IdxFiles, TruncatedRawAndGzipFilesAreErrors) {
  const Bytes file = idx_bytes(0x0C, {100}, big_endian(std::vector<int32_t>(100, 7)));

  // Raw: the header promises 400 data bytes, the file holds 200.
  const std::string raw = write_raw("truncated", Bytes(file.begin(), file.end() - 200));
  EXPECT_THROW_WITH(kiln::data::read_idx(raw), raw + ": raw file is truncated");
  EXPECT_THROW_WITH(kiln::data::read_idx(raw), "need 400 data bytes, got 200");

  // Gzip, data missing: a complete stream of too few bytes.
  const std::string short_gz = write_gzip("short.gz", Bytes(file.begin(), file.end() - 4));
  EXPECT_THROW_WITH(kiln::data::read_idx(short_gz), short_gz + ": gzip file is truncated");

  // Gzip, stream cut: the compressed file loses its tail (and with it the data's end or trailer).
  Bytes noise(4000);
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = uint8_t((i * 2654435761u) >> 13);  // compresses poorly
  const std::string cut_gz = write_gzip("cut.gz", idx_bytes(0x08, {4000}, noise));
  cut(cut_gz, std::filesystem::file_size(cut_gz) / 2);
  EXPECT_THROW_WITH(kiln::data::read_idx(cut_gz), cut_gz + ": gzip file is truncated");

  // Gzip with only its trailer cut: all data arrives, the stream still ends early.
  const std::string cut_trailer = write_gzip("cut-trailer.gz", file);
  cut(cut_trailer, std::filesystem::file_size(cut_trailer) - 4);
  EXPECT_THROW_WITH(kiln::data::read_idx(cut_trailer), cut_trailer + ": gzip file is truncated after its data");

  // Gzip with damaged content: zlib's own error comes through.
  const std::string damaged = write_gzip("damaged.gz", idx_bytes(0x08, {4000}, noise));
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(std::filesystem::file_size(damaged) / 2));
    const char garbage[16] = {'\x55', '\x55', '\x55', '\x55', '\x55', '\x55', '\x55', '\x55',
                              '\x55', '\x55', '\x55', '\x55', '\x55', '\x55', '\x55', '\x55'};
    f.write(garbage, sizeof(garbage));
  }
  EXPECT_THROW_WITH(kiln::data::read_idx(damaged), damaged + ": gzip file is corrupt (zlib: ");
}

// Dimensions whose product overflows are refused even where a 0 makes the data empty: numel() and
// any strides taken from them would overflow.
TEST_F(IdxFiles, DimensionsWhoseProductOverflowsAreErrorsEvenWithAZero) {
  const std::string path = write_raw("overflow", idx_bytes(0x08, {0xffffffff, 0xffffffff, 0}, {}));
  EXPECT_THROW_WITH(kiln::data::read_idx(path), path + ": dimensions [4294967295, 4294967295, 0] are too large");
  const std::string fits = write_raw("fits", idx_bytes(0x08, {0, 0xffffffff, 0x7fffffff}, {}));
  EXPECT_EQ(kiln::data::read_idx(fits).numel(), 0);
}

// gzip members one after another make one file, as gzip -d reads them; other bytes after the last
// member are an error (zlib's gzread ignored them).
TEST_F(IdxFiles, GzipMembersFollowOneAnotherAndNothingElseFollowsThem) {
  const Bytes file = idx_bytes(0x08, {6}, {1, 2, 3, 4, 5, 6});
  const std::string first = write_gzip("first.gz", Bytes(file.begin(), file.begin() + 7));
  const std::string second = write_gzip("second.gz", Bytes(file.begin() + 7, file.end()));
  std::ifstream a(first, std::ios::binary), b(second, std::ios::binary);
  std::ofstream(dir_ + "/two-members.gz", std::ios::binary) << a.rdbuf() << b.rdbuf();
  EXPECT_EQ(kiln::data::read_idx(dir_ + "/two-members.gz").data, Bytes({1, 2, 3, 4, 5, 6}));

  const std::string trailing = write_gzip("trailing.gz", file);
  std::ofstream(trailing, std::ios::binary | std::ios::app) << "garbage";
  EXPECT_THROW_WITH(kiln::data::read_idx(trailing), trailing + ": 7 bytes after the gzip stream are not gzip data");
}

TEST_F(IdxFiles, FindIdxFilePrefersGzipAndNamesBothPathsWhenMissing) {
  write_raw("stem", idx_bytes(0x08, {1}, {1}));
  EXPECT_EQ(kiln::data::find_idx_file(dir_, "stem"), dir_ + "/stem");
  write_gzip("stem.gz", idx_bytes(0x08, {1}, {1}));
  EXPECT_EQ(kiln::data::find_idx_file(dir_, "stem"), dir_ + "/stem.gz");

  EXPECT_THROW(kiln::data::find_idx_file(dir_, "absent"), kiln::Error);
  EXPECT_THROW_WITH(kiln::data::find_idx_file(dir_, "absent"), dir_ + "/absent.gz nor " + dir_ + "/absent");
  EXPECT_THROW_WITH(kiln::data::find_idx_file(dir_, "absent"), "apt-get install dataset-fashion-mnist");
  EXPECT_THROW_WITH(kiln::data::load_fashion_mnist(dir_, true), "train-images-idx3-ubyte");
}

TEST(IdxDir, FashionMnistDirFollowsKilnDataDir) {
  const std::string before = kiln::config().data_dir;
  if (!std::getenv("KILN_DATA_DIR")) {
    EXPECT_EQ(before, "/usr/share/datasets/fashion-mnist");
  }
  kiln::config().data_dir = "/somewhere/else";  // what KILN_DATA_DIR=/somewhere/else sets
  EXPECT_EQ(kiln::data::fashion_mnist_dir(), "/somewhere/else");
  kiln::config().data_dir = before;
}

// --- image/label pairs as tensors ---

TEST_F(IdxFiles, LoadIdxPairMakesScaledImagesAndLongLabels) {
  const Bytes pixels = {0, 255, 51, 102, /* image 2 */ 255, 255, 0, 0, /* image 3 */ 1, 2, 3, 4};
  const std::string images = write_gzip("images.gz", idx_bytes(0x08, {3, 2, 2}, pixels));
  const std::string labels = write_raw("labels", idx_bytes(0x08, {3}, {9, 0, 4}));
  const kiln::data::Dataset ds = kiln::data::load_idx_pair(images, labels);
  EXPECT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.images.sizes().vec(), (std::vector<int64_t>{3, 1, 2, 2}));
  EXPECT_EQ(ds.images.dtype(), kiln::kFloat);
  EXPECT_EQ(ds.labels.dtype(), kiln::kLong);
  const auto values = ds.images.to_vector<float>();
  for (size_t i = 0; i < pixels.size(); ++i) EXPECT_FLOAT_EQ(values[i], pixels[i] / 255.0f);
  EXPECT_EQ(ds.labels.to_vector<int64_t>(), (std::vector<int64_t>{9, 0, 4}));
}

TEST_F(IdxFiles, LoadIdxPairErrors) {
  const std::string images = write_raw("images", idx_bytes(0x08, {3, 2, 2}, Bytes(12, 1)));
  const std::string two_labels = write_raw("two-labels", idx_bytes(0x08, {2}, {1, 2}));
  EXPECT_THROW(kiln::data::load_idx_pair(images, two_labels), kiln::Error);
  EXPECT_THROW_WITH(kiln::data::load_idx_pair(images, two_labels),
                    "holds 3 images [3, 2, 2] but " + two_labels + " holds 2 labels [2]");

  const std::string bad_label = write_raw("bad-label", idx_bytes(0x08, {3}, {1, 10, 2}));
  EXPECT_THROW_WITH(kiln::data::load_idx_pair(images, bad_label),
                    bad_label + ": label 10 at index 1 is outside [0, 10)");

  const std::string flat_images = write_raw("flat", idx_bytes(0x08, {3, 4}, Bytes(12, 1)));
  EXPECT_THROW_WITH(kiln::data::load_idx_pair(flat_images, bad_label), flat_images + ": expected images of rank 3");
  const std::string int_labels =
      write_raw("int-labels", idx_bytes(0x0C, {3}, big_endian(std::vector<int32_t>{1, 2, 3})));
  EXPECT_THROW_WITH(kiln::data::load_idx_pair(images, int_labels), int_labels + ": expected labels of rank 1, ubyte");
}

// --- DataLoader ---

// Inputs [n, 2] with row i = (i, -i), targets = arange(n): a batch's targets say which rows it holds.
struct Numbered {
  Tensor inputs, targets;
  explicit Numbered(int64_t n) {
    std::vector<float> rows;
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < n; ++i) {
      rows.insert(rows.end(), {float(i), -float(i)});
      labels.push_back(i);
    }
    inputs = kiln::tensor(rows).reshape({n, 2});  // host data: no kernel to compile for the inputs
    targets = kiln::tensor(labels);
  }
};

std::vector<int64_t> epoch_targets(DataLoader& loader, std::vector<int64_t>* batch_sizes = nullptr) {
  std::vector<int64_t> seen;
  for (auto& batch : loader) {
    const auto t = batch.target.to_vector<int64_t>();
    const auto x = batch.data.to_vector<float>();
    EXPECT_EQ(batch.data.size(0), batch.target.size(0));
    for (size_t r = 0; r < t.size(); ++r) EXPECT_EQ(x[2 * r], float(t[r]));  // inputs and targets stay paired
    if (batch_sizes) batch_sizes->push_back(batch.target.size(0));
    seen.insert(seen.end(), t.begin(), t.end());
  }
  return seen;
}

TEST(DataLoader, BatchesInOrderWithALastPartialBatch) {
  Numbered d(10);
  DataLoader loader(d.inputs, d.targets, 4, /*shuffle=*/false, /*seed=*/0);
  EXPECT_EQ(loader.num_batches(), 3);
  std::vector<int64_t> sizes;
  std::vector<int64_t> expected(10);
  for (int64_t i = 0; i < 10; ++i) expected[i] = i;
  EXPECT_EQ(epoch_targets(loader, &sizes), expected);
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  const Batch last = loader.batch(2);
  EXPECT_EQ(last.data.sizes().vec(), (std::vector<int64_t>{2, 2}));
}

TEST(DataLoader, DropLastDropsThePartialBatch) {
  Numbered d(10);
  DataLoader loader(d.inputs, d.targets, 4, /*shuffle=*/true, /*seed=*/3, /*drop_last=*/true);
  EXPECT_EQ(loader.num_batches(), 2);
  std::vector<int64_t> sizes;
  EXPECT_EQ(epoch_targets(loader, &sizes).size(), 8u);
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4}));
  DataLoader exact(d.inputs, d.targets, 5, false, 0, true);
  EXPECT_EQ(exact.num_batches(), 2);
}

TEST(DataLoader, ShuffleVisitsEverySampleOncePerEpoch) {
  Numbered d(23);
  DataLoader loader(d.inputs, d.targets, 5, /*shuffle=*/true, /*seed=*/42);
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> sizes;
    auto seen = epoch_targets(loader, &sizes);
    EXPECT_EQ(sizes, (std::vector<int64_t>{5, 5, 5, 5, 3}));
    std::multiset<int64_t> counted(seen.begin(), seen.end());
    for (int64_t i = 0; i < 23; ++i) EXPECT_EQ(counted.count(i), 1u) << "sample " << i << ", epoch " << epoch;
  }
}

TEST(DataLoader, ShuffleIsDeterministicPerSeedAndDiffersAcrossEpochsAndSeeds) {
  Numbered d(50);
  DataLoader a(d.inputs, d.targets, 8, true, 7), b(d.inputs, d.targets, 8, true, 7), c(d.inputs, d.targets, 8, true, 8);
  const auto a0 = epoch_targets(a), a1 = epoch_targets(a);
  const auto b0 = epoch_targets(b), b1 = epoch_targets(b);
  const auto c0 = epoch_targets(c);
  EXPECT_EQ(a0, b0);
  EXPECT_EQ(a1, b1);
  EXPECT_NE(a0, a1);
  EXPECT_NE(a0, c0);
  // Epoch e uses seed + e: seed 8's first epoch is seed 7's second.
  EXPECT_EQ(c0, a1);

  // Index loops: start_epoch() then batch(i) see the same order as a range-for.
  DataLoader e(d.inputs, d.targets, 8, true, 7);
  e.start_epoch();
  EXPECT_EQ(e.epoch(), 0);
  std::vector<int64_t> indexed;
  for (int64_t i = 0; i < e.num_batches(); ++i) {
    const auto t = e.batch(i).target.to_vector<int64_t>();
    indexed.insert(indexed.end(), t.begin(), t.end());
  }
  EXPECT_EQ(indexed, a0);
  EXPECT_EQ(std::vector<int64_t>(e.order().begin(), e.order().end()), a0);
}

TEST(DataLoader, Errors) {
  Numbered d(10);
  EXPECT_THROW(DataLoader(d.inputs, d.targets, 0, false, 0), kiln::Error);
  EXPECT_THROW_WITH(DataLoader(d.inputs, d.targets, 0, false, 0), "DataLoader: batch_size must be positive, got 0");
  EXPECT_THROW_WITH(DataLoader(d.inputs, d.targets, -3, true, 0), "DataLoader: batch_size must be positive");
  EXPECT_THROW_WITH(DataLoader(d.inputs, kiln::arange(9), 4, false, 0),
                    "DataLoader: inputs [10, 2] and targets [9] differ in size along dim 0");
  DataLoader loader(d.inputs, d.targets, 4, false, 0);
  EXPECT_THROW_WITH(loader.batch(3), "DataLoader: batch 3 is out of range");
}

// --- Fashion-MNIST as Debian installs it ---

TEST(DataFashionMnist, TestSplitHas1000ImagesPerClass) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir + "/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const kiln::data::Dataset test = kiln::data::load_fashion_mnist(dir, /*train=*/false);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(test.images.sizes().vec(), (std::vector<int64_t>{10000, 1, 28, 28}));
  std::vector<int64_t> histogram(10, 0);
  for (int64_t label : test.labels.to_vector<int64_t>()) ++histogram.at(size_t(label));
  EXPECT_EQ(histogram, std::vector<int64_t>(10, 1000));
  const auto pixels = test.images.narrow(0, 0, 100).to_vector<float>();  // checked here: no kernel to compile
  EXPECT_GE(*std::min_element(pixels.begin(), pixels.end()), 0.0f);
  EXPECT_LE(*std::max_element(pixels.begin(), pixels.end()), 1.0f);
  EXPECT_GT(*std::max_element(pixels.begin(), pixels.end()), 0.5f);
}

}  // namespace
