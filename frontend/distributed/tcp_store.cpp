// TCPStore: a small key-value server on the master rank and a client on every rank. Requests are
// [command u8][key length u32][key][value length u32][value]; SET is answered with an empty
// value, GET with the value once some rank has set the key (the server's thread for that client
// waits for it, the client bounds the wait with its timeout).
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "frontend/distributed/store.h"
#include "runtime/error.h"

namespace kiln::distributed {
namespace {

enum Command : uint8_t { kSet = 1, kGet = 2 };
using Clock = std::chrono::steady_clock;

enum class Transfer { kDone, kClosed, kTimedOut };

// Sends or receives all `n` bytes by `deadline`.
Transfer transfer(int fd, void* data, size_t n, bool sending, Clock::time_point deadline) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Transfer::kTimedOut;
    pollfd pfd{fd, short(sending ? POLLOUT : POLLIN), 0};
    const int ready = ::poll(&pfd, 1, int(std::min<int64_t>(left, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return Transfer::kTimedOut;
    if (ready < 0) return Transfer::kClosed;
    const ssize_t done = sending ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (done < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (done <= 0) return Transfer::kClosed;
    p += done;
    n -= size_t(done);
  }
  return Transfer::kDone;
}

constexpr auto kForever = Clock::time_point::max();

Transfer send_bytes(int fd, const std::string& s, Clock::time_point deadline) {
  uint32_t n = uint32_t(s.size());
  const Transfer size = transfer(fd, &n, 4, true, deadline);
  return size != Transfer::kDone ? size : transfer(fd, const_cast<char*>(s.data()), n, true, deadline);
}
Transfer recv_bytes(int fd, std::string& s, Clock::time_point deadline) {
  uint32_t n = 0;
  const Transfer size = transfer(fd, &n, 4, false, deadline);
  if (size != Transfer::kDone) return size;
  s.resize(n);
  return transfer(fd, s.data(), n, false, deadline);
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

struct TCPStore::Server {
  int listener = -1;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::string> values;
  std::vector<int> clients;
  std::vector<std::thread> threads;
  std::thread acceptor;

  explicit Server(int requested_port) {
    listener = ::socket(AF_INET6, SOCK_STREAM, 0);  // dual stack: IPv4 clients too
    KILN_CHECK(listener >= 0, "TCPStore: cannot make a socket: ", errno_text());
    const int one = 1, zero = 0;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(uint16_t(requested_port));
    if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener, 128) != 0) {
      const std::string why = errno_text();
      ::close(listener);
      throw Error("TCPStore: cannot listen on port " + std::to_string(requested_port) + " (MASTER_PORT): " + why);
    }
    socklen_t length = sizeof address;
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
    port = ntohs(address.sin6_port);
    acceptor = std::thread([this] { accept_clients(); });
  }

  ~Server() {
    stopping = true;
    acceptor.join();
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (int fd : clients) ::shutdown(fd, SHUT_RDWR);  // wakes the threads waiting in recv
    }
    changed.notify_all();
    for (auto& t : threads) t.join();
    for (int fd : clients) ::close(fd);
    ::close(listener);
  }

  void accept_clients() {
    while (!stopping) {
      pollfd pfd{listener, POLLIN, 0};
      if (::poll(&pfd, 1, 50) <= 0) continue;
      const int fd = ::accept(listener, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mutex);
      clients.push_back(fd);
      threads.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    while (!stopping) {
      uint8_t command = 0;
      std::string key, value;
      if (transfer(fd, &command, 1, false, kForever) != Transfer::kDone ||
          recv_bytes(fd, key, kForever) != Transfer::kDone || recv_bytes(fd, value, kForever) != Transfer::kDone)
        return;
      std::string reply;
      if (command == kSet) {
        std::lock_guard<std::mutex> lock(mutex);
        values[key] = std::move(value);
        changed.notify_all();
      } else {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return stopping || values.count(key); });
        if (stopping) return;
        reply = values[key];
      }
      if (send_bytes(fd, reply, kForever) != Transfer::kDone) return;
    }
  }
};

TCPStore::TCPStore(const std::string& host, int port, bool is_master, std::chrono::milliseconds timeout)
    : Store(timeout), host_(host), port_(port) {
  KILN_CHECK(port >= 0 && port < 65536, "TCPStore: port ", port, " is not a TCP port (MASTER_PORT)");
  if (is_master) {
    server_ = std::make_unique<Server>(port);
    port_ = server_->port;
  }
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const std::string where = host + ":" + std::to_string(port_);
  if (const int e = ::getaddrinfo(host.c_str(), std::to_string(port_).c_str(), &hints, &found); e != 0)
    throw Error("TCPStore: cannot resolve the master address " + host + " (MASTER_ADDR): " + ::gai_strerror(e));
  // The master may not listen yet: connect again until the timeout.
  const auto deadline = Clock::now() + timeout;
  std::string last_error;
  while (socket_ < 0 && Clock::now() < deadline) {
    for (addrinfo* a = found; a && socket_ < 0; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        socket_ = fd;
      } else {
        last_error = errno_text();
        ::close(fd);
      }
    }
    if (socket_ < 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::freeaddrinfo(found);
  KILN_CHECK(socket_ >= 0, "TCPStore: could not reach the master at ", where, " within ", timeout.count() / 1000.0,
             " s (MASTER_ADDR, MASTER_PORT): ", last_error);
  const int one = 1;
  ::setsockopt(socket_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

TCPStore::~TCPStore() {
  if (socket_ >= 0) ::close(socket_);
  server_.reset();
}

int TCPStore::port() const { return port_; }

std::vector<uint8_t> TCPStore::request(uint8_t command, const std::string& key, const std::vector<uint8_t>& value,
                                       std::chrono::milliseconds timeout) {
  KILN_CHECK(socket_ >= 0, "TCPStore: the connection to ", host_, ":", port_, " was lost by an earlier request");
  const auto deadline = Clock::now() + timeout;
  std::string reply;
  Transfer result = transfer(socket_, &command, 1, true, deadline);
  if (result == Transfer::kDone) result = send_bytes(socket_, key, deadline);
  if (result == Transfer::kDone) result = send_bytes(socket_, std::string(value.begin(), value.end()), deadline);
  if (result == Transfer::kDone) result = recv_bytes(socket_, reply, deadline);
  if (result != Transfer::kDone) {
    const bool timed_out = result == Transfer::kTimedOut;
    ::close(socket_);  // a late answer would be read as the next request's
    socket_ = -1;
    throw Error("TCPStore: " + std::string(command == kSet ? "set" : "get") + " of key '" + key + "' at " + host_ +
                ":" + std::to_string(port_) +
                (timed_out ? " timed out after " + std::to_string(timeout.count()) + " ms"
                           : " failed: the master closed the connection"));
  }
  return std::vector<uint8_t>(reply.begin(), reply.end());
}

void TCPStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  request(kSet, key, value, getTimeout());
}

std::vector<uint8_t> TCPStore::get(const std::string& key) { return request(kGet, key, {}, getTimeout()); }

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (const auto& key : keys)
    request(kGet, key, {},
            std::max(std::chrono::milliseconds(1),
                     std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())));
}

}  // namespace kiln::distributed
