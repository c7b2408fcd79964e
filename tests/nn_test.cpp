// nn modules: registration and naming in libtorch's order, holders, containers, modes, Linear's
// initialization (bit-for-bit libtorch 1.13 after manual_seed), LayerNorm values and gradients.
#include <cmath>
#include <limits>
#include <sstream>

#include "nn_test_util.h"

namespace nn = kiln::nn;
namespace F = kiln::nn::functional;
using kiln::Tensor;
using nn_test::doubles;
using nn_test::expect_error;
using nn_test::expect_gradient_matches;
using nn_test::expect_values;

namespace {

struct BlockImpl : nn::Module {
  BlockImpl() : fc(register_module("fc", nn::Linear(3, 3))) { scale = register_parameter("scale", kiln::ones({3})); }
  Tensor forward(const Tensor& x) { return fc(x) * scale; }
  nn::Linear fc{nullptr};
  Tensor scale;
};
KILN_MODULE(Block);

struct NetImpl : nn::Module {
  NetImpl() {
    // Own parameter registered after the children: still listed first, as in libtorch.
    first = register_module("first", nn::Linear(2, 3));
    block = register_module("block", std::make_shared<BlockImpl>());
    last = register_module("last", nn::Linear(nn::LinearOptions(3, 1).bias(false)));
    offset = register_parameter("offset", kiln::zeros({1}));
    register_buffer("running", kiln::zeros({2}));
  }
  Tensor forward(const Tensor& x) { return last(block->forward(kiln::relu(first(x)))) + offset; }
  nn::Linear first{nullptr}, last{nullptr};
  std::shared_ptr<BlockImpl> block;
  Tensor offset;
};
KILN_MODULE(Net);

std::vector<std::string> keys(const kiln::OrderedDict<std::string, Tensor>& d) { return d.keys(); }

}  // namespace

// --- registration and naming ---

TEST(NnModule, NamedParametersInLibtorchOrder) {
  Net net;
  EXPECT_EQ(keys(net->named_parameters()),
            (std::vector<std::string>{"offset", "first.weight", "first.bias", "block.scale", "block.fc.weight",
                                      "block.fc.bias", "last.weight"}));
  EXPECT_EQ(keys(net->named_parameters(/*recurse=*/false)), (std::vector<std::string>{"offset"}));
  EXPECT_EQ(net->parameters().size(), 7u);
  for (const auto& p : net->parameters()) EXPECT_TRUE(p.requires_grad());
  // The registered tensor is the member: same TensorImpl.
  EXPECT_TRUE(net->named_parameters()["first.weight"].is_same(net->first->weight));
  EXPECT_EQ(keys(net->named_buffers()), (std::vector<std::string>{"running"}));
  EXPECT_FALSE(net->buffers()[0].requires_grad());
}

TEST(NnModule, ChildrenAndModules) {
  Net net;
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"first", "block", "last"}));
  EXPECT_EQ(net->children().size(), 3u);
  EXPECT_EQ(net->named_modules().keys(), (std::vector<std::string>{"", "first", "block", "block.fc", "last"}));
  EXPECT_EQ(net->modules(/*include_self=*/false).size(), 4u);
  EXPECT_NE(net->children()[0]->as<nn::Linear>(), nullptr);
  EXPECT_EQ(net->children()[1]->as<nn::Linear>(), nullptr);
  EXPECT_NE(net->children()[1]->as<BlockImpl>(), nullptr);
  EXPECT_EQ(net->first->name(), "kiln::nn::LinearImpl");
  // A module not owned by a shared_ptr cannot hand out itself.
  NetImpl on_stack;
  expect_error([&] { on_stack.modules(); }, {"shared_ptr"});
  EXPECT_EQ(on_stack.modules(/*include_self=*/false).size(), 4u);
}

TEST(NnModule, RegistrationErrors) {
  nn::Module m;
  m.register_parameter("w", kiln::zeros({2}));
  expect_error([&] { m.register_parameter("w", kiln::zeros({2})); }, {"Parameter 'w' already defined"});
  expect_error([&] { m.register_parameter("a.b", kiln::zeros({2})); }, {"register_parameter", "dot", "a.b"});
  expect_error([&] { m.register_parameter("", kiln::zeros({2})); }, {"register_parameter", "empty"});
  expect_error([&] { m.register_parameter("i", kiln::zeros({2}, kiln::kLong)); }, {"register_parameter", "floating"});
  Tensor leaf = kiln::ones({2}, kiln::requires_grad());
  expect_error([&] { m.register_parameter("computed", leaf * 2); }, {"register_parameter", "leaf"});
  m.register_module("child", nn::ReLU());
  expect_error([&] { m.register_module("child", nn::Tanh()); }, {"Submodule 'child' already defined"});
  expect_error([&] { m.register_module("x.y", nn::Tanh()); }, {"register_module", "dot"});
  expect_error([&] { m.register_module("empty", nn::Linear(nullptr)); }, {"empty ModuleHolder"});
  m.unregister_module("child");
  EXPECT_TRUE(m.children().empty());
  // requires_grad=false parameters, and undefined ones (skipped).
  m.register_parameter("frozen", kiln::ones({1}), /*requires_grad=*/false);
  m.register_parameter("none", Tensor(), false);
  EXPECT_EQ(keys(m.named_parameters()), (std::vector<std::string>{"w", "frozen"}));
  EXPECT_FALSE(m.named_parameters()["frozen"].requires_grad());
}

TEST(NnModule, HoldersBehaveLikeLibtorch) {
  nn::Linear empty{nullptr};
  EXPECT_TRUE(empty.is_empty());
  EXPECT_FALSE(bool(empty));
  expect_error([&] { empty->forward(kiln::ones({1, 3})); }, {"empty ModuleHolder"});
  expect_error([&] { empty(kiln::ones({1, 3})); }, {"empty ModuleHolder"});
  // Assigning from register_module's shared_ptr, and copies sharing one module.
  nn::Module parent;
  empty = parent.register_module("fc", nn::Linear(3, 2));
  EXPECT_FALSE(empty.is_empty());
  nn::Linear copy = empty;
  EXPECT_EQ(copy.ptr(), empty.ptr());
  EXPECT_EQ(copy.get(), parent.children()[0].get());
  Tensor x = kiln::randn({4, 3});
  EXPECT_TRUE(kiln::allclose(copy(x), kiln::linear(x, copy->weight, copy->bias)));
  EXPECT_EQ(copy(x).sizes().vec(), (std::vector<int64_t>{4, 2}));
}

TEST(NnModule, TrainEvalAndZeroGrad) {
  Net net;
  EXPECT_TRUE(net->is_training());
  net->eval();
  for (const auto& m : net->modules()) EXPECT_FALSE(m->is_training());
  net->train();
  EXPECT_TRUE(net->block->fc->is_training());

  net->forward(kiln::randn({5, 2})).sum().backward();
  for (const auto& p : net->parameters()) ASSERT_TRUE(p.grad().defined());
  net->zero_grad();  // libtorch 1.13's default: zero-filled, still defined
  for (const auto& p : net->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().abs().sum().item<float>(), 0.0f);
  }
  net->zero_grad(/*set_to_none=*/true);
  for (const auto& p : net->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(NnModule, ToDtypeKeepsTensorIdentity) {
  Net net;
  Tensor weight = net->first->weight;
  const auto before = weight.to_vector<double>();
  net->to(kiln::kDouble);
  EXPECT_EQ(weight.dtype(), kiln::kDouble);  // the same tensor, converted
  EXPECT_EQ(net->first->weight.dtype(), kiln::kDouble);
  EXPECT_TRUE(weight.requires_grad());
  expect_values(weight, before, 0, 0);
  EXPECT_EQ(net->named_buffers()["running"].dtype(), kiln::kDouble);
  EXPECT_EQ(net->forward(kiln::randn({2, 2}, kiln::kDouble)).dtype(), kiln::kDouble);
  net->to(kiln::Device(kiln::kCPU));
}

TEST(NnModule, PrettyPrint) {
  Net net;
  std::ostringstream os;
  os << *net;
  const std::string s = os.str();
  EXPECT_NE(s.find("(first): kiln::nn::Linear(in_features=2, out_features=3, bias=true)"), std::string::npos) << s;
  EXPECT_NE(s.find("(last): kiln::nn::Linear(in_features=3, out_features=1, bias=false)"), std::string::npos) << s;
  EXPECT_NE(s.find("    (fc): kiln::nn::Linear"), std::string::npos) << s;
}

// --- containers ---

TEST(NnContainer, SequentialChainsAndNamesChildren) {
  kiln::manual_seed(1);
  nn::Sequential seq(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1), nn::Sigmoid());
  EXPECT_EQ(seq->size(), 4u);
  EXPECT_EQ(seq->named_children().keys(), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(keys(seq->named_parameters()), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  Tensor x = kiln::randn({5, 2});
  auto& l0 = seq->at<nn::LinearImpl>(0);
  auto l2 = std::dynamic_pointer_cast<nn::LinearImpl>(seq[2]);
  ASSERT_NE(l2, nullptr);
  Tensor expected = kiln::sigmoid(kiln::linear(kiln::relu(kiln::linear(x, l0.weight, l0.bias)), l2->weight, l2->bias));
  EXPECT_TRUE(kiln::allclose(seq->forward(x), expected));
  EXPECT_TRUE(kiln::allclose(seq(x), expected));
  // Named children, push_back, nesting, user modules.
  nn::Sequential named({{"fc", nn::Linear(2, 3)}, {"act", nn::GELU(nn::GELUOptions().approximate("tanh"))}});
  named->push_back(Block());
  named->push_back("inner", nn::Sequential(nn::Linear(3, 2), nn::Tanh()));
  EXPECT_EQ(named->named_children().keys(), (std::vector<std::string>{"fc", "act", "2", "inner"}));
  EXPECT_EQ(named->forward(x).sizes().vec(), (std::vector<int64_t>{5, 2}));
  expect_error([&] { nn::Sequential().get()->forward(x); }, {"Sequential", "empty"});
  expect_error([&] { seq[7]; }, {"Sequential", "index 7"});
}

TEST(NnContainer, ModuleListAndFunctional) {
  nn::ModuleList list(nn::Linear(2, 2), nn::Linear(2, 2));
  list->push_back(nn::Dropout(0.5));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(keys(list->named_parameters()).size(), 4u);
  Tensor x = kiln::randn({3, 2});
  for (size_t i = 0; i < 2; ++i) x = list->at<nn::LinearImpl>(i).forward(x);
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{3, 2}));
  nn::Sequential seq(nn::Functional(kiln::relu), nn::Functional(kiln::softmax, 1, std::nullopt));
  Tensor y = kiln::tensor({-1.0, 2.0, 0.5, 0.0}).reshape({2, 2});
  EXPECT_TRUE(kiln::allclose(seq(y), kiln::softmax(kiln::relu(y), 1)));
}

// --- layers ---

TEST(NnLinear, InitMatchesLibtorch) {
  // Printed by libtorch 1.13: torch::manual_seed(0); torch::nn::Linear l(3, 2);
  kiln::manual_seed(0);
  nn::Linear l(3, 2);
  expect_values(l->weight, {-0.00432251766, 0.309715837, -0.475185335, -0.424894601, -0.222368971, 0.154820725}, 0,
                1e-8);
  expect_values(l->bias, {-0.0114391446, 0.457774937}, 0, 1e-8);
  // The generator is left where libtorch leaves it.
  expect_values(kiln::rand({3}), {0.455627978, 0.632306278, 0.348893464}, 0, 1e-8);

  kiln::manual_seed(0);
  nn::Linear wide(20, 5);
  expect_values(wide->weight.reshape({-1}).slice(0, 0, 5),
                {-0.0016741039, 0.119952433, -0.18403849, -0.164560974, -0.0861231312}, 0, 1e-8);
  expect_values(wide->bias, {0.210357934, 0.15067026, -0.0974981859, -0.0562784299, -0.213007405}, 0, 1e-8);

  kiln::manual_seed(42);
  nn::Linear no_bias(nn::LinearOptions(5, 4).bias(false));
  EXPECT_FALSE(no_bias->bias.defined());
  EXPECT_EQ(no_bias->parameters().size(), 1u);
  expect_values(no_bias->weight,
                {0.341912031, 0.371190816,   -0.104769833, 0.410815448,  -0.0979860947, 0.0902435407, -0.217728183,
                 0.262640774, 0.394237965,   -0.328088492, 0.38871634,   0.0837001801,  0.330405354,  0.0605663918,
                 0.215641066, -0.0631425381, 0.344750613,  0.0661021546, -0.208777145,  0.113993987},
                0, 1e-8);
}

TEST(NnLinear, InitStatistics) {
  kiln::manual_seed(7);
  nn::Linear l(256, 128);
  const double bound = 1 / 16.0;  // 1 / sqrt(fan_in)
  const auto w = l->weight.to_vector<double>();
  double mean = 0, sq = 0, lo = 1, hi = -1;
  for (double v : w) {
    mean += v;
    sq += v * v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  mean /= double(w.size());
  const double var = sq / double(w.size()) - mean * mean;
  EXPECT_GE(lo, -bound);
  EXPECT_LT(hi, bound);
  EXPECT_NEAR(mean, 0, 0.002);
  EXPECT_NEAR(var, bound * bound / 3, 0.05 * bound * bound / 3);  // U(-b, b) has variance b^2 / 3
  for (double v : l->bias.to_vector<double>()) EXPECT_LE(std::abs(v), bound);
}

TEST(NnInit, FillsMatchLibtorch) {
  // Printed by libtorch 1.13 after manual_seed(42) and Linear(5, 4, bias=false).
  kiln::manual_seed(42);
  nn::Linear(nn::LinearOptions(5, 4).bias(false));
  Tensor t = kiln::empty({3, 5});
  nn::init::xavier_uniform_(t);
  expect_values(
      t,
      {-0.399009615, -0.101561271, -0.35174343, 0.57449609, -0.683614612, -0.399246663, -0.244543687, -0.520717204,
       0.0817381814, -0.855355203, 0.7821154, -0.73566103, 0.668595314, 0.144123212, -0.281202376},
      1e-6, 1e-7);
  Tensor t2 = kiln::empty({4, 5});
  nn::init::kaiming_normal_(t2, 0, kiln::kFanOut, kiln::kReLU);
  expect_values(t2, {1.21435785,  0.225482434,  -0.300180227, 0.216177329, -0.520425498, -0.591936529, -0.652228236,
                     1.2807951,   0.113536552,  0.259683996,  0.124034189, 0.979456425,  0.978317082,  -0.850257456,
                     0.500498831, -0.760766208, 0.378765047,  0.831110477, 0.396809846,  -0.320141196},
                1e-5, 1e-6);
  nn::Embedding emb(6, 3);
  expect_values(emb->weight,
                {1.27799559, 0.145337671, -0.710641921, -0.602068305, 0.960448802, 0.404814273, -1.35434294,
                 -0.497646242, 0.47466135, -2.50954437, 1.26831138, 1.22426283, 0.09811721, 1.74225271, -1.35267365,
                 0.219060495, 0.552634895, -0.185267478},
                1e-5, 1e-6);
  // uniform_ computes x * (to - from) + from fused, as libtorch's FMA builds do: bit-exact in
  // float32 and float64 (printed by libtorch 1.13 after manual_seed(0)).
  kiln::manual_seed(0);
  Tensor d = nn::init::uniform_(kiln::empty({5}, kiln::kDouble), -0.3, 0.7);
  expect_values(
      d, {0.67005300180655314, 0.40781986439978796, 0.15938294312745088, 0.62074768412196035, 0.34502412012276479}, 0,
      0);
  kiln::manual_seed(0);
  expect_values(nn::init::uniform_(kiln::empty({4}), -2.5, 1.0), {-0.763101935, 0.188776284, -2.19032907, -2.0378933},
                0, 1e-8);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kiln::kTanh), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kiln::kLeakyReLU, 0.2), std::sqrt(2.0 / 1.04));
  Tensor c = kiln::zeros({2, 2});
  nn::init::constant_(c, 0.25);
  expect_values(c, {0.25, 0.25, 0.25, 0.25});
  expect_error([] { nn::init::xavier_uniform_(kiln::zeros({3})); }, {"fan in and fan out", "[3]"});
  expect_error([] { nn::init::uniform_(kiln::zeros({3}, kiln::kLong)); }, {"uniform_", "floating"});
}

TEST(NnLayerNorm, MatchesLibtorch) {
  nn::LayerNorm ln(nn::LayerNormOptions({3}).eps(1e-5));
  EXPECT_EQ(keys(ln->named_parameters()), (std::vector<std::string>{"weight", "bias"}));
  expect_values(ln->weight, {1, 1, 1});
  expect_values(ln->bias, {0, 0, 0});
  Tensor x = kiln::tensor({1.0, 2.0, 4.0, -1.0, 0.5, 0.5}).reshape({2, 3});
  expect_values(ln(x), {-1.06904137, -0.267260313, 1.3363018, -1.41419935, 0.707099676, 0.707099676});
  // Two normalized dimensions, with weight and bias.
  Tensor x3 = kiln::tensor({1.0, 2.0, 4.0, -1.0, 0.5, 0.5, 0.3, 0.2, 0.1, 7.0, -2.0, 1.0}).reshape({2, 2, 3});
  Tensor w = kiln::tensor({0.5, 1.0, 1.5, -1.0, 2.0, 0.1}).reshape({2, 3});
  Tensor b = kiln::tensor({0.1, 0.2, 0.3, 0.0, -0.1, 0.5}).reshape({2, 3});
  expect_values(F::layer_norm(x3, F::LayerNormFuncOptions({2, 3}).weight(w).bias(b).eps(1e-3)),
                {0.0460949019, 0.739051104, 3.04916048, 1.40153289, -0.962481737, 0.45687592, -0.0430915877,
                 -0.121956065, -0.236593425, -2.11060047, -2.31791925, 0.496422708});
  nn::LayerNorm plain(nn::LayerNormOptions({3}).elementwise_affine(false));
  EXPECT_TRUE(plain->parameters().empty());
  expect_error([&] { ln(kiln::ones({2, 4})); }, {"layer_norm", "[*, 3]", "[2, 4]"});
}

TEST(NnLayerNorm, GradientsMatchFiniteDifferences) {
  Tensor x = kiln::tensor({1.0, 2.0, 4.0, -1.0, 0.5, 0.3, 0.3, 0.2, 0.1, 7.0, -2.0, 1.0}).reshape({3, 4});
  Tensor w = doubles({0.5, 1.0, 1.5, -1.0}, {4}), b = doubles({0.1, 0.2, 0.3, 0.0}, {4});
  Tensor probe = doubles({0.3, -1.2, 0.7, 2.0, 0.1, 0.4, -0.5, 1.1, 0.9, -0.3, 0.2, 0.6}, {3, 4});
  auto ln = [&](const Tensor& in, const Tensor& weight, const Tensor& bias) {
    // A weighted sum, so every output element contributes differently.
    return (F::layer_norm(in, F::LayerNormFuncOptions({4}).weight(weight).bias(bias)) * probe).sum();
  };
  expect_gradient_matches([&](const Tensor& in) { return ln(in, w, b); }, x, 1e-6, 1e-5);
  expect_gradient_matches([&](const Tensor& weight) { return ln(x.to(kiln::kDouble), weight, b); }, w);
  expect_gradient_matches([&](const Tensor& bias) { return ln(x.to(kiln::kDouble), w, bias); }, b);
  // Through the module, converted to float64.
  nn::LayerNorm module(std::vector<int64_t>{4});
  module->to(kiln::kDouble);
  expect_gradient_matches([&](const Tensor& in) { return (module(in) * probe).sum(); }, x, 1e-6, 1e-5);
}

// --- activations, dropout, flatten ---

TEST(NnActivation, ModulesMatchFunctional) {
  Tensor x = kiln::tensor({1.0, 2.0, 4.0, -1.0, 0.5, 0.5}).reshape({2, 3});
  expect_values(F::gelu(x, F::GELUFuncOptions().approximate("tanh")),
                {0.841192007, 1.95459771, 3.9999299, -0.158807993, 0.345714003, 0.345714003});
  expect_values(nn::GELU()(x), {0.841344714, 1.95449996, 3.99987316, -0.158655286, 0.345731199, 0.345731199});
  EXPECT_TRUE(kiln::allclose(nn::ReLU()(x), kiln::relu(x)));
  EXPECT_TRUE(kiln::allclose(nn::Tanh()(x), kiln::tanh(x)));
  EXPECT_TRUE(kiln::allclose(nn::Sigmoid()(x), kiln::sigmoid(x)));
  EXPECT_TRUE(kiln::allclose(nn::SiLU()(x), F::silu(x)));
  EXPECT_TRUE(kiln::allclose(nn::Identity()(x), x));
  EXPECT_TRUE(kiln::allclose(nn::Softmax(1)(x), F::softmax(x, 1)));
  EXPECT_TRUE(kiln::allclose(nn::LogSoftmax(1)(x), F::log_softmax(x, F::LogSoftmaxFuncOptions(1))));
  expect_values(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.1))(x), {1, 2, 4, -0.1, 0.5, 0.5});
  EXPECT_EQ(F::softmax(x, F::SoftmaxFuncOptions(0).dtype(kiln::kDouble)).dtype(), kiln::kDouble);
  Tensor y = x.clone();
  F::relu(y, F::ReLUFuncOptions().inplace(true));
  expect_values(y, {1, 2, 4, 0, 0.5, 0.5});
  expect_error([&] { F::gelu(x, F::GELUFuncOptions().approximate("fast")); }, {"gelu", "fast"});
}

TEST(NnDropout, TrainAndEval) {
  kiln::manual_seed(3);
  nn::Dropout drop(0.25);
  Tensor x = kiln::ones({4000});
  const auto y = drop(x).to_vector<float>();
  int zeros = 0;
  for (float v : y) {
    if (v == 0) {
      ++zeros;
    } else {
      EXPECT_FLOAT_EQ(v, 1 / 0.75f);
    }
  }
  EXPECT_NEAR(zeros / 4000.0, 0.25, 0.03);
  drop->eval();
  EXPECT_TRUE(kiln::equal(drop(x), x));
  EXPECT_TRUE(kiln::equal(F::dropout(x, F::DropoutFuncOptions().training(false)), x));
  expect_values(F::dropout(kiln::ones({3}), F::DropoutFuncOptions().p(1.0)), {0, 0, 0});
  // Gradients flow through the kept elements only, with the same scale.
  Tensor w = kiln::ones({1000}, kiln::requires_grad());
  Tensor out = F::dropout(w, F::DropoutFuncOptions().p(0.5));
  out.sum().backward();
  expect_values(w.grad(), out.detach().to_vector<double>());
  expect_error([] { nn::Dropout(1.5); }, {"Dropout", "between 0 and 1", "1.5"});
  expect_error([&] { F::dropout(x, F::DropoutFuncOptions().p(-0.1)); }, {"dropout", "-0.1"});
}

TEST(NnFlatten, DefaultsAndOptions) {
  Tensor x = kiln::zeros({2, 3, 4, 5});
  EXPECT_EQ(nn::Flatten()(x).sizes().vec(), (std::vector<int64_t>{2, 60}));
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(2))(x).sizes().vec(), (std::vector<int64_t>{2, 3, 20}));
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(0).end_dim(1))(x).sizes().vec(),
            (std::vector<int64_t>{6, 4, 5}));
}

// --- utils ---

TEST(NnUtils, ClipGradNorm) {
  Tensor a = kiln::ones({2}, kiln::requires_grad()), b = kiln::ones({1}, kiln::requires_grad());
  Tensor unused = kiln::ones({1}, kiln::requires_grad());
  ((a * kiln::tensor({3.0, 0.0})).sum() + (b * 4).sum()).backward();  // grads [3, 0] and [4]: norm 5
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b, unused}, 1.0), 5.0, 1e-6);
  expect_values(a.grad(), {0.6, 0.0}, 1e-5);
  expect_values(b.grad(), {0.8}, 1e-5);
  // Below the limit nothing changes; the max norm.
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 10.0), 1.0, 1e-5);
  expect_values(b.grad(), {0.8}, 1e-5);
  EXPECT_NEAR(nn::utils::clip_grad_norm_(b, 0.4, std::numeric_limits<double>::infinity()), 0.8, 1e-6);
  expect_values(b.grad(), {0.4}, 1e-5);
  nn::utils::clip_grad_value_({a, b}, 0.5);
  expect_values(a.grad(), {0.5, 0.0}, 1e-6);
  EXPECT_EQ(nn::utils::clip_grad_norm_({unused}, 1.0), 0.0);
}
