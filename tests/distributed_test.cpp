// kiln::distributed: collectives, DDP and failures across real processes (tests/distributed/
// worker.cpp, one per rank, started here with torchrun's variables), and the checks a single
// process can make.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <kiln/distributed.h>
#include <kiln/kiln.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cuda_fake_driver.h"
#include "expect_error.h"

extern char** environ;

namespace dist = kiln::distributed;
using kiln::Tensor;

namespace {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

std::filesystem::path fresh_folder(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("kiln-distributed-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(free_port()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

struct Rank {
  pid_t pid = 0;
  int status = -1;  // waitpid's
  std::string output;
  bool exited_zero() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs `world` workers with `args`, each with RANK and the rest set, for at most `limit`; once
// rank 0 has ended the others get `grace` to end before they are killed (a stopped rank).
std::vector<Rank> run_ranks(int world, const std::vector<std::string>& args,
                            const std::vector<std::string>& env_extra = {}, double grace = 10, double limit = 60) {
  const auto folder = fresh_folder("ranks");
  const int port = free_port();
  std::vector<Rank> ranks(world);
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string entry = *e;
      const std::string name = entry.substr(0, entry.find('='));
      if (name != "RANK" && name != "WORLD_SIZE" && name != "MASTER_ADDR" && name != "MASTER_PORT" &&
          name != "KILN_NUM_THREADS")
        env.push_back(entry);
    }
    env.push_back("RANK=" + std::to_string(r));
    env.push_back("WORLD_SIZE=" + std::to_string(world));
    env.push_back("MASTER_ADDR=127.0.0.1");
    env.push_back("MASTER_PORT=" + std::to_string(port));
    env.push_back("KILN_NUM_THREADS=1");
    for (const auto& e : env_extra) env.push_back(e);
    std::vector<std::string> argv_strings{KILN_DISTRIBUTED_WORKER};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv, envp;
    for (auto& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string log = (folder / ("rank" + std::to_string(r))).string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    EXPECT_EQ(::posix_spawn(&ranks[r].pid, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto kill_at = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
  for (int running = world; running > 0;) {
    for (auto& rank : ranks) {
      if (rank.status != -1) continue;
      if (::waitpid(rank.pid, &rank.status, WNOHANG) == rank.pid) {
        --running;
        if (&rank == &ranks[0])
          kill_at = std::min(kill_at, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                         std::chrono::duration<double>(grace)));
      } else {
        rank.status = -1;
      }
    }
    if (running > 0 && Clock::now() >= kill_at)
      for (auto& rank : ranks)
        if (rank.status == -1) ::kill(rank.pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int r = 0; r < world; ++r) {
    std::ifstream in(folder / ("rank" + std::to_string(r)));
    std::stringstream text;
    text << in.rdbuf();
    ranks[r].output = text.str();
  }
  std::filesystem::remove_all(folder);
  return ranks;
}

void expect_all_pass(const std::vector<Rank>& ranks) {
  for (size_t r = 0; r < ranks.size(); ++r)
    EXPECT_TRUE(ranks[r].exited_zero()) << "rank " << r << " (status " << ranks[r].status << "):\n" << ranks[r].output;
}

// The workers run kernels on the interpreter: they test communication, not kernels, and a rank
// compiling while another waits would make the timings below the compiler's.
const std::string kInterp = "KILN_BACKEND=interp";

}  // namespace

TEST(Distributed, CollectivesOnTwoRanks) { expect_all_pass(run_ranks(2, {"collectives"}, {kInterp})); }

TEST(Distributed, CollectivesOnThreeRanks) { expect_all_pass(run_ranks(3, {"collectives"}, {kInterp})); }

TEST(Distributed, C10dProcessGroupGlooOverAFileStore) {
  const auto folder = fresh_folder("store");
  expect_all_pass(run_ranks(2, {"c10d", folder.string()}, {kInterp}));
  std::filesystem::remove_all(folder);
}

// A folder that earlier jobs used, one of which crashed after joining: each job gets its own.
TEST(Distributed, FileStoreFolderReusedByLaterJobs) {
  const auto folder = fresh_folder("reused");
  expect_all_pass(run_ranks(2, {"c10d", folder.string()}, {kInterp}));
  expect_all_pass(run_ranks(2, {"c10d", folder.string()}, {kInterp}));
  // A job whose one member joined and died, leaving a key behind.
  const pid_t dead = ::fork();
  if (dead == 0) _exit(0);
  ::waitpid(dead, nullptr, 0);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::ofstream(folder / "members") << "7\n" << dead << " " << host << "\n";
  std::filesystem::create_directories(folder / "job-7");
  std::ofstream(folder / "job-7" / "kiln%2Fgloo%2Frank_0") << "stale";
  expect_all_pass(run_ranks(2, {"c10d", folder.string()}, {kInterp}));
  EXPECT_FALSE(std::filesystem::exists(folder / "job-7"));
  EXPECT_TRUE(std::filesystem::exists(folder / "job-8"));
  std::filesystem::remove_all(folder);
}

TEST(Distributed, DdpOnTwoRanksMatchesOneProcessOnTheWholeBatch) {
  const auto ranks = run_ranks(2, {"ddp", "10"}, {kInterp});
  expect_all_pass(ranks);
  EXPECT_NE(ranks[0].output.find("ddp relative difference"), std::string::npos) << ranks[0].output;
}

TEST(Distributed, DdpWithNoSyncMatchesOneProcess) { expect_all_pass(run_ranks(2, {"ddp_no_sync", "5"}, {kInterp})); }

TEST(Distributed, DdpFindsUnusedParameters) { expect_all_pass(run_ranks(2, {"ddp_unused", "3"}, {kInterp})); }

// PyTorch's communication hooks over Gloo: fp16_compress_hook training 10 steps (and with no_sync)
// to parameters identical across ranks and close to float32's, allreduce_hook (with
// find_unused_parameters) to float32's own; bf16_compress_hook training 10 steps.
TEST(Distributed, DdpCommHooksOnTwoRanks) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"ddp_hook", "fp16", "10"},
                                             {"ddp_hook", "bf16", "10"},
                                             {"ddp_hook", "fp16", "5", "no_sync"},
                                             {"ddp_hook", "allreduce", "10", "unused"}}) {
    const auto ranks = run_ranks(2, args, {kInterp});
    expect_all_pass(ranks);
    EXPECT_NE(ranks[0].output.find("ddp with hook " + args[1]), std::string::npos) << ranks[0].output;
  }
}

// A hook of the user's, with a state, is called once per bucket in bucket order, and its future's
// tensor (then() callbacks included) becomes the gradients.
TEST(Distributed, DdpCustomCommHookIsCalledPerBucketInOrder) {
  const auto ranks = run_ranks(2, {"ddp_custom_hook"}, {kInterp});
  expect_all_pass(ranks);
  EXPECT_NE(ranks[0].output.find("ddp custom hook, 4 calls a backward, ok"), std::string::npos) << ranks[0].output;
}

TEST(Distributed, DdpOnFourRanks) { expect_all_pass(run_ranks(4, {"ddp", "3"}, {kInterp})); }

TEST(Distributed, GroupLeftAtExitIsTakenDown) {
  const auto ranks = run_ranks(2, {"no_destroy"}, {kInterp});
  expect_all_pass(ranks);
  EXPECT_NE(ranks[1].output.find("leaving without destroy_process_group"), std::string::npos) << ranks[1].output;
}

TEST(Distributed, RankThatExitsIsAnErrorOnTheOthers) {
  const auto ranks = run_ranks(3, {"exit"}, {kInterp, "KILN_TEST_TIMEOUT_MS=4000"});
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(ranks[r].exited_zero()) << ranks[r].output;
    EXPECT_NE(ranks[r].output.find("all_reduce(SUM) (gloo) failed"), std::string::npos) << ranks[r].output;
  }
  EXPECT_TRUE(WIFEXITED(ranks[2].status) && WEXITSTATUS(ranks[2].status) == 3);
}

TEST(Distributed, StoppedRankIsAnErrorOnTheOthersWithinTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  const auto ranks = run_ranks(2, {"stop"}, {kInterp, "KILN_TEST_TIMEOUT_MS=1500"}, /*grace=*/0.2);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(ranks[0].exited_zero()) << ranks[0].output;
  EXPECT_NE(ranks[0].output.find("all_reduce(SUM) (gloo) failed"), std::string::npos) << ranks[0].output;
  EXPECT_LT(seconds, 30);
}

// The same through Gloo's options API, which buffers past the ring's limit take (lowered so that
// 1000 floats do), and a call with a timeout of its own (the group's is 30 s here).
TEST(Distributed, StoppedRankIsAnErrorThroughEveryGlooPath) {
  for (const auto& [args, env] : std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>>{
           {{"stop"}, {kInterp, "KILN_TEST_TIMEOUT_MS=1500", "KILN_GLOO_RING_MAX_BYTES=64"}},
           {{"stop", "1500"}, {kInterp, "KILN_TEST_TIMEOUT_MS=30000"}}}) {
    const auto start = std::chrono::steady_clock::now();
    const auto ranks = run_ranks(2, args, env, /*grace=*/0.2);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(ranks[0].exited_zero()) << ranks[0].output;
    EXPECT_NE(ranks[0].output.find("all_reduce(SUM) (gloo) failed"), std::string::npos) << ranks[0].output;
    EXPECT_LT(seconds, 25);
  }
}

// Gloo's ring and halving-doubling (past a lowered limit) on every dtype and op, with 2 and 4
// ranks; kiln's limit with 3; and Gloo's options API (calls with a timeout of their own).
TEST(Distributed, EveryDtypeAndOpThroughEveryGlooAllreduce) {
  expect_all_pass(run_ranks(2, {"every_dtype"}, {kInterp, "KILN_GLOO_RING_MAX_BYTES=256"}));
  expect_all_pass(run_ranks(4, {"every_dtype"}, {kInterp, "KILN_GLOO_RING_MAX_BYTES=256"}));
  expect_all_pass(run_ranks(3, {"every_dtype"}, {kInterp}));
  expect_all_pass(run_ranks(3, {"every_dtype", "options_api"}, {kInterp}));
  expect_all_pass(run_ranks(3, {"narrow_dtypes"}, {kInterp}));  // float16 and bfloat16
  expect_all_pass(run_ranks(2, {"narrow_dtypes", "options_api"}, {kInterp}));
}

// Past two ranks every float all-reduce takes halving-doubling: each rank's result is the very
// same bits, in every floating dtype, on sizes the ranks do not divide (Gloo's ring differs in
// the last bits here).
TEST(Distributed, GlooFloatSumsAreTheSameBitsOnEveryRank) {
  expect_all_pass(run_ranks(3, {"identical_sums"}, {kInterp}));
  expect_all_pass(run_ranks(4, {"identical_sums"}, {kInterp}));
}

// Ranks that _exit() as soon as their collective returns, job after job, through each of kiln's
// Gloo paths: no rank's collective fails for its peers' leaving (before the fix, about 1 job in 5
// failed through the ring). New jobs stop starting after 60 s, so the test ends in bounded time.
TEST(Distributed, RanksLeavingRightAfterACollectiveDoNotFailTheOthers) {
  const auto start = std::chrono::steady_clock::now();
  int jobs = 0;
  for (int round = 0; round < 6 && std::chrono::steady_clock::now() - start < std::chrono::seconds(60); ++round) {
    for (const std::string kind : {"ring", "halving_doubling", "options", "broadcast", "all_gather", "barrier"}) {
      const auto ranks = run_ranks(kind == "halving_doubling" && round % 2 ? 4 : 3, {"exit_after", kind},
                                   {kInterp, "KILN_TEST_TIMEOUT_MS=10000"}, /*grace=*/15, /*limit=*/30);
      for (size_t r = 0; r < ranks.size(); ++r)
        EXPECT_TRUE(ranks[r].exited_zero()) << kind << " job " << round << ", rank " << r << ":\n" << ranks[r].output;
      ++jobs;
    }
  }
  EXPECT_GE(jobs, 6);
}

// Without KILN_DISTRIBUTED_DEBUG: every rank's error names the op and both ranks' shapes, and
// the group goes on working.
TEST(Distributed, MismatchedShapesAreAnErrorNamingBoth) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"all_reduce", {"all_reduce(SUM) [2] float32", "all_reduce(SUM) [3] float32"}},
      {"broadcast", {"broadcast from 0 [2, 1] float64", "broadcast from 0 [2, 2] float64"}},
      {"all_gather", {"all_gather [1] float32", "all_gather [2] float32"}},
  };
  for (const auto& [op, shapes] : cases) {
    const auto ranks = run_ranks(2, {"shapes", op}, {kInterp, "KILN_TEST_TIMEOUT_MS=5000"});
    for (size_t r = 0; r < ranks.size(); ++r) {
      EXPECT_TRUE(ranks[r].exited_zero()) << ranks[r].output;
      EXPECT_NE(ranks[r].output.find(shapes[0].substr(0, shapes[0].find(' ')) +
                                     " (gloo) failed: the ranks' calls differ: rank " + std::to_string(r) + " called " +
                                     shapes[r]),
                std::string::npos)
          << ranks[r].output;
      EXPECT_NE(ranks[r].output.find("rank " + std::to_string(1 - r) + " called " + shapes[1 - r]), std::string::npos)
          << ranks[r].output;
    }
  }
}

TEST(Distributed, DdpWithParametersSomeRanksDidNotUseAveragesAsPyTorch) {
  expect_all_pass(run_ranks(2, {"ddp_partly_unused"}, {kInterp}));
}

TEST(Distributed, DdpOfDifferentModelsNamesTheFirstDifference) {
  const auto ranks = run_ranks(2, {"models"}, {kInterp, "KILN_TEST_TIMEOUT_MS=5000"});
  for (const auto& rank : ranks) {
    EXPECT_TRUE(rank.exited_zero()) << rank.output;
    EXPECT_NE(rank.output.find("[4, 16] float32 on rank 0 but [5, 16] float32 on rank 1"), std::string::npos)
        << rank.output;
  }
  const auto bucketed = run_ranks(2, {"models", "buckets"}, {kInterp, "KILN_TEST_TIMEOUT_MS=5000"});
  for (const auto& rank : bucketed) {
    EXPECT_TRUE(rank.exited_zero()) << rank.output;
    EXPECT_NE(rank.output.find("the ranks' gradient buckets differ (1 on rank 0, 2 on rank 1)"), std::string::npos)
        << rank.output;
  }
}

// --- in one process ---

TEST(Distributed, CollectiveBeforeInitNamesTheCall) {
  ASSERT_FALSE(dist::is_initialized());
  EXPECT_THROW_WITH(dist::all_reduce(kiln::ones({2})), "all_reduce: the default process group is not initialized");
  EXPECT_THROW_WITH(dist::broadcast(kiln::ones({2}), 0), "broadcast: the default process group is not initialized");
  EXPECT_THROW_WITH(dist::barrier(), "barrier: the default process group is not initialized");
  EXPECT_THROW_WITH(dist::get_rank(), "get_rank: the default process group is not initialized");
  EXPECT_THROW_WITH(kiln::nn::parallel::DistributedDataParallel(kiln::nn::Linear(2, 2)),
                    "default_process_group: the default process group is not initialized");
}

TEST(Distributed, InitProcessGroupBadArguments) {
  EXPECT_THROW_WITH(dist::init_process_group("smoke", "env://", 1, 0), "unknown backend 'smoke'");
  EXPECT_THROW_WITH(dist::init_process_group("gloo", "carrier-pigeon://x", 1, 0), "unknown init_method");
  EXPECT_THROW_WITH(dist::init_process_group("gloo", "env://", 2, 5), "rank 5 is not in [0, 2)");
  EXPECT_THROW_WITH(dist::init_process_group("gloo", "tcp://127.0.0.1:99999", 1, 0), "is not a TCP port");
  ::unsetenv("MASTER_ADDR");
  EXPECT_THROW_WITH(dist::init_process_group("gloo", "env://", 1, 0), "MASTER_ADDR is not set");
  ::unsetenv("WORLD_SIZE");
  EXPECT_THROW_WITH(dist::init_process_group("gloo"), "WORLD_SIZE is not set");
  EXPECT_FALSE(dist::is_initialized());
}

namespace {

bool have_mpirun() { return std::system("command -v mpirun > /dev/null 2>&1") == 0; }

// Two workers started by mpirun on the mpi backend (Open MPI refuses root without
// --allow-run-as-root): whether both passed, and their output.
std::pair<bool, std::string> mpirun_workers(const std::string& args, int timeout_ms = 20000) {
  // Under AddressSanitizer (scripts/sanitize.sh), without leak detection in these ranks: Open MPI
  // leaves allocations at MPI_Finalize in plugins it then unloads, whose frames no suppression can
  // name. The Gloo jobs run the same worker code with it on.
  std::string sanitizer;
  if (const char* asan = std::getenv("ASAN_OPTIONS"))
    sanitizer = "-x ASAN_OPTIONS='" + std::string(asan) + ":detect_leaks=0' ";
  const std::string command =
      "timeout -s KILL 120 mpirun --allow-run-as-root --oversubscribe -np 2 " + sanitizer +
      "-x KILN_TEST_BACKEND=mpi -x KILN_BACKEND=interp -x KILN_NUM_THREADS=1 -x KILN_TEST_TIMEOUT_MS=" +
      std::to_string(timeout_ms) + " " KILN_DISTRIBUTED_WORKER " " + args + " 2>&1";
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;) output.append(chunk, n);
  const int status = ::pclose(pipe);
  return std::make_pair(WIFEXITED(status) && WEXITSTATUS(status) == 0, output);
}

}  // namespace

// A job that mpirun starts, on the mpi backend: the collectives, a mismatched call and DDP, as on
// Gloo.
TEST(Distributed, MpiJobStartedByMpirun) {
  if (!have_mpirun())
    GTEST_SKIP() << "mpirun is not installed (apt-get install openmpi-bin): the mpi backend is not tested here";
  const auto [collectives_ok, collectives] = mpirun_workers("collectives");
  EXPECT_TRUE(collectives_ok) << collectives;
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(collectives.find("rank " + std::to_string(r) + " of 2: collectives ok"), std::string::npos)
        << collectives;
  const auto [shapes_ok, shapes] = mpirun_workers("shapes");
  EXPECT_TRUE(shapes_ok) << shapes;
  EXPECT_NE(shapes.find("all_reduce(SUM) (mpi) failed: the ranks' calls differ: rank 0 called all_reduce(SUM) [2] "
                        "float32, rank 1 called all_reduce(SUM) [3] float32"),
            std::string::npos)
      << shapes;
  const auto [ddp_ok, ddp] = mpirun_workers("ddp 3");
  EXPECT_TRUE(ddp_ok) << ddp;
  EXPECT_NE(ddp.find("ddp relative difference"), std::string::npos) << ddp;
  // A rank that stops: the other's collective fails within the timeout, and mpirun ends the job.
  const auto [stop_ok, stop] = mpirun_workers("stop", 1500);
  EXPECT_NE(stop.find("rank 0: error after"), std::string::npos) << stop;
  EXPECT_NE(stop.find("all_reduce(SUM) (mpi) failed: MPI_Iallgather did not complete within 1500 ms"),
            std::string::npos)
      << stop;
}

// Communication hooks over MPI, which moves float16 and bfloat16 as 16-bit words and reduces them
// with ops of kiln's: every op on both dtypes, and PyTorch's bf16 and fp16 hooks training 10 steps
// (with find_unused_parameters, and no_sync) to parameters identical across ranks and close to
// float32's (tests/distributed/worker.cpp's ddp() gives the tolerances and why).
TEST(Distributed, MpiNarrowDtypesAndCompressHooks) {
  if (!have_mpirun())
    GTEST_SKIP() << "mpirun is not installed (apt-get install openmpi-bin): the mpi backend is not tested here";
  for (const std::string args :
       {"narrow_dtypes", "ddp_hook bf16 10", "ddp_hook bf16 10 unused", "ddp_hook fp16 10 no_sync"}) {
    const auto [ok, output] = mpirun_workers(args);
    EXPECT_TRUE(ok) << args << ":\n" << output;
    EXPECT_NE(output.find(args == "narrow_dtypes" ? "every dtype ok" : "ddp with hook"), std::string::npos) << output;
  }
}

TEST(Distributed, MpiBadArguments) {
  EXPECT_THROW_WITH(dist::init_process_group("mpi", "env://", 1, 0),
                    "init_process_group: with the mpi backend, rank and world size are MPI's");
}

// NCCL without a GPU: the library loads (where the CUDA toolkit is) and has every entry point
// kiln declares; a group without a device is a clear error. Collectives on a GPU: scripts/gpu-check.sh.
TEST(Distributed, NcclLibraryHasEveryEntryPointKilnUses) {
  if (!dist::nccl::available() && dist::nccl::unavailable_reason().find("could not be opened") != std::string::npos)
    GTEST_SKIP() << dist::nccl::unavailable_reason();
  EXPECT_EQ(dist::nccl::unavailable_reason(), "");
  const auto& names = dist::nccl::symbol_names();
  for (const char* name : {"ncclGetUniqueId", "ncclCommInitRank", "ncclCommAbort", "ncclAllReduce", "ncclBroadcast",
                           "ncclAllGather", "ncclCommGetAsyncError"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  EXPECT_EQ(dist::nccl::version().rfind("2.", 0), 0u) << dist::nccl::version();
}

TEST(Distributed, NcclWithoutADeviceIsAClearError) {
  if (kiln::cuda::is_available()) GTEST_SKIP() << "a CUDA device is here";
  const auto folder = fresh_folder("nccl");
  const std::string expected = dist::nccl::available() ? "ProcessGroupNCCL: no CUDA device here ("
                                                       : "ProcessGroupNCCL: " + dist::nccl::unavailable_reason();
  EXPECT_THROW_WITH(dist::init_process_group("nccl", "file://" + folder.string(), 1, 0), expected);
  EXPECT_FALSE(dist::is_initialized());
  std::filesystem::remove_all(folder);
}

// The checks made before anything reaches NCCL, on the fake CUDA device (no collective runs).
TEST(Distributed, NcclArgumentChecks) {
  if (!dist::nccl::available()) GTEST_SKIP() << dist::nccl::unavailable_reason();
  kiln_test::use_fake_cuda(true);
  const auto folder = fresh_folder("nccl-arguments");
  {
    auto store = std::make_shared<c10d::FileStore>(folder.string(), 1);
    c10d::ProcessGroupNCCL group(store, 0, 1);
    EXPECT_EQ(group.getBackendName(), "nccl");
    const kiln::TensorOptions cuda = kiln::TensorOptions(kiln::kFloat).device(kiln::Device(kiln::kCUDA, 0));
    std::vector<Tensor> cpu{kiln::ones({2})};
    EXPECT_THROW_WITH(
        group.allreduce(cpu),
        "all_reduce(SUM): the nccl backend takes CUDA tensors, got one on cpu (init_process_group(\"gloo\") "
        "for CPU tensors)");
    std::vector<Tensor> shorts{kiln::ones({2}, cuda.dtype(kiln::kShort))};
    EXPECT_THROW_WITH(group.allreduce(shorts), "all_reduce(SUM): dtype int16 is not supported by the nccl backend");
    std::vector<Tensor> ints{kiln::ones({2}, cuda.dtype(kiln::kLong))};
    dist::AllreduceOptions average;
    average.reduceOp = dist::ReduceOp::AVG;
    EXPECT_THROW_WITH(group.allreduce(ints, average),
                      "all_reduce(AVG): AVG needs a floating-point tensor, got [2] int64");
    std::vector<Tensor> one{kiln::ones({2}, cuda)};
    dist::BroadcastOptions from_one;
    from_one.rootRank = 1;
    EXPECT_THROW_WITH(group.broadcast(one, from_one), "broadcast: source rank 1 is not in [0, 1)");
    std::vector<std::vector<Tensor>> outputs{{kiln::zeros({3}, cuda)}};
    EXPECT_THROW_WITH(group.allgather(outputs, one),
                      "all_gather: output [3] float32 does not match the input [2] float32");
  }
  kiln_test::use_fake_cuda(false);
  std::filesystem::remove_all(folder);
}

// A job of one rank: every collective is the identity, DDP changes nothing, and the group can be
// made again after it is destroyed.
TEST(Distributed, OneRankOverAFileStore) {
  const auto folder = fresh_folder("one");
  dist::init_process_group("gloo", "file://" + folder.string(), 1, 0, std::chrono::seconds(10));
  EXPECT_THROW_WITH(dist::init_process_group("gloo", "file://" + folder.string(), 1, 0), "already initialized");
  EXPECT_EQ(dist::get_rank(), 0);
  EXPECT_EQ(dist::get_world_size(), 1);
  EXPECT_EQ(dist::get_backend(), "gloo");
  Tensor t = kiln::arange(4, kiln::TensorOptions(kiln::kFloat));
  dist::all_reduce(t, dist::ReduceOp::AVG);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_THROW_WITH(dist::all_reduce(kiln::ones({2}, kiln::TensorOptions(kiln::kLong)), dist::ReduceOp::AVG),
                    "all_reduce(AVG): AVG needs a floating-point tensor, got [2] int64");
  EXPECT_THROW_WITH(dist::all_reduce(kiln::ones({2}, kiln::TensorOptions(kiln::kShort))),
                    "all_reduce(SUM): dtype int16 is not supported by the gloo backend");
  std::vector<Tensor> too_few;
  EXPECT_THROW_WITH(dist::all_gather(too_few, kiln::ones({2})),
                    "all_gather: the output list has 0 tensors for 1 ranks");
  std::vector<Tensor> wrong{kiln::zeros({3})};
  EXPECT_THROW_WITH(dist::all_gather(wrong, kiln::ones({2})),
                    "all_gather: output [3] float32 does not match the input [2] float32");
  EXPECT_THROW_WITH(dist::broadcast(kiln::ones({2}), 1), "broadcast: source rank 1 is not in [0, 1)");
  kiln::nn::Linear linear(3, 2);
  auto ddp = kiln::nn::parallel::DistributedDataParallel(linear);
  const Tensor before = linear->weight.detach().clone();
  ddp->forward(kiln::ones({4, 3})).sum().backward();
  EXPECT_TRUE(linear->weight.grad().allclose(kiln::ones({4, 3}).sum(0).expand({2, 3})));
  EXPECT_TRUE(linear->weight.equal(before));
  dist::destroy_process_group();
  EXPECT_FALSE(dist::is_initialized());
  std::filesystem::remove_all(folder);
}

TEST(Distributed, TcpStoreSetGetAndErrors) {
  const int port = free_port();
  auto master = std::make_shared<dist::TCPStore>("127.0.0.1", port, true, std::chrono::milliseconds(2000));
  dist::TCPStore client("localhost", port, false, std::chrono::milliseconds(300));
  client.set("key", {1, 2, 3});
  EXPECT_EQ(master->get("key"), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_THROW_WITH(client.get("missing"),
                    "TCPStore: get of key 'missing' at localhost:" + std::to_string(port) + " timed out after 300 ms");
  EXPECT_THROW_WITH(dist::TCPStore("127.0.0.1", port, true), "TCPStore: cannot listen on port " + std::to_string(port));
  master.reset();
  EXPECT_THROW_WITH(dist::TCPStore("127.0.0.1", port, false, std::chrono::milliseconds(200)),
                    "TCPStore: could not reach the master at 127.0.0.1:" + std::to_string(port));
}

// On a GPU (scripts/gpu-check.sh): a job of one rank over NCCL, its collectives on CUDA tensors
// computed lazily, and DDP on CUDA parameters giving the gradients of plain backward. (Two ranks
// need two GPUs: NCCL refuses two ranks on one device.)
TEST(NcclGpu, OneRankCollectivesAndDdp) {
  if (!kiln::cuda::is_available()) GTEST_SKIP() << "no CUDA device: " << kiln::cuda::unavailable_reason();
  if (!dist::nccl::available()) GTEST_SKIP() << dist::nccl::unavailable_reason();
  const auto folder = fresh_folder("nccl-gpu");
  dist::init_process_group("nccl", "file://" + folder.string(), 1, 0, std::chrono::seconds(30));
  EXPECT_EQ(dist::get_backend(), "nccl");
  const kiln::TensorOptions cuda = kiln::TensorOptions(kiln::kFloat).device(kiln::Device(kiln::kCUDA, 0));
  Tensor t = kiln::arange(6, cuda).view({2, 3}) * 2;  // lazy: computed on the device first
  dist::all_reduce(t);
  EXPECT_EQ(t.cpu().to_vector<float>(), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  dist::all_reduce(t, dist::ReduceOp::AVG);
  EXPECT_EQ(t.cpu().to_vector<float>(), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  Tensor transposed = kiln::arange(6, cuda.dtype(kiln::kDouble)).view({2, 3}).t();
  dist::broadcast(transposed, 0);
  EXPECT_TRUE(transposed.cpu().equal(kiln::arange(6, kiln::TensorOptions(kiln::kDouble)).view({2, 3}).t()));
  std::vector<Tensor> gathered{kiln::zeros({3}, cuda)};
  dist::all_gather(gathered, kiln::full({3}, 7.0, cuda));
  EXPECT_EQ(gathered[0].cpu().to_vector<float>(), (std::vector<float>{7, 7, 7}));
  dist::barrier();

  kiln::manual_seed(3);
  kiln::nn::Linear plain(4, 2), wrapped(4, 2);
  plain->to(kiln::Device(kiln::kCUDA, 0));
  wrapped->to(kiln::Device(kiln::kCUDA, 0));
  {
    kiln::autograd::NoGradGuard no_grad;
    wrapped->weight.copy_(plain->weight);
    wrapped->bias.copy_(plain->bias);
  }
  auto ddp = kiln::nn::parallel::DistributedDataParallel(wrapped);
  const Tensor x = kiln::randn({8, 4}).to(kiln::Device(kiln::kCUDA, 0));
  plain->forward(x).pow(2).sum().backward();
  ddp->forward(x).pow(2).sum().backward();
  EXPECT_TRUE(wrapped->weight.grad().cpu().allclose(plain->weight.grad().cpu(), 1e-5, 1e-6));
  EXPECT_TRUE(wrapped->bias.grad().cpu().allclose(plain->bias.grad().cpu(), 1e-5, 1e-6));
  dist::destroy_process_group();
  std::filesystem::remove_all(folder);
}
