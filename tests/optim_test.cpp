// Optimizers: a few steps of each against the parameters libtorch 1.13 reaches from the same start
// on the same loss, learning-rate changes through param groups, zero_grad, and bad options.
#include "nn_test_util.h"

namespace optim = kiln::optim;
using kiln::Tensor;
using nn_test::expect_error;
using nn_test::expect_values;

namespace {

Tensor start() { return kiln::tensor({0.5, -1.0, 2.0, 1.5, 0.25, -0.75}).reshape({2, 3}); }
// loss = 0.1 * sum(w^3) + sum(w * b): gradients that change from step to step.
Tensor loss_of(const Tensor& w) {
  Tensor b = kiln::tensor({0.3, -0.2, 0.1, 0.4, -0.6, 0.9}).reshape({2, 3});
  return (w * w * w).sum() * 0.1 + (w * b).sum();
}

// Runs `steps` steps of `Opt` from start(); before step 1 (the second), sets every group's lr to
// new_lr through param_groups(), as libtorch programs do.
template <typename Opt, typename Options>
Tensor run(Options options, int steps = 3, double new_lr = -1) {
  Tensor w = start().requires_grad_(true);
  Opt opt({w}, options);
  for (int s = 0; s < steps; ++s) {
    if (s == 1 && new_lr > 0)
      for (auto& group : opt.param_groups()) static_cast<Options&>(group.options()).lr(new_lr);
    opt.zero_grad();
    loss_of(w).backward();
    opt.step();
  }
  return w;
}

// The reference values below were printed by the same loop written against libtorch 1.13.
constexpr double kRtol = 2e-6, kAtol = 2e-6;

}  // namespace

TEST(OptimSGD, MatchesLibtorch) {
  expect_values(run<optim::SGD>(optim::SGDOptions(0.1)),
                {0.390636414, -1.03185189, 1.65268242, 1.20406973, 0.421273947, -1.08706522}, kRtol, kAtol);
  expect_values(run<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01)),
                {0.208193704, -1.08017409, 1.12460279, 0.738812447, 0.698160827, -1.68878543}, kRtol, kAtol);
  expect_values(run<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9).dampening(0.1)),
                {0.304868132, -1.05579436, 1.36873865, 0.96544075, 0.554668009, -1.34218585}, kRtol, kAtol);
  expect_values(run<optim::SGD>(optim::SGDOptions(0.1).momentum(0.5), 3, 0.02),
                {0.438726902, -1.01683927, 1.79384613, 1.32779145, 0.34535408, -0.929266632}, kRtol, kAtol);
}

TEST(OptimAdam, MatchesLibtorch) {
  expect_values(run<optim::Adam>(optim::AdamOptions(0.01)),
                {0.470007867, -1.03003979, 1.97000921, 1.47000837, 0.279997408, -0.780003965}, kRtol, kAtol);
  expect_values(run<optim::Adam>(optim::AdamOptions(0.01).weight_decay(0.1).amsgrad(true).betas({0.8, 0.9})),
                {0.4700104, -1.02014065, 1.97000968, 1.47000909, 0.279994994, -0.780003726}, kRtol, kAtol);
  expect_values(run<optim::Adam>(optim::AdamOptions(0.01), 3, 0.05),
                {0.390101403, -1.11012137, 1.89012527, 1.39011157, 0.359964371, -0.860047817}, kRtol, kAtol);
}

TEST(OptimAdamW, MatchesLibtorch) {
  expect_values(run<optim::AdamW>(optim::AdamWOptions(0.01).weight_decay(0.1)),
                {0.468539745, -1.0270102, 1.96404719, 1.46554422, 0.279218256, -0.777725935}, kRtol, kAtol);
  expect_values(run<optim::AdamW>(optim::AdamWOptions(0.02).amsgrad(true)),
                {0.439744383, -1.05948722, 1.93885183, 1.43914759, 0.309827209, -0.809553683}, kRtol, kAtol);
}

TEST(OptimRMSprop, MatchesLibtorch) {
  expect_values(run<optim::RMSprop>(optim::RMSpropOptions(0.01)),
                {0.276942849, -1.26125658, 1.7789079, 1.2780298, 0.47606647, -0.982569873}, kRtol, kAtol);
  expect_values(run<optim::RMSprop>(optim::RMSpropOptions(0.01).momentum(0.9).centered(true).weight_decay(0.1)),
                {0.045813214, -1.31014681, 1.54638612, 1.04530275, 0.708242416, -1.22329986}, kRtol, kAtol);
}

TEST(OptimParamGroups, LearningRatesPerGroup) {
  Tensor a = kiln::ones({2}, kiln::requires_grad()), b = kiln::ones({2}, kiln::requires_grad());
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::SGDOptions>(0.5));
  optim::SGD opt(groups, optim::SGDOptions(0.1));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get_lr(), 0.1);  // the defaults, copied
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].options().get_lr(), 0.5);
  EXPECT_EQ(opt.size(), 2u);
  (a.sum() + b.sum()).backward();
  opt.step();
  expect_values(a, {0.9, 0.9});
  expect_values(b, {0.5, 0.5});
  // set_lr through the base class; the defaults are a separate copy.
  opt.param_groups()[0].options().set_lr(1.0);
  EXPECT_DOUBLE_EQ(static_cast<optim::SGDOptions&>(opt.param_groups()[0].options()).lr(), 1.0);
  EXPECT_DOUBLE_EQ(static_cast<optim::SGDOptions&>(opt.defaults()).lr(), 0.1);
  opt.step();
  expect_values(a, {-0.1, -0.1});
  // add_param_group takes the defaults too.
  Tensor c = kiln::ones({1}, kiln::requires_grad());
  opt.add_param_group(optim::OptimizerParamGroup({c}));
  EXPECT_DOUBLE_EQ(opt.param_groups()[2].options().get_lr(), 0.1);
  expect_error([&] { opt.add_param_group(optim::OptimizerParamGroup({a})); }, {"more than one parameter group"});
}

TEST(OptimParamGroups, StepLRDecaysEveryStepSize) {
  Tensor w = kiln::ones({1}, kiln::requires_grad());
  optim::Adam opt({w}, optim::AdamOptions(0.4));
  optim::StepLR scheduler(opt, 2, 0.5);
  std::vector<double> lrs;
  for (int epoch = 0; epoch < 5; ++epoch) {
    lrs.push_back(opt.param_groups()[0].options().get_lr());
    scheduler.step();
  }
  // libtorch's C++ StepLR counts its first step() as step 0 (Python's constructor steps once), so
  // the first decay comes at the third call.
  EXPECT_EQ(lrs, (std::vector<double>{0.4, 0.4, 0.4, 0.2, 0.2}));
}

TEST(OptimZeroGrad, ZeroesOrDrops) {
  Tensor w = kiln::ones({3}, kiln::requires_grad()), unused = kiln::ones({3}, kiln::requires_grad());
  optim::SGD opt({w, unused}, optim::SGDOptions(0.1));
  (w * 2).sum().backward();
  opt.zero_grad();
  ASSERT_TRUE(w.grad().defined());
  expect_values(w.grad(), {0, 0, 0});
  EXPECT_FALSE(unused.grad().defined());
  // A parameter without a gradient is left alone by step().
  opt.step();
  expect_values(unused, {1, 1, 1});
  opt.zero_grad(/*set_to_none=*/true);
  EXPECT_FALSE(w.grad().defined());
}

TEST(OptimLazy, StepReadsNoValuesAndEndsItsSegment) {
  // A step only records ops, then ends its segment with one flush (optimizer.h): a read inside
  // the step would flush more often.
  if (!kiln::is_lazy()) GTEST_SKIP() << "eager mode flushes every op";
  Tensor w = start().requires_grad_(true);
  optim::Adam adam({w}, optim::AdamOptions(0.01).amsgrad(true));
  optim::SGD sgd({w}, optim::SGDOptions(0.01).momentum(0.9).nesterov(true));
  for (int s = 0; s < 2; ++s) {
    loss_of(w).backward();
    const int64_t flushes = kiln::stats().flushes;
    adam.step();
    EXPECT_EQ(kiln::stats().flushes, flushes + 1);
    sgd.step();
    adam.zero_grad();
    EXPECT_EQ(kiln::stats().flushes, flushes + 2);
  }
}

TEST(OptimErrors, BadOptionsAndParameters) {
  Tensor w = kiln::ones({2}, kiln::requires_grad());
  expect_error([&] { optim::SGD({w}, optim::SGDOptions(-1)); }, {"SGD", "learning rate", "-1"});
  expect_error([&] { optim::SGD({w}, optim::SGDOptions(0.1).nesterov(true)); }, {"SGD", "nesterov"});
  expect_error([&] { optim::Adam({w}, optim::AdamOptions(0.1).betas({1.0, 0.9})); }, {"Adam", "beta", "index 0"});
  expect_error([&] { optim::AdamW({w}, optim::AdamWOptions(0.1).eps(-1)); }, {"AdamW", "epsilon"});
  expect_error([&] { optim::RMSprop({w}, optim::RMSpropOptions(0.1).momentum(-0.5)); }, {"RMSprop", "momentum"});
  expect_error([&] { optim::Adam({w * 2}); }, {"non-leaf"});
  expect_error([&] { optim::Adam({w, w}); }, {"more than one parameter group"});
  expect_error([&] { optim::Adam({kiln::ones({2}, kiln::kLong)}); }, {"floating point"});
}

TEST(OptimSchedulers, CosineAnnealingLRFollowsTheClosedFormAndCompilesNothing) {
  // Two groups with different base learning rates; the cosine runs past T_max and climbs back.
  struct HalideBackend {  // kernel counts are what this checks: the interpreter compiles nothing
    HalideBackend() : saved(kiln::config().backend) { kiln::config().backend = "halide"; }
    ~HalideBackend() { kiln::config().backend = saved; }
    std::string saved;
  } halide;
  Tensor a = start().requires_grad_(true), b = kiln::ones({3}, kiln::requires_grad());
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a}, std::make_unique<optim::AdamOptions>(0.1));
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::AdamOptions>(0.02));
  optim::Adam opt(groups, optim::AdamOptions(1e-3));
  const double eta_min = 0.001, pi = std::acos(-1.0);
  const unsigned T_max = 10;
  optim::CosineAnnealingLR scheduler(opt, T_max, eta_min);
  auto train_step = [&] {
    opt.zero_grad();
    (loss_of(a) + (b * b).sum()).backward();
    opt.step();
    kiln::sync();
  };
  for (int t = 0; t < 25; ++t) {
    // After t calls of step(): eta_min + (base - eta_min) * (1 + cos(pi t / T_max)) / 2.
    for (int g = 0; g < 2; ++g) {
      const double base = g == 0 ? 0.1 : 0.02;
      EXPECT_NEAR(opt.param_groups()[g].options().get_lr(),
                  eta_min + (base - eta_min) * (1 + std::cos(pi * t / T_max)) / 2, 1e-15)
          << "group " << g << " after " << t << " steps";
    }
    if (t < 3) train_step();  // builds the step's kernels (the first three steps differ in structure)
    scheduler.step();
  }
  // A new learning rate is a kernel argument: more steps with it build no kernels.
  kiln::sync();
  kiln::reset_stats();
  for (int s = 0; s < 3; ++s) {
    scheduler.step();
    train_step();
  }
  EXPECT_EQ(kiln::stats().kernels_compiled + kiln::stats().kernels_loaded, 0);
  EXPECT_GT(kiln::stats().kernel_launches, 0);
  expect_error([&] { optim::CosineAnnealingLR(opt, 0); }, {"CosineAnnealingLR", "T_max"});
}
