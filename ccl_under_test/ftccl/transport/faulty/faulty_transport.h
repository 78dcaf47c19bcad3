// FaultyTransport: a Transport decorator (as LevelDB's EnvWrapper) that injects path faults
// into ftccl in-process, for fast deterministic tests of failover logic without namespaces.
//
// Faults are set per local NIC address through a shared FaultControl: every connection whose
// local address is that NIC (outgoing and accepted) obeys the NIC's rule:
//   kFail        send/recv fail with Unavailable and the socket is shut down (the peer sees
//                EOF), new connects fail at once: a NIC or link that is down
//   kBlackhole   bytes written are discarded and bytes arriving are swallowed; the socket
//                stays open: a silent fault with carrier up (only timeouts can find it)
//   kDropOutgoing  like kBlackhole in the sending direction only (the peer's data arrives, our
//                acks and pings vanish): lost acks, which make the peer resend (duplicates)
// A rule can also arm a byte budget: the NIC works until that many bytes were sent, then
// switches to kFail (a path that dies in the middle of a chunk), and a per-call send cap that
// makes the NIC slow (so the other paths carry more).
//
// Thread-safety: FaultControl may be changed from any thread while connections are in use;
// changes apply to the next send/recv.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ccl_under_test/ftccl/transport/transport.h"

namespace fl::ccl::ftccl::transport::faulty {

enum class FaultMode { kPass, kFail, kBlackhole, kDropOutgoing };

struct FaultRule {
  FaultMode mode = FaultMode::kPass;
  // > 0: bytes the NIC may still send before it turns into kFail.
  int64_t fail_after_bytes = 0;
  // > 0: at most this many bytes per send call (a slow path).
  size_t max_send_per_call = 0;
};

class FaultControl {
 public:
  void Set(const std::string& local_ip, FaultRule rule);
  void Clear(const std::string& local_ip) { Set(local_ip, FaultRule{}); }
  // The rule for local_ip after accounting `sent` more bytes (turns budgets into kFail).
  FaultRule Account(const std::string& local_ip, size_t sent);
  // Bytes sent through local_ip so far (all connections), for load-balancing assertions.
  uint64_t BytesSent(const std::string& local_ip) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, FaultRule> rules_;
  std::map<std::string, uint64_t> sent_;
};

std::shared_ptr<Transport> CreateFaultyTransport(std::shared_ptr<Transport> inner,
                                                 std::shared_ptr<FaultControl> control);

}  // namespace fl::ccl::ftccl::transport::faulty
