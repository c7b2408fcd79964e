// DDP communication hooks in one process: the futures hooks return, and on a job of one rank the
// hooks' errors, the buckets a hook sees, and the built-in hooks. (Two ranks: distributed_test.cpp.)
#include <gtest/gtest.h>
#include <kiln/distributed.h>
#include <kiln/kiln.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "expect_error.h"

namespace dist = kiln::distributed;
namespace hooks = kiln::distributed::algorithms::ddp_comm_hooks::default_hooks;
using kiln::Tensor;

namespace {

// A job of one rank over Gloo's file store, for the test's length.
class CommHookOneRank : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() / ("kiln-comm-hooks-" + std::to_string(::getpid()));
    std::filesystem::remove_all(folder_);
    dist::init_process_group("gloo", "file://" + folder_.string(), 1, 0, std::chrono::seconds(10));
  }
  void TearDown() override {
    dist::destroy_process_group();
    std::filesystem::remove_all(folder_);
  }
  std::filesystem::path folder_;
};

using Hook = std::shared_ptr<dist::Future> (*)(const std::shared_ptr<dist::ProcessGroup>&, dist::GradBucket&);

}  // namespace

TEST(CommHookFuture, ThenRunsWhenWaitedOnOnce) {
  auto done = std::make_shared<dist::Future>(kiln::ones({3}));
  EXPECT_TRUE(done->done());
  int calls = 0;
  auto doubled = done->then([&calls](dist::Future& f) {
    ++calls;
    return f.value() * 2.0;
  });
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(doubled->done());
  EXPECT_EQ(doubled->wait().to_vector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(doubled->value().to_vector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(calls, 1);
  EXPECT_THROW_WITH(done->then(nullptr), "Future::then: the callback is empty");
}

TEST(CommHookFuture, PendingUntilAnotherThreadSetsIt) {
  auto pending = std::make_shared<dist::Future>();
  EXPECT_FALSE(pending->done());
  std::thread setter([pending] { pending->set_result(kiln::full({2}, 5.0)); });
  EXPECT_EQ(pending->wait().to_vector<float>(), (std::vector<float>{5, 5}));
  setter.join();
  EXPECT_THROW_WITH(pending->set_result(kiln::ones({1})), "Future::set_result: this future already has a result");
}

// As in PyTorch, a callback runs on a failed future too: the error reaches it through value().
TEST(CommHookFuture, ErrorsPassThroughCallbacksThatReadTheValue) {
  auto failed = std::make_shared<dist::Future>();
  failed->set_exception(std::make_exception_ptr(kiln::Error("the collective failed")));
  auto reads = failed->then([](dist::Future& f) { return f.value() + 1.0; });
  EXPECT_THROW_WITH(reads->wait(), "the collective failed");
  EXPECT_THROW_WITH(reads->wait(), "the collective failed");  // kept
  auto ignores = failed->then([](dist::Future&) { return kiln::zeros({1}); });
  EXPECT_EQ(ignores->wait().item<float>(), 0);
}

TEST_F(CommHookOneRank, CommHookIsRegisteredOnceBeforeTheFirstBackward) {
  kiln::nn::Linear linear(3, 2);
  auto ddp = kiln::nn::parallel::DistributedDataParallel(linear);
  EXPECT_THROW_WITH(ddp->register_comm_hook(nullptr, Hook(nullptr)),
                    "register_comm_hook: Communication hook must be callable.");
  EXPECT_THROW_WITH(ddp->register_comm_hook(
                        nullptr, std::function<std::shared_ptr<dist::Future>(std::nullptr_t, dist::GradBucket&)>()),
                    "register_comm_hook: Communication hook must be callable.");
  ddp->register_comm_hook(nullptr, &hooks::allreduce_hook);
  EXPECT_THROW_WITH(ddp->register_comm_hook(nullptr, &hooks::fp16_compress_hook),
                    "register_comm_hook or register_builtin_comm_hook can only be called once.");

  auto trained = kiln::nn::parallel::DistributedDataParallel(linear);
  {
    auto guard = trained->no_sync();  // a backward inside no_sync() counts too
    trained->forward(kiln::ones({4, 3})).sum().backward();
  }
  EXPECT_THROW_WITH(trained->register_comm_hook(nullptr, &hooks::allreduce_hook),
                    "should be registered before calling backward");
}

// A bucket's buffer, views and parameters as a hook sees them, and the errors of a hook whose
// future is wrong; a hook that throws fails that backward only.
TEST_F(CommHookOneRank, HookSeesEachBucketAndItsErrorsLeaveDdpUsable) {
  kiln::manual_seed(5);
  kiln::nn::Sequential model(kiln::nn::Linear(3, 4), kiln::nn::Tanh(), kiln::nn::Linear(4, 2));
  kiln::nn::parallel::DistributedDataParallelOptions options;
  options.first_bucket_cap_mb = 0.00001;  // 10 bytes: a bucket per parameter
  options.bucket_cap_mb = 0.00001;
  auto ddp = kiln::nn::parallel::DistributedDataParallel(model, options);
  ASSERT_EQ(ddp->reducer().bucket_count(), 4u);
  std::string mode = "check";
  std::vector<size_t> seen;
  ddp->register_comm_hook(&mode, [&seen](std::string* how, dist::GradBucket& bucket) -> std::shared_ptr<dist::Future> {
    seen.push_back(bucket.index());
    if (*how == "throw") throw kiln::Error("the hook gave up");
    if (*how == "none") return nullptr;
    if (*how == "short") return std::make_shared<dist::Future>(kiln::zeros({3}));
    EXPECT_EQ(bucket.parameters().size(), 1u);
    EXPECT_EQ(bucket.buffer().numel(), bucket.parameters()[0].numel());
    EXPECT_EQ(bucket.gradients()[0].sizes(), bucket.parameters()[0].sizes());
    EXPECT_EQ(bucket.getIndex(), bucket.index());
    EXPECT_EQ(bucket.isLast(), bucket.index() == 3);
    return std::make_shared<dist::Future>(bucket.buffer());
  });
  const Tensor x = kiln::randn({5, 3});
  auto backward = [&] { ddp->forward(x).pow(2).sum().backward(); };
  for (const auto& [how, error] : std::vector<std::pair<std::string, std::string>>{
           {"throw", "the hook gave up"},
           {"none", "DistributedDataParallel: the communication hook returned no future for bucket 0"},
           {"short",
            "DistributedDataParallel: the communication hook's future holds 3 elements for bucket 0 of 2 "
            "gradient elements"}}) {
    mode = how;
    ddp->zero_grad();
    EXPECT_THROW_WITH(backward(), error);
  }
  mode = "check";
  seen.clear();
  ddp->zero_grad();
  backward();
  EXPECT_EQ(seen, (std::vector<size_t>{0, 1, 2, 3}));
  // On one rank the hook's identity gives plain backward's gradients.
  std::vector<Tensor> grads;
  for (const auto& p : model->parameters()) grads.push_back(p.grad().clone());
  for (const auto& p : model->parameters()) p.mutable_grad() = Tensor();
  model->forward(x).pow(2).sum().backward();
  const auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(grads[i].allclose(params[i].grad(), 1e-6, 1e-7)) << i;
}

// On one rank the built-in hooks give plain backward's gradients: exactly for allreduce_hook,
// rounded to float16 for fp16_compress_hook (the cast back into the bucket, in place).
TEST_F(CommHookOneRank, BuiltInHooksOnOneRank) {
  for (const auto& [hook, rtol] :
       std::vector<std::pair<Hook, double>>{{&hooks::allreduce_hook, 1e-6}, {&hooks::fp16_compress_hook, 1e-3}}) {
    kiln::manual_seed(9);
    kiln::nn::Linear plain(6, 3), wrapped(6, 3);
    {
      kiln::autograd::NoGradGuard no_grad;
      wrapped->weight.copy_(plain->weight);
      wrapped->bias.copy_(plain->bias);
    }
    auto ddp = kiln::nn::parallel::DistributedDataParallel(wrapped);
    ddp->register_comm_hook(dist::default_process_group(), hook);
    const Tensor x = kiln::randn({7, 6});
    plain->forward(x).pow(2).sum().backward();
    ddp->forward(x).pow(2).sum().backward();
    EXPECT_TRUE(wrapped->weight.grad().allclose(plain->weight.grad(), rtol, 1e-7));
    EXPECT_TRUE(wrapped->bias.grad().allclose(plain->bias.grad(), rtol, 1e-7));
    const bool exact = wrapped->weight.grad().equal(plain->weight.grad());
    EXPECT_EQ(exact, hook == &hooks::allreduce_hook);  // float16's rounding shows
  }
}
