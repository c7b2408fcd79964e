// Recurrent modules: parameters, initialization and outputs against libtorch 1.13 (numbers printed
// by a libtorch program with the same seeds and draws), float64 gradients against finite
// differences, dropout between layers, the errors for bad inputs, and the kernels a training step
// launches.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <functional>
#include <sstream>

#include "expect_error.h"
#include "gradcheck.h"
#include "nn_test_util.h"
#include "runtime/config.h"

namespace {

using kiln::Tensor;
using kiln::TensorList;
using nn_test::expect_values;
namespace nn = kiln::nn;

// The first and last value of every parameter, in registration order.
std::vector<double> first_and_last(const nn::Module& m) {
  std::vector<double> out;
  for (const auto& p : m.parameters()) {
    auto v = p.to_vector<double>();
    out.push_back(v.front());
    out.push_back(v.back());
  }
  return out;
}

std::vector<std::string> parameter_names(const nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& item : m.named_parameters()) names.push_back(item.key());
  return names;
}

std::string printed(const nn::Module& m) {
  std::ostringstream s;
  m.pretty_print(s);
  return s.str();
}

std::vector<int64_t> shape(const Tensor& t) { return t.sizes().vec(); }

// --- parameters and printing ---

TEST(RNN, ParametersHaveLibtorchsNamesShapesAndOrder) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  EXPECT_EQ(
      parameter_names(*lstm),
      (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse",
                                "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse", "weight_ih_l1",
                                "weight_hh_l1", "bias_ih_l1", "bias_hh_l1", "weight_ih_l1_reverse",
                                "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"}));
  EXPECT_EQ(shape(lstm->named_parameters()["weight_ih_l1"]), (std::vector<int64_t>{16, 8}));
  EXPECT_EQ(shape(lstm->named_parameters()["weight_hh_l0_reverse"]), (std::vector<int64_t>{16, 4}));
  ASSERT_EQ(lstm->all_weights().size(), 16u);
  EXPECT_TRUE(lstm->all_weights()[5].is_same(lstm->named_parameters()["weight_hh_l0_reverse"]));
  EXPECT_EQ(lstm->flat_weights().size(), 16u);

  nn::GRU gru(nn::GRUOptions(3, 4).bias(false).num_layers(2));
  EXPECT_EQ(parameter_names(*gru),
            (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "weight_ih_l1", "weight_hh_l1"}));
  EXPECT_EQ(shape(gru->named_parameters()["weight_ih_l0"]), (std::vector<int64_t>{12, 3}));

  nn::LSTM projected(nn::LSTMOptions(3, 4).proj_size(2).num_layers(2));
  EXPECT_EQ(shape(projected->named_parameters()["weight_hr_l0"]), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(shape(projected->named_parameters()["weight_hh_l0"]), (std::vector<int64_t>{16, 2}));
  EXPECT_EQ(shape(projected->named_parameters()["weight_ih_l1"]), (std::vector<int64_t>{16, 2}));

  nn::GRUCell cell(nn::GRUCellOptions(3, 4).bias(false));
  EXPECT_EQ(parameter_names(*cell), (std::vector<std::string>{"weight_ih", "weight_hh"}));
  EXPECT_FALSE(cell->bias_ih.defined());
  EXPECT_EQ(shape(nn::LSTMCell(3, 4)->weight_hh), (std::vector<int64_t>{16, 4}));
}

TEST(RNN, PrintsAsLibtorch) {
  // libtorch 1.13 prints the same after "torch::" (kiln's modules print "kiln::").
  EXPECT_EQ(printed(*nn::LSTM(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true))),
            "kiln::nn::LSTM(input_size=3, hidden_size=4, num_layers=2, bias=true, batch_first=false, dropout=0, "
            "bidirectional=true)");
  EXPECT_EQ(printed(*nn::GRU(nn::GRUOptions(3, 4).bias(false).dropout(0.5).num_layers(2).batch_first(true))),
            "kiln::nn::GRU(input_size=3, hidden_size=4, num_layers=2, bias=false, batch_first=true, dropout=0.5, "
            "bidirectional=false)");
  EXPECT_EQ(printed(*nn::RNN(nn::RNNOptions(3, 4).nonlinearity(torch::kReLU))),
            "kiln::nn::RNN(input_size=3, hidden_size=4, num_layers=1, bias=true, batch_first=false, dropout=0, "
            "bidirectional=false)");
  EXPECT_EQ(printed(*nn::LSTMCell(3, 4)), "kiln::nn::LSTMCell(3, 4)");
  EXPECT_EQ(printed(*nn::GRUCell(nn::GRUCellOptions(3, 4).bias(false))), "kiln::nn::GRUCell(3, 4, bias=false)");
  EXPECT_EQ(printed(*nn::RNNCell(nn::RNNCellOptions(3, 4).nonlinearity(torch::kReLU))),
            "kiln::nn::RNNCell(3, 4, nonlinearity=kReLU)");
  EXPECT_EQ(printed(*nn::RNNCell(3, 4)), "kiln::nn::RNNCell(3, 4)");
}

// --- values against libtorch 1.13 ---

TEST(RNN, LstmTwoLayersBidirectionalMatchesLibtorch) {
  // libtorch 1.13: torch::manual_seed(0); nn::LSTM m(LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  // x = torch::randn({3, 2, 3}); auto [output, (h_n, c_n)] = m(x);
  torch::manual_seed(0);
  nn::LSTM m(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  expect_values(
      torch::tensor(first_and_last(*m)),
      {-0.0037434101, 0.29316062,  -0.22174752, 0.2966888,   -0.30426955, -0.24355668,  -0.17491668, -0.036160827,
       -0.44916075,   0.34211242,  -0.35268915, -0.18491942, -0.49557418, -0.2350387,   -0.47273451, 0.14727771,
       -0.1143381,    -0.16711646, -0.13572258, 0.24054784,  -0.35296607, -0.054365039, -0.41897279, 0.30913067,
       -0.13872731,   0.21670127,  -0.29605669, 0.11387974,  -0.31697547, 0.42673707,   0.40550858,  0.42562044},
      0, 1e-7);
  auto [output, state] = m(torch::randn({3, 2, 3}));
  auto [h_n, c_n] = state;
  EXPECT_EQ(shape(output), (std::vector<int64_t>{3, 2, 8}));
  expect_values(
      output,
      {0.06005973,  -0.07422518,  -0.03087908,  0.148451,    -0.059924234, -0.19261827, 0.12571248,  0.026368754,
       0.050661739, -0.077560596, 0.03115193,   0.098884657, -0.011211934, -0.19343407, 0.1081625,   0.098998517,
       0.096777499, -0.11266766,  -0.065071911, 0.22162434,  -0.062236231, -0.16824396, 0.11572725,  0.032408882,
       0.10230704,  -0.12221996,  0.0069820178, 0.20759022,  -0.032037586, -0.17027865, 0.12817523,  0.084803954,
       0.11526063,  -0.13467143,  -0.10043167,  0.24382664,  -0.043985341, -0.12501945, 0.088518523, 0.031902954,
       0.11840394,  -0.13921712,  -0.034815751, 0.22561947,  -0.041528963, -0.11455102, 0.055792291, 0.059410334});
  EXPECT_EQ(shape(h_n), (std::vector<int64_t>{4, 2, 4}));
  expect_values(h_n, {0.19740094,   -0.074672319, 0.086478397, 0.0029784539, 0.1586192,   -0.050141133, -0.034002725,
                      0.014690518,  0.23193406,   0.033698454, -0.033604503, 0.15672487,  0.12228044,   -0.21215184,
                      -0.053903714, 0.084772103,  0.11526063,  -0.13467143,  -0.10043167, 0.24382664,   0.11840394,
                      -0.13921712,  -0.034815751, 0.22561947,  -0.059924234, -0.19261827, 0.12571248,   0.026368754,
                      -0.011211934, -0.19343407,  0.1081625,   0.098998517});
  expect_values(
      c_n, {0.26955986,  -0.16441415, 0.27235568,  0.0046186643, 0.23898809,   -0.12221271, -0.10031571,  0.023459896,
            0.33518249,  0.04862823,  -0.11957798, 0.25351462,   0.16720612,   -0.3106645,  -0.20497984,  0.13293295,
            0.23211998,  -0.28981948, -0.17868018, 0.47878349,   0.24306352,   -0.29022777, -0.060650129, 0.42101735,
            -0.11894657, -0.41869521, 0.26760358,  0.038462427,  -0.022243271, -0.45934063, 0.2243641,    0.14151263});
}

TEST(RNN, GruBatchFirstWithInitialStateMatchesLibtorch) {
  // libtorch 1.13: manual_seed(1); GRU(GRUOptions(3, 4).num_layers(2).batch_first(true));
  // x = randn({2, 3, 3}); h0 = randn({2, 2, 4}); m(x, h0)
  torch::manual_seed(1);
  nn::GRU m(nn::GRUOptions(3, 4).num_layers(2).batch_first(true));
  Tensor x = torch::randn({2, 3, 3}), h0 = torch::randn({2, 2, 4});
  auto [output, h_n] = m(x, h0);
  EXPECT_EQ(shape(output), (std::vector<int64_t>{2, 3, 4}));
  expect_values(output, {0.055102617, -1.2502807, -0.7074759,   0.46798575,  -0.065125205, -0.84619641,
                         -0.43547031, 0.61474395, -0.098092332, -0.62006396, -0.081956491, 0.6267935,
                         0.20802581,  0.47119966, 0.27953047,   0.25471479,  -0.21390224,  0.40207657,
                         0.36164895,  0.28035194, -0.31641218,  0.34371305,  0.3670522,    0.37685645});
  expect_values(h_n,
                {0.33209565, -0.46639156, -0.43556249, 0.24540675, -0.16494517, 0.18570271, 0.30894387, -0.050838996,
                 -0.098092332, -0.62006396, -0.081956491, 0.6267935, -0.31641218, 0.34371305, 0.3670522, 0.37685645});
}

TEST(RNN, RnnReluBidirectionalUnbatchedMatchesLibtorch) {
  // libtorch 1.13 (its C++ API wants a batch: given x.unsqueeze(1), outputs squeezed):
  // manual_seed(2); RNN(RNNOptions(3, 4).nonlinearity(kReLU).bidirectional(true)); x = randn({4, 3})
  torch::manual_seed(2);
  nn::RNN m(nn::RNNOptions(3, 4).nonlinearity(torch::kReLU).bidirectional(true));
  auto [output, h_n] = m(torch::randn({4, 3}));
  EXPECT_EQ(shape(output), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(shape(h_n), (std::vector<int64_t>{2, 4}));
  expect_values(output, {0,           0.37354946,  0, 0.11256522, 0,          0.94877601, 0,           0,
                         0.084214985, 0.001689285, 0, 0,          0.46994841, 0.76166117, 0.091298744, 0,
                         0,           0,           0, 0,          0.71359748, 1.3601761,  0,           0,
                         0,           0,           0, 0,          0.42017263, 0.29440844, 0,           0});
  expect_values(h_n, {0, 0, 0, 0, 0, 0.94877601, 0, 0});
}

TEST(RNN, RnnTanhTwoLayersWithoutBiasMatchesLibtorch) {
  // libtorch 1.13: manual_seed(3); RNN(RNNOptions(3, 4).num_layers(2).bias(false));
  // x = randn({4, 2, 3}); h0 = randn({2, 2, 4}); m(x, h0)
  torch::manual_seed(3);
  nn::RNN m(nn::RNNOptions(3, 4).num_layers(2).bias(false));
  Tensor x = torch::randn({4, 2, 3}), h0 = torch::randn({2, 2, 4});
  auto [output, h_n] = m(x, h0);
  expect_values(
      output, {-0.069226138, 0.58075511,  0.083277561, 0.66597205,  -0.036919702, 0.46206942, 0.38849223, 0.12849738,
               0.38646695,   0.40921897,  0.661645,    -0.05841599, -0.3195352,   0.10809761, 0.27348986, 0.22619271,
               -0.143769,    0.18169282,  0.27203321,  0.14170006,  -0.042728379, 0.35818765, 0.31122288, 0.14525476,
               -0.32479569,  0.096835636, 0.10374233,  0.1914852,   -0.080366522, 0.18004608, 0.338862,   0.13032047});
  expect_values(h_n, {0.29778802, 0.2826561, -0.38019562, -0.12279717, 0.079729311, -0.2207562, 0.11853555, 0.23245607,
                      -0.32479569, 0.096835636, 0.10374233, 0.1914852, -0.080366522, 0.18004608, 0.338862, 0.13032047});
}

TEST(RNN, LstmUnbatchedBatchFirstWithInitialStateMatchesLibtorch) {
  // libtorch 1.13 (given a batch of one): manual_seed(4); LSTM(LSTMOptions(3, 4).batch_first(true));
  // x = randn({2, 3}); h0 = randn({1, 4}); c0 = randn({1, 4})
  torch::manual_seed(4);
  nn::LSTM m(nn::LSTMOptions(3, 4).batch_first(true));
  Tensor x = torch::randn({2, 3}), h0 = torch::randn({1, 4}), c0 = torch::randn({1, 4});
  auto [output, state] = m(x, std::make_tuple(h0, c0));
  EXPECT_EQ(shape(output), (std::vector<int64_t>{2, 4}));
  expect_values(output, {-0.070725814, -0.088349059, 0.066111177, -0.53930491, 0.016730072, -0.23832048, 0.098071977,
                         -0.46507591});
  expect_values(std::get<0>(state), {0.016730072, -0.23832048, 0.098071977, -0.46507591});
  expect_values(std::get<1>(state), {0.037023962, -0.64113343, 0.17393178, -1.0747825});
}

TEST(RNN, CellsMatchLibtorch) {
  // libtorch 1.13: manual_seed(5); LSTMCell l(3, 4); GRUCell g(3, 4); RNNCell r(RNNCellOptions(3, 4)
  // .nonlinearity(kReLU)); x = randn({2, 3}); h = randn({2, 4}); c = randn({2, 4})
  torch::manual_seed(5);
  nn::LSTMCell lstm(3, 4);
  nn::GRUCell gru(3, 4);
  nn::RNNCell rnn(nn::RNNCellOptions(3, 4).nonlinearity(torch::kReLU));
  Tensor x = torch::randn({2, 3}), h = torch::randn({2, 4}), c = torch::randn({2, 4});
  auto [h1, c1] = lstm(x, std::make_tuple(h, c));
  expect_values(h1,
                {0.087706663, -0.31934223, 0.16826858, -0.18296288, 0.035144351, 0.68931603, -0.22690517, -0.21156026});
  expect_values(c1,
                {0.44786438, -0.48774672, 0.37538913, -0.85838151, 0.15113553, 1.0109119, -0.54093939, -0.40101135});
  auto [h2, c2] = lstm(x);
  expect_values(
      h2, {0.006306259, -0.18456246, 0.24601541, -0.079118863, 0.051035326, -0.32210732, -0.015870046, -0.040295701});
  expect_values(
      c2, {0.023417143, -0.29321355, 0.53902376, -0.23123036, 0.15660256, -0.42067403, -0.034069438, -0.059861198});
  expect_values(gru(x, h),
                {-0.35149199, 0.068271726, 0.27976504, 0.0103181, 0.038071722, -0.17287385, -0.52557349, -1.0334692});
  expect_values(gru(x),
                {-0.13663509, -0.10824297, 0.30708206, 0.27059197, 0.24250048, 0.19092023, -0.44493538, -0.32451588});
  expect_values(rnn(x, h), {1.1154826, 0, 0.020429686, 0, 0.51689786, 0, 0, 0});
  Tensor unbatched = rnn(x[1], h[1]);
  EXPECT_EQ(shape(unbatched), (std::vector<int64_t>{4}));
  expect_values(unbatched, {0.51689786, 0, 0, 0});
  auto [h3, c3] = lstm(x[0]);
  EXPECT_EQ(shape(h3), (std::vector<int64_t>{4}));
  expect_values(c3, {0.023417143, -0.29321355, 0.53902376, -0.23123036});
}

TEST(RNN, BatchFirstEqualsTimeFirstTransposed) {
  torch::manual_seed(6);
  nn::LSTM time_first(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true));
  nn::LSTM batch_first(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true).batch_first(true));
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < time_first->parameters().size(); ++i)
      batch_first->parameters()[i].copy_(time_first->parameters()[i]);
  }
  Tensor x = torch::randn({4, 3, 3});
  auto [a, sa] = time_first(x);
  auto [b, sb] = batch_first(x.transpose(0, 1).contiguous());
  EXPECT_TRUE(torch::allclose(a, b.transpose(0, 1), 1e-6, 1e-7));
  EXPECT_TRUE(torch::allclose(std::get<1>(sa), std::get<1>(sb), 1e-6, 1e-7));
}

// --- dropout between layers ---

TEST(RNN, DropoutBetweenLayersOnlyWhileTraining) {
  torch::manual_seed(7);
  nn::GRU with_dropout(nn::GRUOptions(3, 6).num_layers(2).dropout(0.5));
  nn::GRU without(nn::GRUOptions(3, 6).num_layers(2));
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < without->parameters().size(); ++i)
      with_dropout->parameters()[i].copy_(without->parameters()[i]);
  }
  Tensor x = torch::randn({5, 4, 3});
  Tensor reference = std::get<0>(without(x));
  EXPECT_FALSE(torch::allclose(std::get<0>(with_dropout(x)), reference, 1e-5, 1e-6));  // training
  with_dropout->eval();
  EXPECT_TRUE(torch::allclose(std::get<0>(with_dropout(x)), reference, 1e-6, 1e-7));
  // With p = 1 the second layer sees zeros: every batch entry gives the same output.
  nn::RNN all_dropped(nn::RNNOptions(3, 4).num_layers(2).dropout(1.0));
  Tensor out = std::get<0>(all_dropped(x));
  EXPECT_TRUE(torch::allclose(out.select(1, 0), out.select(1, 3), 0, 0));
}

// --- gradients: float64 against central differences ---

// Checks the gradient of sum(f() * weights) with respect to every parameter element of `m`
// against central differences, moving the parameter in place.
void expect_parameter_gradients(nn::Module& m, const std::function<Tensor()>& f) {
  Tensor y = f();
  Tensor weights = torch::randn(y.sizes(), torch::kFloat64);
  m.zero_grad();
  (y * weights).sum().backward();
  for (const auto& item : m.named_parameters()) {
    Tensor p = item.value();
    ASSERT_TRUE(p.grad().defined()) << item.key();
    const std::vector<double> analytic = p.grad().to_vector<double>(), base = p.to_vector<double>();
    for (size_t j = 0; j < base.size(); ++j) {
      auto value_at = [&](double delta) {
        torch::NoGradGuard no_grad;
        std::vector<double> moved = base;
        moved[j] += delta;
        p.copy_(torch::tensor(moved, torch::kFloat64).reshape(p.sizes()));
        return (f() * weights).sum().item<double>();
      };
      const double eps = 1e-6, numeric = (value_at(eps) - value_at(-eps)) / (2 * eps);
      EXPECT_NEAR(analytic[j], numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << item.key() << "[" << j << "]";
    }
    torch::NoGradGuard no_grad;
    p.copy_(torch::tensor(base, torch::kFloat64).reshape(p.sizes()));
  }
}

// Output and final states in one tensor, for the checks.
Tensor joined(const Tensor& output, const Tensor& h_n, const Tensor& c_n = {}) {
  TensorList parts = {output.flatten(), h_n.flatten()};
  if (c_n.defined()) parts.push_back(c_n.flatten());
  return torch::cat(parts);
}

TEST(RNN, LstmGradients) {
  torch::manual_seed(8);
  nn::LSTM m(nn::LSTMOptions(2, 3).num_layers(2).bidirectional(true));
  m->to(torch::kFloat64);
  Tensor x0 = torch::randn({3, 2, 2}, torch::kFloat64), h0 = torch::randn({4, 2, 3}, torch::kFloat64),
         c0 = torch::randn({4, 2, 3}, torch::kFloat64);
  auto f = [&](const TensorList& in) {
    auto [out, state] = m(in[0], std::make_tuple(in[1], in[2]));
    return joined(out, std::get<0>(state), std::get<1>(state));
  };
  EXPECT_TRUE(gradcheck::check_grad(f, {gradcheck::leaf(x0), gradcheck::leaf(h0), gradcheck::leaf(c0)}));
  expect_parameter_gradients(*m, [&] {
    auto [out, state] = m(x0);
    return joined(out, std::get<0>(state), std::get<1>(state));
  });
}

TEST(RNN, LstmWithProjectionGradients) {
  torch::manual_seed(9);
  nn::LSTM m(nn::LSTMOptions(2, 3).proj_size(2).batch_first(true));
  m->to(torch::kFloat64);
  Tensor x0 = torch::randn({2, 3, 2}, torch::kFloat64);
  auto [out, state] = m(x0);
  EXPECT_EQ(shape(out), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(shape(std::get<0>(state)), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(shape(std::get<1>(state)), (std::vector<int64_t>{1, 2, 3}));
  expect_parameter_gradients(*m, [&] {
    auto [o, s] = m(x0);
    return joined(o, std::get<0>(s), std::get<1>(s));
  });
}

TEST(RNN, GruGradients) {
  torch::manual_seed(10);
  nn::GRU m(nn::GRUOptions(2, 3).num_layers(2).batch_first(true));
  m->to(torch::kFloat64);
  Tensor x0 = torch::randn({2, 3, 2}, torch::kFloat64), h0 = torch::randn({2, 2, 3}, torch::kFloat64);
  auto f = [&](const TensorList& in) {
    auto [out, h_n] = m(in[0], in[1]);
    return joined(out, h_n);
  };
  EXPECT_TRUE(gradcheck::check_grad(f, {gradcheck::leaf(x0), gradcheck::leaf(h0)}));
  expect_parameter_gradients(*m, [&] {
    auto [out, h_n] = m(x0);
    return joined(out, h_n);
  });
}

TEST(RNN, RnnGradients) {
  for (bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "relu" : "tanh");
    torch::manual_seed(11);
    nn::RNN m(nn::RNNOptions(2, 3).bidirectional(true).nonlinearity(relu ? nn::RNNNonlinearity(torch::kReLU)
                                                                         : nn::RNNNonlinearity(torch::kTanh)));
    m->to(torch::kFloat64);
    Tensor x0 = torch::randn({3, 2}, torch::kFloat64), h0 = torch::randn({2, 3}, torch::kFloat64);  // unbatched
    auto f = [&](const TensorList& in) {
      auto [out, h_n] = m(in[0], in[1]);
      return joined(out, h_n);
    };
    EXPECT_TRUE(gradcheck::check_grad(f, {gradcheck::leaf(x0), gradcheck::leaf(h0)}));
    expect_parameter_gradients(*m, [&] {
      auto [out, h_n] = m(x0, h0);
      return joined(out, h_n);
    });
  }
}

TEST(RNN, CellGradients) {
  torch::manual_seed(12);
  nn::LSTMCell lstm(3, 2);
  nn::GRUCell gru(3, 2);
  nn::RNNCell rnn(nn::RNNCellOptions(3, 2).nonlinearity(torch::kReLU));
  for (nn::Module* m : std::initializer_list<nn::Module*>{lstm.get(), gru.get(), rnn.get()}) m->to(torch::kFloat64);
  Tensor x = gradcheck::randn({2, 3}), h = gradcheck::randn({2, 2}), c = gradcheck::randn({2, 2});
  // First and second order with respect to the inputs and states.
  EXPECT_TRUE(gradcheck::check(
      [&](const TensorList& in) {
        auto [h1, c1] = lstm(in[0], std::make_tuple(in[1], in[2]));
        return torch::cat({h1, c1});
      },
      {x, h, c}));
  EXPECT_TRUE(gradcheck::check([&](const TensorList& in) { return gru(in[0], in[1]); }, {x, h}));
  EXPECT_TRUE(gradcheck::check([&](const TensorList& in) { return rnn(in[0], in[1]); }, {x, h}));
  expect_parameter_gradients(*lstm, [&] {
    auto [h1, c1] = lstm(x.detach(), std::make_tuple(h.detach(), c.detach()));
    return torch::cat({h1, c1});
  });
  expect_parameter_gradients(*gru, [&] { return gru(x.detach(), h.detach()); });
  expect_parameter_gradients(*gru, [&] { return gru(x.detach()); });  // zero state: b_hh still counts
  expect_parameter_gradients(*rnn, [&] { return rnn(x.detach(), h.detach()); });
}

// --- errors ---

TEST(RNN, BadInputsNameTheModuleAndShapes) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  EXPECT_THROW_WITH(lstm(torch::randn({5, 2, 7})),
                    "LSTM: input.size(-1) must be equal to input_size. Expected 3, got input [5, 2, 7]");
  EXPECT_THROW_WITH(lstm(torch::randn({5, 2, 3, 1})),
                    "LSTM: input must have 3 dimensions (2 when unbatched), got [5, 2, 3, 1]");
  EXPECT_THROW_WITH(lstm(torch::randn({5, 2, 3}), std::make_tuple(torch::zeros({4, 2, 5}), torch::zeros({4, 2, 4}))),
                    "LSTM: Expected hidden[0] size [4, 2, 4], got [4, 2, 5]");
  EXPECT_THROW_WITH(lstm(torch::randn({5, 2, 3}), std::make_tuple(torch::zeros({4, 2, 4}), torch::zeros({4, 3, 4}))),
                    "LSTM: Expected hidden[1] size [4, 2, 4], got [4, 3, 4]");
  EXPECT_THROW_WITH(
      lstm(torch::randn({5, 2, 3}), std::make_tuple(torch::zeros({4, 4}), torch::zeros({4, 4}))),
      "LSTM: for batched 3-D input, hx and cx should also be 3-D, got input [5, 2, 3] float32 and hx [4, 4]");
  EXPECT_THROW_WITH(lstm(torch::randn({5, 3}, torch::kFloat64)), "LSTM: input and weights must have the same dtype");
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2).batch_first(true));
  EXPECT_THROW_WITH(gru(torch::randn({2, 5, 3}), torch::zeros({2, 3, 4})),
                    "GRU: Expected hidden size [2, 2, 4], got [2, 3, 4]");
  EXPECT_THROW_WITH(gru(torch::randn({5, 3}), torch::zeros({2, 1, 4})),
                    "GRU: for unbatched 2-D input, hx should also be 2-D, got input [5, 3] float32 and hx [2, 1, 4]");
  EXPECT_THROW_WITH(nn::RNN(3, 4)(torch::randn({2, 5, 2})), "RNN: input.size(-1) must be equal to input_size");

  EXPECT_THROW_WITH(nn::LSTMCell(3, 4)(torch::randn({2, 5})),
                    "LSTMCell: input has inconsistent input_size: got 5 expected 3");
  EXPECT_THROW_WITH(nn::LSTMCell(3, 4)(torch::randn({2, 2, 3})),
                    "LSTMCell: Expected input to be 1D or 2D, got [2, 2, 3]");
  EXPECT_THROW_WITH(nn::GRUCell(3, 4)(torch::randn({2, 3}), torch::zeros({3, 4})),
                    "GRUCell: Input batch size 2 doesn't match hidden batch size 3");
  EXPECT_THROW_WITH(nn::RNNCell(3, 4)(torch::randn({2, 3}), torch::zeros({2, 5})),
                    "RNNCell: hidden has inconsistent hidden_size: got 5, expected 4 (hidden [2, 5]");
  EXPECT_THROW_WITH(nn::RNNCell(3, 4)(torch::randn({3}), torch::zeros({1, 4})),
                    "RNNCell: Expected hidden to be 1D as the input is, got hidden [1, 4]");
  EXPECT_THROW_WITH(
      nn::LSTMCell(3, 4)(torch::randn({2, 3}), std::make_tuple(torch::zeros({2, 4}), torch::zeros({2, 5}))),
      "LSTMCell: hidden[1] has inconsistent hidden_size: got 5, expected 4");
}

TEST(RNN, BadOptions) {
  EXPECT_THROW_WITH(nn::LSTM(nn::LSTMOptions(3, 4).dropout(1.5)), "LSTM: dropout should be a number in range [0, 1]");
  EXPECT_THROW_WITH(nn::GRU(nn::GRUOptions(3, 4).num_layers(0)), "GRU: num_layers must be positive, got 0");
  EXPECT_THROW_WITH(nn::RNN(3, 0), "RNN: input_size and hidden_size must be positive, got 3 and 0");
  EXPECT_THROW_WITH(nn::LSTM(nn::LSTMOptions(3, 4).proj_size(4)),
                    "LSTM: proj_size has to be a positive integer, smaller than hidden_size");
  EXPECT_THROW_WITH(nn::GRUCell(0, 4), "GRUCell: input_size and hidden_size must be positive");
}

// --- kernels per training step ---

// Launches of one steady-state training step (forward, backward, SGD step) of a small LSTM over
// `steps` time steps, compiled kernels only (the Halide backend, built before they run).
int64_t launches_per_training_step(int64_t steps) {
  kiln::Config saved = kiln::config();
  kiln::config().backend = "halide";
  kiln::config().compile_in_background = false;
  torch::manual_seed(13);
  nn::LSTM lstm(nn::LSTMOptions(8, 16).num_layers(2).batch_first(true));
  nn::Linear head(16, 5);
  std::vector<Tensor> params = lstm->parameters();
  for (const auto& p : head->parameters()) params.push_back(p);
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(0.1));
  Tensor x = torch::randn({4, steps, 8}), target = torch::randint(5, {4 * steps});
  auto train_step = [&] {
    sgd.zero_grad();
    Tensor out = head(std::get<0>(lstm(x))).reshape({4 * steps, 5});
    Tensor loss = torch::nn::functional::cross_entropy(out, target);
    loss.backward();
    sgd.step();
    return loss.item<float>();
  };
  const float first = train_step();
  train_step();  // compiles what the first left to later flushes
  kiln::sync();
  kiln::reset_stats();
  const float third = train_step();
  kiln::sync();
  const kiln::Stats s = kiln::stats();
  kiln::config() = saved;
  EXPECT_LT(third, first) << "the loss should fall";
  EXPECT_EQ(s.kernels_compiled, 0) << "a repeated step compiles nothing";
  return s.kernel_launches;
}

TEST(RNN, LstmTrainingStepLaunchesFewKernelsPerTimeStep) {
  const int64_t short_run = launches_per_training_step(6), long_run = launches_per_training_step(12);
  RecordProperty("launches_6_steps", int(short_run));
  RecordProperty("launches_12_steps", int(long_run));
  std::cout << "LSTM training step kernel launches: " << short_run << " (6 steps), " << long_run << " (12 steps)\n";
  // Two layers: per layer and time step a hidden matmul and its gates forward, and backward the
  // gates, the hidden and weight matmuls; a handful for the rest.
  const int64_t per_time_step = (long_run - short_run) / 6;
  EXPECT_LE(per_time_step, 2 * 10);
  EXPECT_LE(short_run - 6 * per_time_step, 60);
}

}  // namespace
