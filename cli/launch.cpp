#include "cli/launch.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include "runtime/error.h"

extern char** environ;

namespace kiln::cli {

namespace {

volatile sig_atomic_t g_stop_signal = 0;  // SIGINT or SIGTERM to the launcher: passed on to the ranks
void on_stop_signal(int signal) { g_stop_signal = signal; }

// One output stream of one rank, printed a line at a time with the rank's prefix.
struct Stream {
  int fd;
  FILE* to;
  std::string prefix, partial;
};

void print_lines(Stream& s, const char* data, size_t n, bool at_end) {
  s.partial.append(data, n);
  size_t start = 0;
  for (size_t newline; (newline = s.partial.find('\n', start)) != std::string::npos; start = newline + 1)
    std::fprintf(s.to, "%s%.*s\n", s.prefix.c_str(), int(newline - start), s.partial.data() + start);
  s.partial.erase(0, start);
  if (at_end && !s.partial.empty()) {
    std::fprintf(s.to, "%s%s\n", s.prefix.c_str(), s.partial.c_str());
    s.partial.clear();
  }
  std::fflush(s.to);
}

// The master's port must be free on the master node: the ranks would fail later, less clearly.
void check_port_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(uint16_t(port));
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  const std::string why = free ? "" : std::strerror(errno);
  ::close(fd);
  KILN_CHECK(free, "launch: --master-port ", port, " cannot be used on this machine: ", why);
}

std::string status_text(int status) {
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) +
           ")";
  return "exit status " + std::to_string(WEXITSTATUS(status));
}

int exit_code(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

}  // namespace

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  KILN_CHECK(fd >= 0, "launch: socket: ", std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  ::close(fd);
  KILN_CHECK(ok, "launch: no free TCP port: ", std::strerror(errno));
  return ntohs(address.sin_port);
}

int launch(const LaunchOptions& o) {
  KILN_CHECK(!o.command.empty(), "launch: no program to run (kiln launch --nproc-per-node N -- PROGRAM ARGS)");
  KILN_CHECK(o.nproc_per_node >= 1 && o.nnodes >= 1, "launch: --nproc-per-node and --nnodes must be at least 1");
  KILN_CHECK(o.node_rank >= 0 && o.node_rank < o.nnodes, "launch: --node-rank ", o.node_rank, " is not in [0, ",
             o.nnodes, ")");
  KILN_CHECK(o.master_port > 0 && o.master_port < 65536, "launch: --master-port ", o.master_port, " is not a TCP port");
  if (o.node_rank == 0) check_port_free(o.master_port);

  const int world_size = o.nnodes * o.nproc_per_node;
  const int threads = std::max(1, int(std::thread::hardware_concurrency()) / o.nproc_per_node);
  struct sigaction stop {};
  stop.sa_handler = on_stop_signal;
  sigemptyset(&stop.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &stop, &old_int);
  sigaction(SIGTERM, &stop, &old_term);

  std::map<pid_t, int> rank_of;  // running ranks
  std::vector<Stream> streams;
  for (int local = 0; local < o.nproc_per_node; ++local) {
    const int rank = o.node_rank * o.nproc_per_node + local;
    std::vector<std::string> env;
    const std::map<std::string, std::string> set = {{"RANK", std::to_string(rank)},
                                                    {"LOCAL_RANK", std::to_string(local)},
                                                    {"WORLD_SIZE", std::to_string(world_size)},
                                                    {"LOCAL_WORLD_SIZE", std::to_string(o.nproc_per_node)},
                                                    {"GROUP_RANK", std::to_string(o.node_rank)},
                                                    {"MASTER_ADDR", o.master_addr},
                                                    {"MASTER_PORT", std::to_string(o.master_port)}};
    for (char** e = environ; *e; ++e) {
      const std::string entry = *e;
      if (!set.count(entry.substr(0, entry.find('=')))) env.push_back(entry);
    }
    for (const auto& [name, value] : set) env.push_back(name + "=" + value);
    if (!std::getenv("KILN_NUM_THREADS")) env.push_back("KILN_NUM_THREADS=" + std::to_string(threads));
    std::vector<char*> envp, argv;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = o.command;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    int out[2], err[2];
    KILN_CHECK(::pipe2(out, O_CLOEXEC) == 0 && ::pipe2(err, O_CLOEXEC) == 0, "launch: pipe: ", std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    pid_t pid = 0;
    const int failed = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    ::close(err[1]);
    if (failed != 0) {
      ::close(out[0]);
      ::close(err[0]);
      for (const auto& [running, r] : rank_of) ::kill(running, SIGKILL);
      for (const auto& [running, r] : rank_of) ::waitpid(running, nullptr, 0);
      throw Error("launch: cannot start " + o.command[0] + ": " + std::strerror(failed));
    }
    rank_of[pid] = rank;
    const std::string prefix = "[rank " + std::to_string(rank) + "] ";
    streams.push_back({out[0], stdout, prefix, ""});
    streams.push_back({err[0], stderr, prefix, ""});
  }

  using Clock = std::chrono::steady_clock;
  int job_status = 0;
  bool stopping = false;
  Clock::time_point kill_at = Clock::time_point::max();
  auto stop_all = [&](int signal) {
    for (const auto& [pid, rank] : rank_of) ::kill(pid, signal);
    if (!stopping) kill_at = Clock::now() + std::chrono::seconds(5);  // then SIGKILL
    stopping = true;
  };
  while (!rank_of.empty() || !streams.empty()) {
    std::vector<pollfd> fds;
    for (const auto& s : streams) fds.push_back({s.fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 50);
    for (size_t i = fds.size(); i-- > 0;) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[65536];
      const ssize_t n = ::read(streams[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        print_lines(streams[i], buffer, size_t(n), false);
      } else if (n == 0 || errno != EINTR) {
        print_lines(streams[i], buffer, 0, true);
        ::close(streams[i].fd);
        streams.erase(streams.begin() + long(i));
      }
    }
    int status = 0;
    for (pid_t pid; !rank_of.empty() && (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
      auto it = rank_of.find(pid);
      if (it == rank_of.end()) continue;
      const int rank = it->second;
      rank_of.erase(it);
      if (exit_code(status) != 0 && job_status == 0 && !stopping) {
        job_status = exit_code(status);
        std::fprintf(stderr, "kiln launch: rank %d failed (%s); stopping the other ranks\n", rank,
                     status_text(status).c_str());
        stop_all(SIGTERM);
      }
    }
    if (g_stop_signal && !stopping) {
      job_status = 128 + g_stop_signal;
      stop_all(g_stop_signal);
    }
    if (stopping && Clock::now() >= kill_at) {
      stop_all(SIGKILL);
      kill_at = Clock::time_point::max();
    }
    // Ranks gone but a stream held open (a process the rank started): stop waiting for it.
    if (rank_of.empty() && !streams.empty() && stopping) {
      for (auto& s : streams) {
        print_lines(s, "", 0, true);
        ::close(s.fd);
      }
      streams.clear();
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return job_status;
}

}  // namespace kiln::cli
