// Test helpers for lab and injector tests: scoped labs with unique names and a private state
// directory, TCP round trips and UDP loss counts between lab hosts. Every wait is bounded.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/status.h"
#include "harness/lab/local_lab.h"
#include "injectors/injector.h"
#include "injectors/journal.h"

namespace fl::testing {

// "t<pid%10000><n>": unique across concurrent test processes, <= 10 characters.
std::string UniqueLabName();

// Points FAULTLINE_STATE_DIR at a fresh temporary directory for this process; removes it on
// destruction (journal and lab state of a test never mix with anything else).
class ScopedStateDir {
 public:
  ScopedStateDir();
  ~ScopedStateDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A provisioned lab, torn down on destruction even when the test fails.
class TestLab {
 public:
  // topology_yaml: a topology document; its name is replaced by a unique one.
  static StatusOr<std::unique_ptr<TestLab>> Up(const std::string& topology_yaml);
  ~TestLab();
  lab::LocalLab& lab() { return *lab_; }
  std::string Addr(const std::string& host, const std::string& ifname) const;

 private:
  std::unique_ptr<lab::LocalLab> lab_;
};

inline constexpr const char* kSmallRail =
    "name: x\nhosts: 2\ngpus_per_host: 1\nnics_per_host: 1\nlink: {rate: 1gbit}\n";
inline constexpr const char* kSmallSpine =
    "name: x\nhosts: 2\ngpus_per_host: 1\nnics_per_host: 1\nhosts_per_tor: 1\nspines: 1\n"
    "link: {rate: 1gbit}\n";

// An established TCP connection from a socket in src_netns to a server in dst_netns that
// acknowledges each message. RoundTrip sends `bytes` and waits for the acknowledgement.
class TcpPair {
 public:
  static StatusOr<std::unique_ptr<TcpPair>> Open(const std::string& src_netns,
                                                 const std::string& dst_netns,
                                                 const std::string& dst_addr,
                                                 Nanos timeout = 2 * kNsPerSec);
  ~TcpPair();
  // OK when the message was acknowledged within timeout; DeadlineExceeded on a stall, other
  // codes when the connection failed.
  Status RoundTrip(size_t bytes, Nanos timeout);

 private:
  TcpPair() = default;
  int listen_fd_ = -1, client_fd_ = -1, server_fd_ = -1;
  uint32_t seq_ = 0;
  std::atomic<bool> stop_{false};
  std::thread server_;
};

// What an injector test needs: a private state directory, the built-in injectors, a journal
// and a small lab (h0, h1 and the address of h1.nic0).
struct InjectorEnv {
  ScopedStateDir state;
  injectors::InjectorRegistry registry{"injector"};
  injectors::FaultJournal journal;
  std::unique_ptr<TestLab> lab;
  std::string h0, h1, h1_addr;

  Status Init(const char* topology);
  StatusOr<std::unique_ptr<injectors::Injector>> Make(const std::string& kind) const {
    return registry.Create(kind);
  }
  const injectors::Fabric& fabric() const { return lab->lab().fabric(); }
};

// A fresh connection and one round trip; OK when it completes within timeout.
Status TcpWorks(const std::string& src_netns, const std::string& dst_netns,
                const std::string& dst_addr, Nanos timeout);

// Sends n UDP datagrams from src_netns to dst_addr, paced, and counts how many arrived.
StatusOr<size_t> UdpDelivered(const std::string& src_netns, const std::string& dst_netns,
                              const std::string& dst_addr, size_t n);

// Makes every resolved neighbour entry of netns permanent, so a later test of loss measures
// the fault alone and not how long ARP takes to get through it (a 50% loss on both ARP
// messages left h0 unresolved for 10 s once in CI). The entries go with the namespace.
Status PinNeighbours(const std::string& netns);

}  // namespace fl::testing
