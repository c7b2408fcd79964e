#include "cli/train.h"

#include <kiln/distributed.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "cli/launch.h"
#include "cli/models.h"
#include "cli/progress.h"

extern char** environ;

namespace kiln::cli {

namespace {

namespace F = torch::nn::functional;

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name, std::vector<Tensor> params,
                                                        double lr) {
  if (name == "adam") return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr));
  if (name == "adamw") return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(lr));
  if (name == "sgd") return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr).momentum(0.9));
  if (name == "rmsprop") return std::make_unique<torch::optim::RMSprop>(params, torch::optim::RMSpropOptions(lr));
  throw Error("train: unknown optimizer '" + name + "' (adam, adamw, sgd or rmsprop)");
}

// Share of `images` the model classifies as `labels`, in batches of 1000 without autograd.
double accuracy(torch::nn::Sequential& model, const Tensor& images, const Tensor& labels, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  model->eval();
  int64_t correct = 0;
  const int64_t n = images.size(0), batch = 1000;
  for (int64_t first = 0; first < n; first += batch) {
    const int64_t len = std::min(batch, n - first);
    Tensor predicted = model->forward(images.narrow(0, first, len).to(device)).argmax(1);
    correct += predicted.eq(labels.narrow(0, first, len).to(device)).sum().item<int64_t>();
  }
  model->train();
  return double(correct) / double(n);
}

// Open MPI's size of the job, where mpirun started this process (0 where not).
int mpi_world_size() {
  const char* v = std::getenv("OMPI_COMM_WORLD_SIZE");
  return v ? std::atoi(v) : 0;
}

// `kiln train --backend mpi --nproc-per-node N`: this command again as N ranks of an mpirun job.
// mpirun gets this program's path (its own /proc/self/exe is mpirun), root's consent where this is
// root (Open MPI refuses root otherwise), and each rank's share of the cores in KILN_NUM_THREADS.
int launch_mpi_ranks(const TrainOptions& o) {
  std::string self(4096, '\0');
  const ssize_t length = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  KILN_CHECK(length > 0, "train: cannot find this program's path: ", std::strerror(errno));
  self.resize(size_t(length));
  const int cores = std::max(1, int(std::thread::hardware_concurrency()));
  const char* threads = std::getenv("KILN_NUM_THREADS");
  std::vector<std::string> args = {
      "mpirun",
      "-np",
      std::to_string(o.nproc_per_node),
      "--bind-to",
      "none",
      "-x",
      std::string("KILN_NUM_THREADS=") + (threads ? threads : std::to_string(std::max(1, cores / o.nproc_per_node)))};
  if (::geteuid() == 0) args.push_back("--allow-run-as-root");
  if (o.nproc_per_node > cores) args.push_back("--oversubscribe");
  args.push_back(self);
  args.insert(args.end(), o.command_line.begin() + 1, o.command_line.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int failed = ::posix_spawnp(&pid, "mpirun", nullptr, nullptr, argv.data(), environ);
  KILN_CHECK(failed == 0, "train: --backend mpi starts the ranks with mpirun, which could not be run (",
             std::strerror(failed), "): apt-get install openmpi-bin");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// `kiln train --nproc-per-node N`: this command again as N ranks (they see LOCAL_RANK set).
int launch_ranks(const TrainOptions& o) {
  if (o.backend == "mpi") return launch_mpi_ranks(o);
  LaunchOptions job;
  job.nproc_per_node = o.nproc_per_node;
  job.command = o.command_line;
  job.command.at(0) = "/proc/self/exe";
  const char* port = std::getenv("MASTER_PORT");
  job.master_port = port ? std::atoi(port) : free_port();
  return launch(job);
}

}  // namespace

int train(const TrainOptions& o) {
  if (o.nproc_per_node > 1 && !std::getenv("LOCAL_RANK") && !mpi_world_size()) return launch_ranks(o);
  // A rank of a job (started by the above, by `kiln launch` or by mpirun): its share of every
  // batch, the gradients averaged by DistributedDataParallel. Rank 0 reports.
  const char* world_size = std::getenv("WORLD_SIZE");
  const bool distributed = (world_size && std::atoi(world_size) > 1) || mpi_world_size() > 1;
  torch::Device device(o.device);
  // On GPUs: NCCL, one device per rank (cuda:LOCAL_RANK unless --device names one).
  const char* local_rank = std::getenv("LOCAL_RANK");
  if (!local_rank) local_rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (distributed && device.is_cuda() && !device.has_index() && local_rank)
    device = torch::Device(torch::kCUDA, std::atoi(local_rank));
  std::string backend = o.backend;
  if (backend == "auto") backend = device.is_cuda() ? "nccl" : mpi_world_size() ? "mpi" : "gloo";
  if (distributed && backend == "mpi")
    kiln::distributed::init_process_group("mpi", "env://", -1, -1);
  else if (distributed)
    kiln::distributed::init_process_group(backend);
  const int rank = distributed ? kiln::distributed::get_rank() : 0;
  const int world = distributed ? kiln::distributed::get_world_size() : 1;
  const bool reports = rank == 0;
  KILN_CHECK(o.comm_hook == "none" || distributed, "train: --comm-hook ", o.comm_hook,
             " compresses the gradients that ranks all-reduce: it needs --nproc-per-node 2 or more (or a job that "
             "kiln launch or mpirun started)");
  if (o.threads > 0) set_num_threads(o.threads);
  KILN_CHECK(device.is_cpu() || kiln::cuda::is_available(), "train: --device ", o.device,
             " was asked for, but CUDA is not available: ", kiln::cuda::unavailable_reason());
  torch::manual_seed(o.seed);
  const std::string dir = o.data_dir.empty() ? data::fashion_mnist_dir() : o.data_dir;
  data::Dataset train_set = data::load_fashion_mnist(dir, /*train=*/true);
  data::Dataset test_set = data::load_fashion_mnist(dir, /*train=*/false);
  auto normalize = [](const Tensor& images) { return (images - fashion::kPixelMean) / fashion::kPixelStd; };
  const Tensor train_images = normalize(train_set.images), test_images = normalize(test_set.images);

  torch::nn::Sequential model = o.model == "cnn" ? fashion::make_cnn() : fashion::make_mlp();
  model->to(device);
  kiln::nn::parallel::DistributedDataParallel<torch::nn::SequentialImpl> ddp(nullptr);
  if (distributed) {
    ddp = kiln::nn::parallel::DistributedDataParallel(model);  // rank 0's initial weights
    namespace hooks = kiln::distributed::algorithms::ddp_comm_hooks::default_hooks;
    if (o.comm_hook == "fp16") ddp->register_comm_hook(nullptr, &hooks::fp16_compress_hook);
    if (o.comm_hook == "bf16") ddp->register_comm_hook(nullptr, &hooks::bf16_compress_hook);
  }
  auto optimizer = make_optimizer(o.optimizer, model->parameters(), o.lr);
  // The same shuffled order on every rank (same seed); each rank takes its share of each batch.
  data::DataLoader loader(train_images, train_set.labels, o.batch_size, /*shuffle=*/true, o.seed);
  if (reports) {
    std::printf("kiln train: %s on %s, Fashion-MNIST (%lld training, %lld test images from %s), %s lr %g, batch %lld",
                o.model.c_str(), device.str().c_str(), (long long)train_set.size(), (long long)test_set.size(),
                dir.c_str(), o.optimizer.c_str(), o.lr, (long long)o.batch_size);
    if (distributed)
      std::printf(" split over %d ranks (%s%s%s)", world, kiln::distributed::get_backend().c_str(),
                  o.comm_hook == "none" ? "" : ", gradients in ",
                  o.comm_hook == "fp16"   ? "float16"
                  : o.comm_hook == "bf16" ? "bfloat16"
                                          : "");
    std::printf("\n");
    std::fflush(stdout);
  }

  double train_seconds = 0, test_accuracy = 0;
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    std::optional<ProgressBar> bar;
    if (reports) bar.emplace("epoch " + std::to_string(epoch) + "/" + std::to_string(o.epochs), train_set.size());
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t seen = 0;
    for (const auto& batch : loader) {
      Tensor images = batch.data, labels = batch.target;
      const int64_t n = images.size(0);
      if (distributed) {
        const int64_t first = n * rank / world, end = n * (rank + 1) / world;
        images = images.narrow(0, first, end - first);
        labels = labels.narrow(0, first, end - first);
      }
      optimizer->zero_grad();
      Tensor loss = F::cross_entropy(distributed ? ddp->forward(images.to(device)) : model->forward(images.to(device)),
                                     labels.to(device));
      loss.backward();
      optimizer->step();
      loss_sum += loss.item<double>() * double(images.size(0));
      seen += images.size(0);
      if (bar) bar->update(n, loss_sum / double(seen));
    }
    if (distributed) {  // the epoch's loss over every rank's samples
      Tensor totals = torch::tensor(std::vector<double>{loss_sum, double(seen)});
      kiln::distributed::all_reduce(totals);
      loss_sum = totals[0].item<double>();
      seen = int64_t(totals[1].item<double>());
    }
    const double seconds =
        bar ? bar->finish() : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    train_seconds += seconds;
    if (!reports) continue;
    test_accuracy = accuracy(model, test_images, test_set.labels, device);
    std::printf("epoch %d: loss %.4f test_accuracy %.4f seconds %.2f samples/s %.0f\n", epoch,
                loss_sum / double(std::max<int64_t>(seen, 1)), test_accuracy, seconds, double(seen) / seconds);
    std::fflush(stdout);
  }
  if (distributed) {
    kiln::distributed::barrier();  // rank 0 has tested the last epoch
    kiln::distributed::destroy_process_group();
  }
  if (!reports) return 0;
  if (!o.save.empty()) {
    torch::save(model, o.save);
    std::printf("saved weights to %s\n", o.save.c_str());
  }
  std::printf("accuracy %.4f seconds_per_epoch %.2f\n", test_accuracy, o.epochs > 0 ? train_seconds / o.epochs : 0.0);
  return 0;
}

}  // namespace kiln::cli
