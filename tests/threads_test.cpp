// Training on several threads at once: each thread traces into a segment of its own, while the
// kernel and partition caches, the allocator and the worker pool are shared. scripts/sanitize.sh
// thread runs this under ThreadSanitizer.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

// A model's sizes, and the seed of its start and data.
struct Model {
  unsigned seed;
  int64_t in, hidden, out, batch;
};

struct Result {
  std::vector<float> losses;                // per step
  std::vector<std::vector<float>> weights;  // after the last step, in the order of parameters()
  std::string error;                        // what a step threw
};

// A few Adam steps of an MLP on fixed data. The start and the data come from a generator of its
// own: kiln's is shared, and two threads drawing from it at once would draw in another order on
// every run.
Result train(const Model& m) {
  constexpr int kSteps = 5;
  Result r;
  try {
    std::mt19937 gen(m.seed);
    std::normal_distribution<float> normal(0.f, 0.5f);
    auto values = [&](int64_t n) {
      std::vector<float> v(size_t(n), 0.f);
      for (auto& e : v) e = normal(gen);
      return v;
    };
    torch::nn::Sequential net(torch::nn::Linear(m.in, m.hidden), torch::nn::GELU(),
                              torch::nn::LayerNorm(torch::nn::LayerNormOptions({m.hidden})),
                              torch::nn::Linear(m.hidden, m.out));
    {
      torch::NoGradGuard no_grad;
      for (auto& p : net->parameters()) p.copy_(torch::tensor(values(p.numel())).reshape(p.sizes()));
    }
    const torch::Tensor x = torch::tensor(values(m.batch * m.in)).reshape({m.batch, m.in});
    std::vector<int64_t> labels(size_t(m.batch));
    for (auto& l : labels) l = int64_t(gen() % uint32_t(m.out));
    const torch::Tensor y = torch::tensor(labels);
    torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-2));
    for (int step = 0; step < kSteps; ++step) {
      adam.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), y);
      loss.backward();
      adam.step();
      r.losses.push_back(loss.item<float>());
    }
    for (const auto& p : net->parameters()) r.weights.push_back(p.to_vector<float>());
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

void expect_same(const Result& at_once, const Result& in_turn) {
  ASSERT_EQ(at_once.error, "");
  ASSERT_EQ(in_turn.error, "");
  EXPECT_EQ(at_once.losses, in_turn.losses);  // bit for bit: the same kernels on the same data
  EXPECT_EQ(at_once.weights, in_turn.weights);
}

// The two trainings at once come first, so that they also compile their kernels at once when the
// cache does not have them yet. Different sizes, so that the threads share kernels (sizes are
// kernel arguments) and not their buffers' sizes.
TEST(Threads, TwoModelsTrainedAtOnceEndAsWhenTrainedInTurn) {
  const Model a{1, 12, 32, 5, 16}, b{2, 7, 20, 3, 24};
  Result a_at_once, b_at_once;
  std::thread ta([&] { a_at_once = train(a); }), tb([&] { b_at_once = train(b); });
  ta.join();
  tb.join();
  const Result a_in_turn = train(a), b_in_turn = train(b);
  expect_same(a_at_once, a_in_turn);
  expect_same(b_at_once, b_in_turn);
  EXPECT_LT(a_in_turn.losses.back(), a_in_turn.losses.front());  // the models do train
  EXPECT_LT(b_in_turn.losses.back(), b_in_turn.losses.front());
}

}  // namespace
