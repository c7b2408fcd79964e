// Saving and loading weights as safetensors: round trips through a file, PyTorch's names, files
// written byte for byte as the safetensors library writes them (and read from such bytes), strict
// key checks, malformed files, and an optimizer that keeps working after a load.
#include <kiln/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "nn_test_util.h"
#include "serialize_test_util.h"

namespace nn = kiln::nn;
namespace fs = std::filesystem;
using kiln::Tensor;
using nn_test::expect_error;
using nn_test::expect_values;
using serialize_test::bits;
using serialize_test::read_bytes;
using serialize_test::TempDir;
using serialize_test::write_bytes;

namespace {

// A safetensors file: the header length (little-endian), the header padded to 8 bytes, the data.
std::string safetensors_bytes(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  return out + header + data;
}
template <typename T>
std::string raw(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

nn::Sequential make_mlp(uint64_t seed) {
  kiln::manual_seed(seed);
  nn::LayerNorm norm(nn::LayerNormOptions({8}));
  {
    kiln::NoGradGuard no_grad;  // LayerNorm starts at ones and zeros: give it values to carry
    norm->weight.copy_(kiln::randn({8}));
    norm->bias.copy_(kiln::randn({8}));
  }
  return nn::Sequential(nn::Linear(4, 8), norm, nn::Linear(8, 3));
}

// A module with a parameter of its own, nested children and buffers of three dtypes.
struct NormLikeImpl : nn::Module {
  NormLikeImpl() {
    weight = register_parameter("weight", kiln::randn({3}));
    running_mean = register_buffer("running_mean", kiln::randn({3}));
    num_batches_tracked = register_buffer("num_batches_tracked", kiln::tensor(int64_t(7)));
    mask = register_buffer("mask", kiln::tensor({true, false, true}));
  }
  Tensor weight, running_mean, num_batches_tracked, mask;
};
KILN_MODULE(NormLike);

struct NetImpl : nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", nn::Linear(3, 4));
    block = register_module("block", nn::Sequential(nn::Linear(4, 4), nn::ReLU(), nn::Linear(4, 3)));
    bn = register_module("bn", NormLike());
    scale = register_parameter("scale", kiln::randn({1}));
  }
  nn::Linear fc1{nullptr};
  nn::Sequential block{nullptr};
  NormLike bn{nullptr};
  Tensor scale;
};
KILN_MODULE(Net);

}  // namespace

TEST(Serialize, RoundTripIsBitIdentical) {
  TempDir dir;
  const std::string path = dir.file("mlp.safetensors");
  nn::Sequential saved = make_mlp(1);
  kiln::save(saved, path);

  nn::Sequential loaded = make_mlp(2);
  const auto before = kiln::state_dict(*loaded);
  EXPECT_NE(bits(before["0.weight"]), bits(kiln::state_dict(*saved)["0.weight"]));
  kiln::load(loaded, path);

  const auto want = kiln::state_dict(*saved), got = kiln::state_dict(*loaded);
  EXPECT_EQ(got.keys(), (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"}));
  for (const auto& item : want) {
    ASSERT_TRUE(got.contains(item.key())) << item.key();
    EXPECT_EQ(got[item.key()].sizes(), item.value().sizes()) << item.key();
    EXPECT_EQ(bits(got[item.key()]), bits(item.value())) << item.key();
  }
  Tensor x = kiln::randn({5, 4});
  EXPECT_EQ(bits(loaded->forward(x)), bits(saved->forward(x)));

  // The file says where it came from, and nothing is left beside it.
  kiln::SafetensorsMetadata metadata;
  kiln::load_safetensors(path, &metadata);
  EXPECT_EQ(metadata, (kiln::SafetensorsMetadata{{"format", "pt"}}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 1);
}

TEST(Serialize, NestedNamesAndBuffersAsPyTorchNamesThem) {
  TempDir dir;
  const std::string path = dir.file("net.safetensors");
  kiln::manual_seed(3);
  Net saved;
  const auto state = kiln::state_dict(*saved);
  // Each module's own parameters, then its buffers, then its children's, as PyTorch's state_dict().
  EXPECT_EQ(state.keys(), (std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "block.0.weight", "block.0.bias",
                                                    "block.2.weight", "block.2.bias", "bn.weight", "bn.running_mean",
                                                    "bn.num_batches_tracked", "bn.mask"}));
  EXPECT_FALSE(state["fc1.weight"].requires_grad());  // detached, as PyTorch's state_dict()
  torch::save(saved, path);                           // the libtorch spelling, through <kiln/torch.h>

  kiln::manual_seed(4);
  auto loaded = std::make_shared<NetImpl>();  // a shared_ptr works as well as the holder
  {
    kiln::NoGradGuard no_grad;
    loaded->bn->num_batches_tracked.fill_(0);
    loaded->bn->mask.fill_(false);
  }
  torch::load(loaded, path);
  const auto got = kiln::state_dict(*loaded);
  for (const auto& item : state) {
    EXPECT_EQ(got[item.key()].dtype(), item.value().dtype()) << item.key();
    EXPECT_EQ(bits(got[item.key()]), bits(item.value())) << item.key();
  }
  EXPECT_EQ(loaded->bn->num_batches_tracked.item<int64_t>(), 7);
  EXPECT_EQ(loaded->bn->mask.to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(loaded->bn->num_batches_tracked.dim(), 0);
}

// The safetensors library's own unit tests pin these bytes (serialize, in safetensors/src/tensor.rs):
// kiln must write them exactly and read them back.
TEST(Serialize, WritesAndReadsTheBytesSafetensorsWrites) {
  TempDir dir;
  const std::string header = R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  const std::string expected = safetensors_bytes(header, raw<float>({0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(expected.substr(0, 8), std::string("\x48\0\0\0\0\0\0\0", 8));  // 72: padded with 7 spaces

  kiln::StateDict tensors;
  tensors.insert("attn0", kiln::arange(6, kiln::kFloat).reshape({1, 1, 2, 3}));
  kiln::save_safetensors(tensors, dir.file("written.safetensors"));
  EXPECT_EQ(read_bytes(dir.file("written.safetensors")), expected);

  write_bytes(dir.file("theirs.safetensors"), expected);
  auto loaded = kiln::load_safetensors(dir.file("theirs.safetensors"));
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded["attn0"].sizes().vec(), (std::vector<int64_t>{1, 1, 2, 3}));
  EXPECT_EQ(loaded["attn0"].dtype(), kiln::kFloat);
  expect_values(loaded["attn0"], {0, 1, 2, 3, 4, 5}, 0, 0);

  // No tensors, and metadata: the library's test_empty.
  kiln::save_safetensors(kiln::StateDict(), dir.file("empty.safetensors"), {{"framework", "pt"}});
  EXPECT_EQ(read_bytes(dir.file("empty.safetensors")), safetensors_bytes(R"({"__metadata__":{"framework":"pt"}})", ""));

  // Mixed dtypes: descending dtype alignment (I64, F64, F32, BOOL), then name; no gaps.
  kiln::StateDict mixed;
  mixed.insert("b", kiln::tensor({true, false}));
  mixed.insert("f", kiln::tensor({1.5f}));
  mixed.insert("a", kiln::tensor({2.5f}));
  mixed.insert("d", kiln::tensor({0.25}, kiln::kDouble));
  mixed.insert("i", kiln::tensor({int64_t(-3)}));
  kiln::save_safetensors(mixed, dir.file("mixed.safetensors"));
  EXPECT_EQ(
      read_bytes(dir.file("mixed.safetensors")),
      safetensors_bytes(R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
                        R"("d":{"dtype":"F64","shape":[1],"data_offsets":[8,16]},)"
                        R"("a":{"dtype":"F32","shape":[1],"data_offsets":[16,20]},)"
                        R"("f":{"dtype":"F32","shape":[1],"data_offsets":[20,24]},)"
                        R"("b":{"dtype":"BOOL","shape":[2],"data_offsets":[24,26]}})",
                        raw<int64_t>({-3}) + raw<double>({0.25}) + raw<float>({2.5f, 1.5f}) + std::string("\1\0", 2)));
}

// What `safetensors.torch.save_file(torch.nn.Linear(3, 2).state_dict(), ...)` writes, built here
// by hand: kiln loads it into its own Linear.
TEST(Serialize, LoadsAPyTorchLinear) {
  TempDir dir;
  const std::string path = dir.file("linear.safetensors");
  write_bytes(path, safetensors_bytes(R"({"__metadata__":{"format":"pt"},)"
                                      R"("bias":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                      R"("weight":{"dtype":"F32","shape":[2,3],"data_offsets":[8,32]}})",
                                      raw<float>({0.5f, -1}) + raw<float>({1, 2, 3, 4, 5, 6})));
  nn::Linear linear(3, 2);
  kiln::load(linear, path);
  expect_values(linear->weight, {1, 2, 3, 4, 5, 6}, 0, 0);
  expect_values(linear->bias, {0.5, -1}, 0, 0);
  EXPECT_TRUE(linear->weight.requires_grad());
  expect_values(linear(kiln::tensor({1.0f, 1.0f, 1.0f}).reshape({1, 3})), {6.5, 14});

  // Half, bfloat16 and narrow integers load as their own dtypes.
  write_bytes(path, safetensors_bytes(R"({"h":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},)"
                                      R"("bf":{"dtype":"BF16","shape":[2],"data_offsets":[6,10]},)"
                                      R"("i":{"dtype":"I32","shape":[2],"data_offsets":[10,18]}})",
                                      raw<uint16_t>({0x3c00, 0xc000, 0x3800}) + raw<uint16_t>({0x3f80, 0xc0a0}) +
                                          raw<int32_t>({-7, 1 << 30})));
  auto narrow = kiln::load_safetensors(path);
  EXPECT_EQ(narrow["h"].dtype(), kiln::kHalf);
  expect_values(narrow["h"], {1, -2, 0.5}, 0, 0);
  EXPECT_EQ(narrow["bf"].dtype(), kiln::kBFloat16);
  expect_values(narrow["bf"], {1, -5}, 0, 0);
  EXPECT_EQ(narrow["i"].dtype(), kiln::kInt);
  EXPECT_EQ(narrow["i"].to_vector<int64_t>(), (std::vector<int64_t>{-7, 1 << 30}));
}

TEST(Serialize, LoadStateDictChecksKeysShapesAndDtypes) {
  nn::Sequential net(nn::Linear(3, 2));
  const std::string weight_bits = bits(net[0]->named_parameters()["weight"]);
  auto full = [] {
    kiln::StateDict s;
    s.insert("0.weight", kiln::ones({2, 3}));
    s.insert("0.bias", kiln::zeros({2}));
    return s;
  };

  auto missing = full();
  missing.erase("0.bias");
  expect_error([&] { kiln::load_state_dict(*net, missing); }, {"Missing key(s)", "\"0.bias\""});
  auto unexpected = full();
  unexpected.insert("0.extra", kiln::ones({1}));
  expect_error([&] { kiln::load_state_dict(*net, unexpected); }, {"Unexpected key(s)", "\"0.extra\""});
  auto wrong_shape = full();
  wrong_shape["0.weight"] = kiln::ones({3, 2});
  expect_error([&] { kiln::load_state_dict(*net, wrong_shape, /*strict=*/false); },
               {"size mismatch for 0.weight", "[3, 2]", "[2, 3]"});
  auto wrong_dtype = full();
  wrong_dtype["0.bias"] = kiln::zeros({2}, kiln::kLong);
  expect_error([&] { kiln::load_state_dict(*net, wrong_dtype); }, {"dtype mismatch for 0.bias", "int64"});
  EXPECT_EQ(bits(net[0]->named_parameters()["weight"]), weight_bits);  // a failed load changes nothing

  // Not strict: what matches is copied, the rest ignored.
  kiln::load_state_dict(*net, missing, /*strict=*/false);
  expect_values(net[0]->named_parameters()["weight"], {1, 1, 1, 1, 1, 1});
  // Float64 values convert to the module's float32.
  auto doubles = full();
  doubles["0.weight"] = kiln::full({2, 3}, 0.1, kiln::kDouble);
  kiln::load_state_dict(*net, doubles);
  EXPECT_EQ(net[0]->named_parameters()["weight"].dtype(), kiln::kFloat);
  EXPECT_EQ(net[0]->named_parameters()["weight"].to_vector<float>(), std::vector<float>(6, 0.1f));
}

TEST(Serialize, MalformedFilesNameThePath) {
  TempDir dir;
  nn::Linear linear(3, 2);
  const std::string missing = dir.file("missing.safetensors");
  expect_error([&] { kiln::load(linear, missing); }, {"load_safetensors", missing, "cannot open"});

  const std::string good = dir.file("good.safetensors");
  kiln::save(linear, good);
  const std::string bytes = read_bytes(good);

  const std::string truncated = dir.file("truncated.safetensors");
  write_bytes(truncated, bytes.substr(0, bytes.size() - 4));
  expect_error([&] { kiln::load(linear, truncated); }, {truncated, "outside the data", "truncated"});
  write_bytes(truncated, bytes.substr(0, 5));
  expect_error([&] { kiln::load(linear, truncated); }, {truncated, "too few"});
  write_bytes(truncated, bytes.substr(0, 20));
  expect_error([&] { kiln::load(linear, truncated); }, {truncated, "larger than the file"});

  const std::string huge = dir.file("huge.safetensors");
  write_bytes(huge, std::string("\0\0\0\0\0\0\0\x7f", 8) + "{}      ");
  expect_error([&] { kiln::load_safetensors(huge); }, {huge, "header length", "larger than the file"});

  const std::string bad_json = dir.file("bad_json.safetensors");
  write_bytes(bad_json, safetensors_bytes(R"({"w": {"dtype": "F32", )", ""));
  expect_error([&] { kiln::load_safetensors(bad_json); }, {bad_json, "not valid JSON"});
  write_bytes(bad_json, safetensors_bytes("[1, 2]", ""));
  expect_error([&] { kiln::load_safetensors(bad_json); }, {bad_json, "not a JSON object"});

  const std::string bad = dir.file("bad.safetensors");
  write_bytes(
      bad, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}})", raw<float>({1, 2, 3, 4})));
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "\"w\"", "16 bytes", "need 24"});
  write_bytes(bad, safetensors_bytes(R"({"w":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", raw<float>({1, 2})));
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "unsupported dtype", "C64"});
  write_bytes(bad, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", raw<float>({1})));
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "not a size"});
  write_bytes(bad, safetensors_bytes(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                                     raw<double>({1})));
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "too large"});
  write_bytes(bad, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1]}})", raw<float>({1})));
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "data_offsets"});

  // Saving somewhere that cannot be written says where.
  const std::string nowhere = dir.file("no/such/folder/x.safetensors");
  expect_error([&] { kiln::save(linear, nowhere); }, {"save_safetensors", nowhere});
}

// Shapes kiln cannot hold are errors naming the file: more dimensions than kiln has, and sizes whose
// product overflows even where another size is 0 (no data then, but strides would overflow).
TEST(Serialize, ShapesKilnCannotHoldNameThePath) {
  TempDir dir;
  const std::string bad = dir.file("bad.safetensors");
  write_bytes(bad, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})",
                                     raw<float>({1})));
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "\"w\"", "9 dimensions", "at most 8"});
  write_bytes(bad,
              safetensors_bytes(R"({"w":{"dtype":"F32","shape":[0,4611686018427387904,4],"data_offsets":[0,0]}})", ""));
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "\"w\"", "too large"});
}

// The tensors' data_offsets tile the data exactly, as the safetensors library requires: no bytes
// shared (a header naming the same bytes for many tensors would allocate their total), none left over.
TEST(Serialize, DataOffsetsMustTileTheData) {
  TempDir dir;
  const std::string bad = dir.file("bad.safetensors");
  write_bytes(bad, safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                     raw<float>({1, 2})));
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "\"b\"", "data_offsets [0, 8]", "overlap", "\"a\""});
  write_bytes(bad, safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                     R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                     raw<float>({1, 2, 3})));
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "bytes [4, 8) of the data belong to no tensor"});
  write_bytes(bad, safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", raw<float>({1, 2})));
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "bytes [4, 8) of the data belong to no tensor"});

  // Empty tensors take no bytes, wherever they are.
  const std::string good = dir.file("good.safetensors");
  write_bytes(good, safetensors_bytes(R"({"e":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]},)"
                                      R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                      raw<float>({1})));
  const auto loaded = kiln::load_safetensors(good);
  EXPECT_EQ(loaded["e"].sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(loaded["a"].to_vector<float>(), std::vector<float>{1});
}

// JSON nested deeper than the safetensors library's parser accepts (128 levels) is refused while
// parsing; and a malformed entry is quoted in a message only in part, however large it is.
TEST(Serialize, DeepOrLargeHeadersGiveShortErrors) {
  TempDir dir;
  const std::string bad = dir.file("bad.safetensors");
  write_bytes(bad, safetensors_bytes("{\"w\":" + std::string(100000, '[') + std::string(100000, ']') + "}", ""));
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "nested deeper than 128 levels"});

  write_bytes(bad, safetensors_bytes("{\"w\":[\"" + std::string(100000, 'x') + "\"]}", ""));
  try {
    kiln::load_safetensors(bad);
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    EXPECT_LT(std::string(e.what()).size(), 1000u);
  }

  // The safetensors library's limit on the header, 100 MB (checked before parsing: a sparse file).
  const uint64_t length = 100000001;
  write_bytes(bad, std::string(reinterpret_cast<const char*>(&length), 8));
  fs::resize_file(bad, 8 + length);
  expect_error([&] { kiln::load_safetensors(bad); }, {bad, "header length 100000001", "100000000"});
}

TEST(Serialize, AdamKeepsWorkingAfterLoad) {
  TempDir dir;
  const std::string path = dir.file("mlp.safetensors");
  nn::Sequential source = make_mlp(5);
  kiln::save(source, path);

  nn::Sequential net = make_mlp(6);
  kiln::optim::Adam adam(net->parameters(), kiln::optim::AdamOptions(1e-2));
  Tensor x = kiln::randn({16, 4});
  auto step = [&] {
    adam.zero_grad();
    net->forward(x).square().mean().backward();
    adam.step();
  };
  step();  // Adam now has state for every parameter
  kiln::load(net, path);
  const auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    ASSERT_TRUE(adam.parameters()[i].is_same(params[i]));  // the same tensors, loaded in place
    EXPECT_EQ(bits(params[i]), bits(source->parameters()[i]));
  }
  step();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_NE(bits(params[i]), bits(source->parameters()[i])) << "parameter " << i << " did not move";
    for (float v : params[i].to_vector<float>()) ASSERT_TRUE(std::isfinite(v));
  }
}
