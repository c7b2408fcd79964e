// One rank of the multi-process tests in tests/distributed_test.cpp, which start several of these
// with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set: `kiln_distributed_worker SCENARIO [ARGS]`.
// A rank prints what it found and exits 0 when its checks pass, 1 (with the reason) otherwise.
#include <kiln/distributed.h>
#include <kiln/kiln.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>

namespace dist = kiln::distributed;
namespace nn = kiln::nn;
using kiln::Tensor;

namespace {

int g_failures = 0;
#define EXPECT_THAT(cond, ...)                                      \
  do {                                                              \
    if (!(cond)) {                                                  \
      std::printf("FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                 \
    }                                                               \
  } while (0)

bool all_equal(const Tensor& t, double value) {
  for (double v : t.to(kiln::kDouble).to_vector<double>())
    if (v != value) return false;
  return true;
}

std::chrono::milliseconds timeout_from_env() {
  const char* v = std::getenv("KILN_TEST_TIMEOUT_MS");
  return std::chrono::milliseconds(v ? std::atoi(v) : 20000);
}

// KILN_TEST_BACKEND=mpi: the job is mpirun's.
void init() {
  const char* backend = std::getenv("KILN_TEST_BACKEND");
  dist::init_process_group(backend ? backend : "gloo", "env://", -1, -1, timeout_from_env());
}

// Values of every collective on every rank.
int collectives() {
  init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  auto ranks_sum = [&](double f) { return f * world * (world + 1) / 2; };
  Tensor t = kiln::full({3}, double(rank + 1));
  dist::all_reduce(t);
  EXPECT_THAT(all_equal(t, ranks_sum(1)));
  t = kiln::full({2, 2}, double(rank + 1));
  dist::all_reduce(t, dist::ReduceOp::AVG);
  EXPECT_THAT(all_equal(t, (world + 1) / 2.0));
  t = kiln::full({5}, double(rank + 1));
  dist::all_reduce(t, dist::ReduceOp::MIN);
  EXPECT_THAT(all_equal(t, 1));
  t = kiln::full({5}, double(rank + 1));
  dist::all_reduce(t, dist::ReduceOp::MAX);
  EXPECT_THAT(all_equal(t, world));
  t = kiln::full({5}, double(rank + 1));
  dist::all_reduce(t, dist::ReduceOp::PRODUCT);
  double factorial = 1;
  for (int r = 1; r <= world; ++r) factorial *= r;
  EXPECT_THAT(all_equal(t, factorial));
  // Integers, and a tensor that is not contiguous (a transposed view), in place.
  Tensor ints = kiln::full({4}, int64_t(rank + 1), kiln::TensorOptions(kiln::kLong));
  dist::all_reduce(ints);
  EXPECT_THAT(all_equal(ints, ranks_sum(1)));
  Tensor base = kiln::arange(6, kiln::TensorOptions(kiln::kFloat)).view({2, 3}) * double(rank + 1);
  Tensor transposed = base.t();
  dist::all_reduce(transposed);
  const std::vector<float> got = base.contiguous().to_vector<float>();
  for (int i = 0; i < 6; ++i) EXPECT_THAT(got[i] == float(i * ranks_sum(1)));
  // Lazy inputs: an expression not computed yet.
  Tensor lazy = kiln::ones({3}) * 2 + double(rank);
  dist::all_reduce(lazy);
  EXPECT_THAT(all_equal(lazy, 2.0 * world + world * (world - 1) / 2.0));

  Tensor b = kiln::full({4}, double(rank));
  dist::broadcast(b, world - 1);
  EXPECT_THAT(all_equal(b, world - 1));

  std::vector<Tensor> gathered;
  for (int r = 0; r < world; ++r) gathered.push_back(kiln::zeros({2}));
  dist::all_gather(gathered, kiln::full({2}, 10.0 * rank));
  for (int r = 0; r < world; ++r) EXPECT_THAT(all_equal(gathered[r], 10.0 * r));

  std::vector<Tensor> parts;
  for (int r = 0; r < world; ++r) parts.push_back(kiln::full({2}, double(rank + r)));
  Tensor mine = kiln::zeros({2});
  dist::reduce_scatter(mine, parts);
  EXPECT_THAT(all_equal(mine, world * (world - 1) / 2.0 + world * rank));

  auto work = dist::all_reduce(t = kiln::ones({8}), dist::ReduceOp::SUM, /*async_op=*/true);
  work->wait();
  EXPECT_THAT(work->isCompleted() && all_equal(t, world));
  dist::barrier();

  // c10d's shape on the default group.
  auto group = dist::default_process_group();
  std::vector<Tensor> tensors{kiln::full({3}, double(group->getRank()))};
  group->allreduce(tensors)->wait();
  EXPECT_THAT(group->getSize() == world && all_equal(tensors[0], (world - 1) * world / 2.0));
  dist::destroy_process_group();
  EXPECT_THAT(!dist::is_initialized());
  std::printf("rank %d of %d: collectives %s\n", rank, world, g_failures ? "FAILED" : "ok");
  return g_failures ? 1 : 0;
}

// c10d::FileStore and c10d::ProcessGroupGloo made by hand, as libtorch programs do.
int c10d_file_store(const std::string& folder) {
  const int rank = std::atoi(std::getenv("RANK")), world = std::atoi(std::getenv("WORLD_SIZE"));
  auto store = std::make_shared<c10d::FileStore>(folder, world);
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  options->timeout = timeout_from_env();
  c10d::ProcessGroupGloo pg(store, rank, world, options);
  std::vector<Tensor> tensors{kiln::full({2, 3}, double(rank + 1))};
  auto work = pg.allreduce(tensors);
  work->wait();
  EXPECT_THAT(pg.getRank() == rank && pg.getSize() == world);
  EXPECT_THAT(all_equal(tensors[0], world * (world + 1) / 2.0));
  std::printf("rank %d: c10d %s\n", rank, g_failures ? "FAILED" : "ok");
  return g_failures ? 1 : 0;
}

struct NetImpl : nn::Module {
  explicit NetImpl(bool with_unused) {
    fc1 = register_module("fc1", nn::Linear(8, 16));
    fc2 = register_module("fc2", nn::Linear(16, 4));
    if (with_unused) spare = register_module("spare", nn::Linear(4, 4));
  }
  Tensor forward(const Tensor& x) { return fc2->forward(fc1->forward(x).relu()); }
  nn::Linear fc1{nullptr}, fc2{nullptr}, spare{nullptr};
};
KILN_MODULE(Net);

// The unit roundoff of a compress hook's dtype (2^-p for p significant bits; 0: no compression).
double hook_roundoff(const std::string& hook) {
  return hook == "bf16" ? std::ldexp(1.0, -8) : hook == "fp16" ? std::ldexp(1.0, -11) : 0;
}

// Each rank's gradients on its share, from the reference model (the ranks' parameters before the
// first step), by parameter name: [rank][name].
std::vector<std::map<std::string, Tensor>> gradients_of_shares(nn::Module& reference, const Tensor& x, const Tensor& y,
                                                               int world, int64_t share,
                                                               const std::function<Tensor(const Tensor&)>& forward) {
  std::vector<std::map<std::string, Tensor>> out(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    for (const auto& p : reference.parameters()) p.mutable_grad() = Tensor();
    kiln::mse_loss(forward(x.narrow(0, r * share, share)), y.narrow(0, r * share, share)).backward();
    for (const auto& item : reference.named_parameters())
      if (item.value().grad().defined()) out[size_t(r)][item.key()] = item.value().grad().clone();
  }
  for (const auto& p : reference.parameters()) p.mutable_grad() = Tensor();
  return out;
}

// A compress hook's averaged gradients against the exact average of the ranks' gradients g_r,
// element by element. Each rank's bucket is rounded to the narrow dtype (relative error u),
// divided by the world size (exact for 2 ranks), and the sum is rounded again, so
// |hook - mean(g_r)| <= u mean|g_r| + u (1 + u) mean|g_r|; float32's rounding of the gradients
// themselves and float16's subnormals (spacing 2^-24) add a little.
void expect_within_compression_bound(const nn::Module& local, const std::vector<std::map<std::string, Tensor>>& shares,
                                     double u) {
  for (const auto& item : local.named_parameters()) {
    if (!shares[0].count(item.key())) continue;  // no rank's share reached it
    Tensor mean = kiln::zeros_like(item.value()), mean_abs = kiln::zeros_like(item.value());
    for (const auto& grads : shares) {
      mean = mean + grads.at(item.key()) / double(shares.size());
      mean_abs = mean_abs + grads.at(item.key()).abs() / double(shares.size());
    }
    const Tensor bound = mean_abs * (2 * u * (1 + u) + 1e-6) + std::ldexp(1.0, -23);
    const Tensor excess = (item.value().grad() - mean).abs() - bound;
    const double worst = excess.max().item<double>();
    if (!(worst <= 0)) std::printf("%s: a gradient is %.3g past the compression bound\n", item.key().c_str(), worst);
    EXPECT_THAT(worst <= 0);
  }
}

// DDP on W ranks, each on its share of the batch, against one process on the whole batch: the
// same parameters after the steps, and the very same on every rank. With "no_sync", each step's
// share is two micro-batches, the first backward inside no_sync(). `hook`: a built-in
// communication hook (allreduce, fp16 or bf16) reduces the buckets. A compress hook's first
// gradients must be within the bound of its rounding, and the parameters after the steps within
// 4 of the narrow dtype's roundings of their size of the float32 run's (as close as weights
// stored in that dtype: measured 2.5 for bfloat16 and 0.65 for float16 over 10 steps; the steps'
// rounding errors feed through the later gradients, which bounds no tighter a priori).
int ddp(int steps, bool use_no_sync, bool with_unused, const std::string& hook = "") {
  init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  kiln::manual_seed(1234);
  const int64_t batch = 12 * world;
  const Tensor x = kiln::randn({batch, 8}), y = kiln::randn({batch, 4});
  kiln::manual_seed(100);  // rank 0's initial weights, which DDP gives every rank
  Net reference(with_unused);
  kiln::manual_seed(100 + rank);
  Net local(with_unused);
  nn::parallel::DistributedDataParallelOptions options;
  options.find_unused_parameters = with_unused;
  options.first_bucket_cap_mb = 0.0005;  // several buckets even for this small model
  auto model = nn::parallel::DistributedDataParallel(local, options);
  EXPECT_THAT(model->reducer().bucket_count() >= 2);
  namespace hooks = dist::algorithms::ddp_comm_hooks::default_hooks;
  if (hook == "allreduce") model->register_comm_hook(nullptr, &hooks::allreduce_hook);
  if (hook == "fp16") model->register_comm_hook(dist::default_process_group(), &hooks::fp16_compress_hook);
  if (hook == "bf16") model->register_comm_hook(nullptr, &hooks::bf16_compress_hook);
  kiln::optim::SGD reference_opt(reference->parameters(), kiln::optim::SGDOptions(0.1).momentum(0.9));
  kiln::optim::SGD opt(model->parameters(), kiln::optim::SGDOptions(0.1).momentum(0.9));
  const int64_t share = batch / world;
  const double u = hook_roundoff(hook);
  for (int step = 0; step < steps; ++step) {
    std::vector<std::map<std::string, Tensor>> shares;
    if (step == 0 && u > 0)
      shares =
          gradients_of_shares(*reference, x, y, world, share, [&](const Tensor& in) { return reference->forward(in); });
    reference_opt.zero_grad();
    kiln::mse_loss(reference->forward(x), y).backward();
    reference_opt.step();

    opt.zero_grad();
    const Tensor xs = x.narrow(0, rank * share, share), ys = y.narrow(0, rank * share, share);
    if (use_no_sync) {
      const int64_t half = share / 2;
      {
        auto guard = model->no_sync();
        (kiln::mse_loss(model->forward(xs.narrow(0, 0, half)), ys.narrow(0, 0, half)) * 0.5).backward();
      }
      (kiln::mse_loss(model->forward(xs.narrow(0, half, half)), ys.narrow(0, half, half)) * 0.5).backward();
    } else {
      kiln::mse_loss(model->forward(xs), ys).backward();
    }
    if (!shares.empty()) expect_within_compression_bound(*local, shares, u);
    opt.step();
  }
  const auto expected = reference->named_parameters();
  const auto got = local->named_parameters();
  double worst = 0;
  for (const auto& item : expected) {
    const Tensor diff = (got[item.key()] - item.value()).abs().max();
    const double scale = item.value().abs().max().item<double>();
    worst = std::max(worst, diff.item<double>() / std::max(scale, 1e-6));
  }
  if (u == 0) {
    EXPECT_THAT(worst < 1e-5);
  } else {
    EXPECT_THAT(worst < 4 * u);
    EXPECT_THAT(worst > 1e-5);  // the narrow dtype's rounding shows: the hook ran
  }
  // Every rank holds the very same parameters.
  Tensor all = kiln::cat({local->fc1->weight.reshape({-1}), local->fc2->weight.reshape({-1})});
  std::vector<Tensor> copies;
  for (int r = 0; r < world; ++r) copies.push_back(kiln::zeros_like(all));
  dist::all_gather(copies, all);
  for (int r = 0; r < world; ++r) EXPECT_THAT(copies[r].equal(all));
  dist::destroy_process_group();
  std::printf("rank %d: ddp%s%s relative difference %.3g, %s\n", rank, hook.empty() ? "" : " with hook ", hook.c_str(),
              worst, g_failures ? "FAILED" : "ok");
  return g_failures ? 1 : 0;
}

// A gradient against the expected one, to float32's rounding (relative to its largest element).
void expect_close_gradient(int round, const std::string& name, const Tensor& want, const Tensor& have) {
  const double error = (want - have).abs().max().item<double>() / std::max(want.abs().max().item<double>(), 1e-6);
  if (!(error < 1e-5)) std::printf("round %d: %s relative error %.3g\n", round, name.c_str(), error);
  EXPECT_THAT(error < 1e-5);
}

// A communication hook of the user's: it doubles each bucket, sums it over the ranks and, in a
// then() callback, divides by the world size, recording each call in its state. DDP must call it
// once per bucket, in bucket order, with the bucket's parameters, and give each .grad twice the
// average over the ranks (computed here by one reference model on every rank's share). Two rounds.
int ddp_custom_hook() {
  init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  kiln::manual_seed(11);
  const Tensor x = kiln::randn({4 * world, 8}), y = kiln::randn({4 * world, 4});
  kiln::manual_seed(300);
  Net reference(false);
  kiln::manual_seed(300 + rank);
  Net local(false);
  nn::parallel::DistributedDataParallelOptions options;
  options.first_bucket_cap_mb = 0.0001;  // a bucket per parameter: 4 buckets
  options.bucket_cap_mb = 0.0003;
  auto model = nn::parallel::DistributedDataParallel(local, options);
  struct Calls {
    std::vector<size_t> indices, parameter_counts;
    std::vector<bool> last;
    int bad_views = 0;
  };
  auto calls = std::make_shared<Calls>();
  model->register_comm_hook(calls, [](const std::shared_ptr<Calls>& state, dist::GradBucket& bucket) {
    state->indices.push_back(bucket.index());
    state->last.push_back(bucket.is_last());
    state->parameter_counts.push_back(bucket.parameters().size());
    const std::vector<Tensor> views = bucket.gradients();
    int64_t offset = 0;
    for (size_t k = 0; k < views.size(); ++k) {
      const Tensor& p = bucket.parameters()[k];
      if (views[k].sizes() != p.sizes() || !views[k].reshape({-1}).equal(bucket.buffer().narrow(0, offset, p.numel())))
        ++state->bad_views;
      offset += p.numel();
    }
    Tensor doubled = bucket.buffer() * 2.0;
    auto work = dist::all_reduce(doubled, dist::ReduceOp::SUM, /*async_op=*/true);
    const double ranks = dist::get_world_size();
    return std::make_shared<dist::Future>(work, doubled)->then([ranks](dist::Future& summed) {
      return summed.value() / ranks;
    });
  });
  const std::vector<size_t> counts = model->reducer().bucket_parameter_counts();
  EXPECT_THAT(counts.size() == 4);
  for (int round = 0; round < 2; ++round) {
    for (const auto& p : reference->parameters()) p.mutable_grad() = Tensor();
    for (const auto& p : local->parameters()) p.mutable_grad() = Tensor();
    calls->indices.clear();
    calls->last.clear();
    calls->parameter_counts.clear();
    for (int r = 0; r < world; ++r)
      (kiln::mse_loss(reference->forward(x.narrow(0, 4 * r, 4)), y.narrow(0, 4 * r, 4)) / double(world)).backward();
    kiln::mse_loss(model->forward(x.narrow(0, 4 * rank, 4)), y.narrow(0, 4 * rank, 4)).backward();
    EXPECT_THAT(calls->parameter_counts == counts);
    for (size_t i = 0; i < calls->indices.size(); ++i) {
      EXPECT_THAT(calls->indices[i] == i);
      EXPECT_THAT(calls->last[i] == (i + 1 == counts.size()));
    }
    EXPECT_THAT(calls->bad_views == 0);
    const auto expected = reference->named_parameters();
    const auto got = local->named_parameters();
    for (const auto& item : expected) {
      const Tensor want = item.value().grad() * 2.0, have = got[item.key()].grad();
      expect_close_gradient(round, item.key(), want, have);
    }
  }
  dist::destroy_process_group();
  std::printf("rank %d: ddp custom hook, %zu calls a backward, %s\n", rank, calls->indices.size(),
              g_failures ? "FAILED" : "ok");
  return g_failures ? 1 : 0;
}

// A model whose "spare" layer only the ranks told so use, and whose "never" layer no rank uses.
struct PartlyUsedNetImpl : nn::Module {
  PartlyUsedNetImpl() {
    fc = register_module("fc", nn::Linear(8, 4));
    spare = register_module("spare", nn::Linear(4, 4));
    never = register_module("never", nn::Linear(4, 4));
    twin_a = register_parameter("twin_a", kiln::randn({4, 4}) * 0.3);
    twin_b = register_parameter("twin_b", kiln::randn({4, 4}) * 0.3);
  }
  Tensor forward(const Tensor& x) {
    // The twins' gradients are one tensor (add's backward hands its gradient to both inputs).
    const Tensor h = fc->forward(x).tanh().matmul(twin_a + twin_b);
    return use_spare ? spare->forward(h) : h;
  }
  nn::Linear fc{nullptr}, spare{nullptr}, never{nullptr};
  Tensor twin_a, twin_b;
  bool use_spare = false;
};
KILN_MODULE(PartlyUsedNet);

// find_unused_parameters as PyTorch: rank 0 alone uses "spare", no rank uses "never"; "twin_a" and
// "twin_b" get one gradient tensor, each in a bucket of its own, averaged once each. Each rank's
// .grad must be the average over ranks of the local gradients (spare's: rank 0's over the world
// size), computed here by one reference model on every rank's share, and "never" must keep an
// undefined gradient. Two rounds without zero_grad: the second averages the accumulated .grad.
int ddp_partly_unused() {
  init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  kiln::manual_seed(7);
  const Tensor x = kiln::randn({4 * world, 8}), y = kiln::randn({4 * world, 4});
  kiln::manual_seed(200);
  PartlyUsedNet reference;
  kiln::manual_seed(200 + rank);
  PartlyUsedNet local;
  nn::parallel::DistributedDataParallelOptions options;
  options.find_unused_parameters = true;
  options.first_bucket_cap_mb = 0.0001;  // a bucket per parameter or so
  auto model = nn::parallel::DistributedDataParallel(local, options);
  local->use_spare = rank == 0;
  for (int round = 0; round < 2; ++round) {
    for (int r = 0; r < world; ++r) {
      reference->use_spare = r == 0;
      (kiln::mse_loss(reference->forward(x.narrow(0, 4 * r, 4)), y.narrow(0, 4 * r, 4)) / double(world)).backward();
    }
    kiln::mse_loss(model->forward(x.narrow(0, 4 * rank, 4)), y.narrow(0, 4 * rank, 4)).backward();
    const auto expected = reference->named_parameters();
    const auto got = local->named_parameters();
    for (const auto& item : expected) {
      const Tensor& want = item.value().grad();
      const Tensor& have = got[item.key()].grad();
      if (item.key().rfind("never", 0) == 0) {
        EXPECT_THAT(!want.defined() && !have.defined());
        continue;
      }
      EXPECT_THAT(want.defined() && have.defined());
      if (!want.defined() || !have.defined()) continue;
      expect_close_gradient(round, item.key(), want, have);
    }
  }
  dist::destroy_process_group();
  std::printf("rank %d: ddp partly unused %s\n", rank, g_failures ? "FAILED" : "ok");
  return g_failures ? 1 : 0;
}

// Every dtype and op the gloo backend takes, in all_reduce, broadcast and all_gather, at two sizes
// (the test sets KILN_GLOO_RING_MAX_BYTES between them, so that both of Gloo's all-reduce
// algorithms run), twice over on fresh tensors: Gloo's instances are kept per shape, not per memory.
// With `options_api`, each call has a timeout of its own, which takes Gloo's options API.
int every_dtype(const std::vector<kiln::ScalarType>& dtypes, bool options_api) {
  init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  auto group = dist::default_process_group();
  auto own_timeout = [](auto options) {
    options.timeout = timeout_from_env() + std::chrono::milliseconds(1);
    return options;
  };
  auto all_reduce = [&](Tensor& t, dist::ReduceOp op) {
    std::vector<Tensor> tensors{t};
    dist::AllreduceOptions options;
    options.reduceOp = op;
    if (!options_api) return void(dist::all_reduce(t, op));
    group->allreduce(tensors, own_timeout(options))->wait();
  };
  auto broadcast = [&](Tensor& t, int root) {
    std::vector<Tensor> tensors{t};
    dist::BroadcastOptions options;
    options.rootRank = root;
    if (!options_api) return void(dist::broadcast(t, root));
    group->broadcast(tensors, own_timeout(options))->wait();
  };
  auto all_gather = [&](std::vector<Tensor>& out, const Tensor& t) {
    std::vector<std::vector<Tensor>> outputs{out};
    std::vector<Tensor> inputs{t};
    if (!options_api) return void(dist::all_gather(out, t));
    group->allgather(outputs, inputs, own_timeout(dist::AllgatherOptions{}))->wait();
  };
  using kiln::ScalarType;
  const std::vector<dist::ReduceOp> ops = {dist::ReduceOp::SUM, dist::ReduceOp::AVG, dist::ReduceOp::PRODUCT,
                                           dist::ReduceOp::MIN, dist::ReduceOp::MAX};
  for (int round = 0; round < 2; ++round) {
    for (int64_t n : {int64_t(5), int64_t(300)}) {
      for (ScalarType dtype : dtypes) {
        const bool is_bool = dtype == kiln::kBool;
        auto of_rank = [&](int r) {
          std::vector<double> v(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) v[size_t(i)] = is_bool ? (r + i) % 2 : 1 + (r + i) % 3;
          return v;
        };
        auto make = [&](int r) { return kiln::tensor(of_rank(r)).to(dtype); };
        auto expect_values = [&](const Tensor& t, const std::vector<double>& want, const char* what) {
          if (t.to(kiln::kDouble).to_vector<double>() != want) {
            std::printf("FAILED %s of %lld %s in round %d\n", what, (long long)n, kiln::dtype_name(dtype), round);
            ++g_failures;
          }
        };
        for (dist::ReduceOp op : ops) {
          const bool sums = op == dist::ReduceOp::SUM || op == dist::ReduceOp::PRODUCT || op == dist::ReduceOp::AVG;
          if ((is_bool && sums) || (op == dist::ReduceOp::AVG && !kiln::is_floating(dtype))) continue;
          std::vector<double> want = of_rank(0);
          for (int r = 1; r < world; ++r) {
            const std::vector<double> v = of_rank(r);
            for (size_t i = 0; i < want.size(); ++i) {
              if (op == dist::ReduceOp::PRODUCT)
                want[i] *= v[i];
              else if (op == dist::ReduceOp::MIN)
                want[i] = std::min(want[i], v[i]);
              else if (op == dist::ReduceOp::MAX)
                want[i] = std::max(want[i], v[i]);
              else
                want[i] += v[i];
            }
          }
          if (op == dist::ReduceOp::AVG)
            for (double& w : want) w = double(kiln::tensor(w / world).to(dtype).to(kiln::kDouble).item<double>());
          Tensor t = make(rank);
          all_reduce(t, op);
          expect_values(t, want, dist::reduce_op_name(op));
        }
        Tensor b = make(rank);
        broadcast(b, world - 1);
        expect_values(b, of_rank(world - 1), "broadcast");
        std::vector<Tensor> gathered;
        for (int r = 0; r < world; ++r) gathered.push_back(kiln::zeros({n}, kiln::TensorOptions(dtype)));
        all_gather(gathered, make(rank));
        for (int r = 0; r < world; ++r) expect_values(gathered[size_t(r)], of_rank(r), "all_gather");
      }
    }
  }
  dist::barrier();
  dist::destroy_process_group();
  std::printf("rank %d of %d: every dtype %s\n", rank, world, g_failures ? "FAILED" : "ok");
  return g_failures ? 1 : 0;
}

// Floating-point sums on every rank are the very same bits (DDP's replicas must not drift), and
// near the sum in float64, for each floating dtype and for sizes that the ranks do not divide.
int identical_sums() {
  init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const std::vector<kiln::ScalarType> dtypes = {kiln::kFloat, kiln::kDouble, kiln::kHalf};
  for (kiln::ScalarType dtype : dtypes) {
    const double eps = dtype == kiln::kHalf ? 9.8e-4 : dtype == kiln::kFloat ? 1.2e-7 : 2.3e-16;
    for (int64_t n : {int64_t(1), int64_t(2), int64_t(3), int64_t(7), int64_t(13), int64_t(1001), int64_t(65537),
                      int64_t(300007)}) {
      // Values of mixed magnitudes, so that the order of the additions shows in the last bits.
      auto of_rank = [&](int r) {
        const Tensor i = kiln::arange(n, kiln::TensorOptions(kiln::kDouble));
        return ((i * 0.37 + 1.3 * r).sin() * (i * 0.11 + r).cos().exp() * 3.0).to(dtype);
      };
      std::vector<double> want(size_t(n), 0.0), scale(size_t(n), 0.0);
      for (int r = 0; r < world; ++r) {
        const std::vector<double> v = of_rank(r).to(kiln::kDouble).to_vector<double>();
        for (size_t k = 0; k < v.size(); ++k) {
          want[k] += v[k];
          scale[k] += std::abs(v[k]);
        }
      }
      Tensor t = of_rank(rank);
      dist::all_reduce(t);
      const std::vector<double> got = t.to(kiln::kDouble).to_vector<double>();
      size_t off = 0;
      for (size_t k = 0; k < got.size(); ++k)
        if (!(std::abs(got[k] - want[k]) <= 4 * world * eps * scale[k] + 1e-300)) ++off;
      std::vector<Tensor> copies;
      for (int r = 0; r < world; ++r) copies.push_back(kiln::zeros({n}, kiln::TensorOptions(dtype)));
      dist::all_gather(copies, t);
      int differing = 0;
      for (int r = 0; r < world; ++r) differing += copies[size_t(r)].equal(t) ? 0 : 1;
      if (off > 0 || differing > 0) {
        std::printf("FAILED %lld %s: %zu elements off the float64 sum, %d rank(s) with other bits\n", (long long)n,
                    kiln::dtype_name(dtype), off, differing);
        ++g_failures;
      }
    }
  }
  dist::destroy_process_group();
  std::printf("rank %d of %d: identical sums %s\n", rank, world, g_failures ? "FAILED" : "ok");
  return g_failures ? 1 : 0;
}

// Every rank leaves by _exit(0) right after one collective, the kind named (no destructor, no
// barrier on the way out): each rank's collective must still succeed, though its peers close
// their connections as soon as theirs returns.
int exit_after(const std::string& kind) {
  init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const double sum = world * (world + 1) / 2.0;
  bool ok = false;
  try {
    if (kind == "ring") {  // integers, within the ring's limit
      Tensor t = kiln::full({64}, int64_t(rank + 1), kiln::TensorOptions(kiln::kLong));
      dist::all_reduce(t);
      ok = all_equal(t, sum);
    } else if (kind == "halving_doubling") {  // floats past two ranks
      Tensor t = kiln::full({30001}, double(rank + 1));
      dist::all_reduce(t);
      ok = all_equal(t, sum);
    } else if (kind == "options") {  // a timeout of its own: Gloo's options API
      std::vector<Tensor> tensors{kiln::full({3000}, double(rank + 1))};
      dist::AllreduceOptions options;
      options.timeout = timeout_from_env() + std::chrono::milliseconds(1);
      dist::default_process_group()->allreduce(tensors, options)->wait();
      ok = all_equal(tensors[0], sum);
    } else if (kind == "broadcast") {
      Tensor t = kiln::full({5000}, double(rank));
      dist::broadcast(t, world - 1);
      ok = all_equal(t, world - 1);
    } else if (kind == "all_gather") {
      std::vector<Tensor> out;
      for (int r = 0; r < world; ++r) out.push_back(kiln::zeros({100}));
      dist::all_gather(out, kiln::full({100}, double(rank)));
      ok = true;
      for (int r = 0; r < world; ++r) ok = ok && all_equal(out[size_t(r)], r);
    } else if (kind == "barrier") {
      dist::barrier();
      ok = true;
    } else {
      std::printf("rank %d: no collective '%s'\n", rank, kind.c_str());
    }
    if (!ok) std::printf("rank %d: %s gave wrong values\n", rank, kind.c_str());
  } catch (const std::exception& e) {
    std::printf("rank %d: %s failed: %s\n", rank, kind.c_str(), e.what());
  }
  std::fflush(stdout);
  _exit(ok ? 0 : 1);
}

// The last rank dies (exits, or stops with SIGSTOP) after the group is made; the others must get
// kiln::Error from their next all_reduce, within the timeout: the group's, or `call_timeout_ms`
// of the call itself where above 0.
int peer_fails(bool stop, int call_timeout_ms = 0) {
  init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  dist::barrier();
  if (rank == world - 1) {
    std::fflush(stdout);
    if (stop) raise(SIGSTOP);
    _exit(3);
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    if (call_timeout_ms > 0) {
      std::vector<Tensor> tensors{kiln::ones({1000})};
      dist::AllreduceOptions options;
      options.timeout = std::chrono::milliseconds(call_timeout_ms);
      dist::default_process_group()->allreduce(tensors, options)->wait();
    } else {
      dist::all_reduce(kiln::ones({1000}));
    }
    std::printf("rank %d: all_reduce returned with a rank gone\n", rank);
    return 1;
  } catch (const kiln::Error& e) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("rank %d: error after %.2f s: %s\n", rank, seconds, e.what());
    return 0;  // and the group is taken down at exit, with a rank gone
  }
}

// Ranks that call a collective on different shapes: an error on every rank naming both calls,
// without KILN_DISTRIBUTED_DEBUG. `op`: all_reduce, broadcast or all_gather.
int mismatched_shapes(const std::string& op) {
  init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  try {
    if (op == "all_reduce") {
      dist::all_reduce(kiln::ones({rank + 2}));
    } else if (op == "broadcast") {
      dist::broadcast(kiln::ones({2, rank + 1}, kiln::TensorOptions(kiln::kDouble)), 0);
    } else {
      std::vector<Tensor> out;
      for (int r = 0; r < world; ++r) out.push_back(kiln::zeros({rank + 1}));
      dist::all_gather(out, kiln::ones({rank + 1}));
    }
    std::printf("rank %d: %s took mismatched shapes\n", rank, op.c_str());
    return 1;
  } catch (const kiln::Error& e) {
    std::printf("rank %d: %s\n", rank, e.what());
  }
  // The group still works after the error (the check ran before the collective).
  Tensor t = kiln::ones({3});
  dist::all_reduce(t);
  EXPECT_THAT(all_equal(t, world));
  dist::destroy_process_group();
  return g_failures ? 1 : 0;
}

// The ranks' models differ (or, with "buckets", their bucket sizes): DDP's construction names the
// first difference.
int mismatched_models(const std::string& what) {
  init();
  const int rank = dist::get_rank();
  const bool buckets = what == "buckets";  // the same model, bucketed differently
  nn::Sequential model(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, rank == 0 || buckets ? 4 : 5));
  nn::parallel::DistributedDataParallelOptions options;
  if (buckets) options.first_bucket_cap_mb = rank == 0 ? 1 : 0.0001;
  try {
    auto ddp = nn::parallel::DistributedDataParallel(model, options);
    std::printf("rank %d: DDP took different models\n", rank);
    return 1;
  } catch (const kiln::Error& e) {
    std::printf("rank %d: %s\n", rank, e.what());
    dist::destroy_process_group();
    return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  try {
    if (scenario == "collectives") return collectives();
    if (scenario == "c10d") return c10d_file_store(argc > 2 ? argv[2] : "");
    if (scenario == "ddp") return ddp(argc > 2 ? std::atoi(argv[2]) : 5, false, false);
    if (scenario == "ddp_no_sync") return ddp(argc > 2 ? std::atoi(argv[2]) : 5, true, false);
    if (scenario == "ddp_unused") return ddp(argc > 2 ? std::atoi(argv[2]) : 5, false, true);
    if (scenario == "ddp_hook" && argc > 3) {  // ddp_hook allreduce|fp16|bf16 STEPS [no_sync|unused]
      const std::string variant = argc > 4 ? argv[4] : "";
      return ddp(std::atoi(argv[3]), variant == "no_sync", variant == "unused", argv[2]);
    }
    if (scenario == "ddp_custom_hook") return ddp_custom_hook();
    if (scenario == "no_destroy") {  // the group is taken down at exit
      init();
      dist::all_reduce(kiln::ones({4}));
      std::printf("rank %d: leaving without destroy_process_group\n", dist::get_rank());
      return 0;
    }
    if (scenario == "exit") return peer_fails(false);
    if (scenario == "identical_sums") return identical_sums();
    if (scenario == "exit_after") return exit_after(argc > 2 ? argv[2] : "");
    if (scenario == "stop") return peer_fails(true, argc > 2 ? std::atoi(argv[2]) : 0);
    if (scenario == "every_dtype" || scenario == "narrow_dtypes") {
      const bool options_api = argc > 2 && std::string(argv[2]) == "options_api";
      if (scenario == "narrow_dtypes") return every_dtype({kiln::kHalf, kiln::kBFloat16}, options_api);
      return every_dtype(
          {kiln::kFloat, kiln::kDouble, kiln::kLong, kiln::kInt, kiln::kByte, kiln::kChar, kiln::kHalf, kiln::kBool},
          options_api);
    }
    if (scenario == "shapes") return mismatched_shapes(argc > 2 ? argv[2] : "all_reduce");
    if (scenario == "ddp_partly_unused") return ddp_partly_unused();
    if (scenario == "models") return mismatched_models(argc > 2 ? argv[2] : "");
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: kiln_distributed_worker collectives|c10d FOLDER|ddp|ddp_no_sync|ddp_unused [STEPS]|"
               "ddp_hook allreduce|fp16|bf16 STEPS [no_sync|unused]|ddp_custom_hook|ddp_partly_unused|"
               "identical_sums|exit|exit_after KIND|stop [CALL_TIMEOUT_MS]|every_dtype|narrow_dtypes [options_api]|"
               "shapes [all_reduce|broadcast|all_gather]|models [buckets]\n");
  return 2;
}
