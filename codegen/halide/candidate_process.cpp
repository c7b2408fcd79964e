// A tuning candidate built in a child process, with hard time limits (kernel_cache.h,
// build_candidate): the child (tools/compile_candidate.cpp) rebuilds the kernel from its text
// (kernel_text.h), compiles and links it into the file the parent names, says "compiled", runs
// it once on random inputs of the kernel's sizes, says "ran", and exits; the parent then loads the
// file. A child past either limit is killed: nothing of it runs on.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/halide/kernel_cache.h"
#include "codegen/halide/kernel_text.h"
#include "runtime/config.h"
#include "runtime/error.h"

extern char** environ;

namespace kiln::codegen::halide {
namespace {

using Clock = std::chrono::steady_clock;

// The child's output so far, and what it said.
struct ChildOutput {
  std::string text, pending;
  bool compiled = false, ran = false;
  double compile_s = 0, run_us = 0;

  void add(const char* data, size_t n) {
    pending.append(data, n);
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos; pending.erase(0, eol + 1)) {
      const std::string line = pending.substr(0, eol);
      std::istringstream is(line);
      std::string word;
      is >> word;
      if (word == "compiled" && (is >> compile_s))
        compiled = true;
      else if (word == "ran" && (is >> run_us))
        ran = true;
      else
        text += line + "\n";
    }
  }
};

// Waits for `pid` to end, killing it first when `kill_it`; returns its exit status (-1: a signal).
int reap(pid_t pid, bool kill_it) {
  if (kill_it) ::kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::string KernelCache::candidate_helper() {
  struct stat st;
  for (const char* p : {KILN_COMPILE_CANDIDATE_BUILD_PATH, KILN_COMPILE_CANDIDATE_INSTALL_PATH})
    if (stat(p, &st) == 0) return p;
  return "";
}

KernelCache::Candidate KernelCache::build_candidate_in_child(const std::string& helper, const fusion::Kernel& k,
                                                             const std::string& key, const std::string& schedule,
                                                             double compile_limit_s, double run_limit_s) {
  Candidate c;
  c.path = cache().temp_path(".so");
  const std::string job = cache().temp_path(".kernel");
  std::ofstream(job, std::ios::binary) << kernel_text(k) << "end\n" << key;
  int fds[2];
  KILN_CHECK(pipe2(fds, O_CLOEXEC) == 0, "tune: pipe failed: ", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  // The child's kernel cache is this process's (a test or `kiln tune` may have set it in code).
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "KILN_CACHE_DIR=", 15) != 0) env.emplace_back(*e);
  env.push_back("KILN_CACHE_DIR=" + config().cache_dir);
  std::vector<char*> envp, argv;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string args[] = {helper, job, schedule, c.path};
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, helper.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    std::filesystem::remove(job);
    throw Error(detail::concat("tune: could not start ", helper, ": ", std::strerror(spawned)));
  }
  ChildOutput out;
  auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(compile_limit_s));
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, int(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // the child is done
    const bool was_compiled = out.compiled;
    out.add(buf, size_t(n));
    if (!was_compiled && out.compiled)  // the run's own limit from now on
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(run_limit_s));
  }
  close(fds[0]);
  const int status = reap(pid, timed_out);
  std::filesystem::remove(job);
  c.compile_s = out.compile_s;
  c.first_run_us = out.run_us;
  if (timed_out || status != 0 || !out.ran) {
    std::filesystem::remove(c.path);
    if (timed_out && !out.compiled)
      throw Error(detail::concat("compiling took over the limit of ", compile_limit_s, " s: abandoned"));
    if (timed_out) throw Error(detail::concat("its first run took over the limit of ", run_limit_s, " s: abandoned"));
    throw Error(detail::concat("the compiling process failed (status ", status, "): ", out.text + out.pending));
  }
  ensure_runtime();
  c.fn = open(c.path, symbol_name(key));
  KILN_CHECK(c.fn, "halide: could not load the candidate kernel built at ", c.path, ": ", dlerror());
  return c;
}

}  // namespace kiln::codegen::halide
