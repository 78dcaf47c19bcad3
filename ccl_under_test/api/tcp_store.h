// A rendezvous store over TCP, for ranks that share no filesystem (inventory and Slurm labs):
// TcpStoreServer holds the keys in memory (the coordinator hosts one per run), TcpStore is the
// Store the ranks use. Wire format and authentication: tcp_store_protocol.h (both ends prove
// they hold the shared token with HMAC-SHA256 over fresh nonces; the token never travels).
//
// The server is one thread polling its sockets (plain POSIX sockets + poll). Nothing a peer
// sends can crash it or grow it without bound: frames, keys, values, the number of keys, of
// stored bytes and of connections are capped (Options); a malformed frame, a failed
// authentication or a connection that does not authenticate in time is counted (Stats) and
// the connection dropped. Keys live as long as the server: a restarted server is empty.
//
// The client opens connections lazily and keeps idle ones for reuse (one per concurrent
// caller, so threads sharing a TcpStore never wait on each other). A connection that breaks
// (server restarted, idle connection closed) is redialled until the operation's deadline:
// Get's own, Set's Options::set_timeout. A wrong token fails at once (FailedPrecondition).
//
// Thread-safety: both classes may be used from several threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ccl_under_test/api/rendezvous.h"
#include "ccl_under_test/api/tcp_store_protocol.h"
#include "common/unique_fd.h"

namespace fl::ccl {

class TcpStoreServer {
 public:
  struct Options {
    kv::Limits limits;  // key and value sizes
    size_t max_keys = 1 << 20;
    uint64_t max_bytes = 256ull << 20;     // keys + values stored
    size_t max_connections = 4096;         // beyond: accepted and closed at once (counted)
    Nanos auth_timeout = 5 * kNsPerSec;    // to send a valid kAuth after the hello
    Nanos idle_timeout = 300 * kNsPerSec;  // authenticated, no request in flight
    uint32_t max_wait_ms = 10000;          // a kGet's wait is clamped to this
  };
  struct Stats {
    uint64_t accepted = 0;
    uint64_t refused = 0;  // over max_connections
    uint64_t auth_failures = 0;
    uint64_t auth_timeouts = 0;
    uint64_t malformed = 0;  // frames that did not parse, or out of turn
    uint64_t rejected = 0;   // well-formed requests refused (store full)
    uint64_t sets = 0;
    uint64_t gets = 0;
    size_t connections = 0;
    size_t keys = 0;
    uint64_t bytes = 0;
  };

  // listen: "IP:PORT" (IPv4; port 0 = chosen by the kernel; 0.0.0.0 = every address).
  // token: the shared secret (ReadStoreToken). The server thread runs until Stop.
  static StatusOr<std::unique_ptr<TcpStoreServer>> Start(const std::string& listen,
                                                         std::string token);
  static StatusOr<std::unique_ptr<TcpStoreServer>> Start(const std::string& listen,
                                                         std::string token, Options options);
  ~TcpStoreServer();  // Stop()
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  // "IP:PORT" actually bound (the kernel's port when 0 was asked for; 0.0.0.0 stays as is:
  // give clients an address of this host).
  const std::string& address() const { return address_; }
  // Closes every connection and joins the thread. Idempotent.
  void Stop();
  Stats stats() const;

 private:
  struct Impl;
  TcpStoreServer() = default;
  void Loop();
  std::unique_ptr<Impl> impl_;
  std::string address_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
};

class TcpStore : public Store {
 public:
  struct Options {
    kv::Limits limits;
    // How long Set keeps redialling a server it cannot reach.
    Nanos set_timeout = 30 * kNsPerSec;
    // Longest wait asked of the server per kGet: a server that died without closing the
    // connection is noticed after this (plus a second), then redialled.
    uint32_t get_chunk_ms = 2000;
    // Idle connections kept for reuse.
    size_t max_idle = 4;
  };
  // address: "HOST:PORT" (IPv4 address or a host name resolving to one; a name is resolved
  // with getaddrinfo at each dial, which the resolver bounds, not the deadline); token: the
  // secret.
  TcpStore(std::string address, std::string token);
  TcpStore(std::string address, std::string token, Options options);
  ~TcpStore() override;

  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;
  const std::string& address() const { return address_; }

 private:
  struct Conn;
  StatusOr<std::unique_ptr<Conn>> Dial(Deadline deadline);
  std::unique_ptr<Conn> TakeIdle();
  void GiveBack(std::unique_ptr<Conn> c);
  // Sends one request and reads its reply on a pooled connection, redialling on a broken
  // one until the deadline.
  StatusOr<kv::Message> RoundTrip(const std::string& frame, Deadline deadline, Nanos reply_within);

  std::string address_;
  std::string token_;
  Options options_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Conn>> idle_;
};

// Reads the shared token from a file and trims surrounding whitespace. InvalidArgument for an
// empty file; a file that others may read is accepted with a warning in the log.
StatusOr<std::string> ReadStoreToken(const std::string& path);

// "IP:PORT" or "HOST:PORT" split and checked (port 0..65535). InvalidArgument naming addr.
struct HostPort {
  std::string host;
  uint16_t port = 0;
};
StatusOr<HostPort> ParseHostPort(const std::string& addr);

}  // namespace fl::ccl
