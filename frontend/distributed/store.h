// Key-value stores the ranks of a job meet at before they connect (rendezvous), as c10d's: each
// rank publishes its address under a key and waits for the others'. FileStore is Gloo's (a folder
// every rank can see: one machine or a shared file system); TCPStore is a server that one rank
// (rank 0, at MASTER_ADDR:MASTER_PORT) runs and every rank connects to, for jobs across machines.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::distributed {

inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::seconds(60);

class Store {
 public:
  explicit Store(std::chrono::milliseconds timeout = kDefaultTimeout) : timeout_(timeout) {}
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  // Waits up to the store's timeout for the key to be set; throws kiln::Error naming it otherwise.
  virtual std::vector<uint8_t> get(const std::string& key) = 0;
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  std::chrono::milliseconds getTimeout() const { return timeout_; }
  void setTimeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

 private:
  std::chrono::milliseconds timeout_;
};

// Gloo's file store over the folder `path` (made if missing). Given `num_workers` (the job's
// process count, as c10d's), a folder an earlier job used works: each job gets a subfolder of its
// own, the processes joining the current one until it has num_workers of them or all its
// processes on this machine have exited (ended or crashed); the earlier one is removed. Without
// it (-1) the folder must be new to the job: keys left by an earlier job would be read as its.
class FileStore : public Store {
 public:
  explicit FileStore(const std::string& path, int num_workers = -1);
  ~FileStore() override;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A store served over TCP. The master (is_master) listens on `port` (an error if it is in use) and
// serves until it is destroyed; every rank, the master too, is a client that connects to
// host:port, retrying until the timeout (an unreachable master is an error naming it).
class TCPStore : public Store {
 public:
  TCPStore(const std::string& host, int port, bool is_master, std::chrono::milliseconds timeout = kDefaultTimeout);
  ~TCPStore() override;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  int port() const;  // the one listened on (the master may be given port 0: any free one)

 private:
  struct Server;
  std::unique_ptr<Server> server_;
  int socket_ = -1;
  std::string host_;
  int port_;
  std::vector<uint8_t> request(uint8_t command, const std::string& key, const std::vector<uint8_t>& value,
                               std::chrono::milliseconds timeout);
};

}  // namespace kiln::distributed
