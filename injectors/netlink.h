// rtnetlink through libmnl: link up/down with the kernel's acknowledgement timed, and link
// state read back. The one place that speaks netlink; errors become Status values.
//
// Thread-safety: a RtNetlink is used by one thread at a time. Ownership: owns its socket.
// Blocking: every call waits for the kernel's answer, bounded by a deadline (1 s default).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

struct mnl_socket;

namespace fl::injectors {

struct LinkState {
  bool admin_up = false;  // IFF_UP
  bool carrier = false;   // IFF_LOWER_UP
  int ifindex = 0;
};

// When a request was sent and when the kernel acknowledged it (wall clock, ns).
struct AckTiming {
  Nanos requested_wall_ns = 0;
  Nanos effective_wall_ns = 0;
};

class RtNetlink {
 public:
  // A NETLINK_ROUTE socket bound in netns (empty: the caller's namespace).
  static StatusOr<std::unique_ptr<RtNetlink>> Open(const std::string& netns);
  ~RtNetlink();

  // Sets IFF_UP on or off; timing (optional) gets the request and acknowledgement times.
  Status SetLinkUp(const std::string& ifname, bool up, AckTiming* timing = nullptr);
  StatusOr<LinkState> GetLink(const std::string& ifname);
  // The kernel's RTM_NEWLINK answer for ifname, statistics included, as it came (the agent's
  // NIC counter sampler reads IFLA_STATS64 from it: harness/agent/nic_counters.h).
  StatusOr<std::vector<uint8_t>> GetLinkMessage(const std::string& ifname);

 private:
  explicit RtNetlink(mnl_socket* nl) : nl_(nl) {}
  // Sends a request and waits for its answer: the link's state into reply, its message's bytes
  // into raw (either may be null).
  Status Transact(void* buf, size_t len, LinkState* reply, std::vector<uint8_t>* raw = nullptr);
  mnl_socket* nl_;
  unsigned seq_ = 1;
};

// Sockets per namespace, opened on first use and kept: for injectors that act repeatedly and
// must act fast (a flap's request-to-effective time excludes opening a socket in a namespace).
// Thread-safety: calls are serialised by an internal mutex.
class RtNetlinkPool {
 public:
  Status SetLinkUp(const std::string& netns, const std::string& ifname, bool up,
                   AckTiming* timing = nullptr);
  StatusOr<LinkState> GetLink(const std::string& netns, const std::string& ifname);

 private:
  StatusOr<RtNetlink*> Get(const std::string& netns);
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<RtNetlink>> sockets_;
};

// One-shot helpers that open a socket in netns.
Status SetLinkUp(const std::string& netns, const std::string& ifname, bool up,
                 AckTiming* timing = nullptr);
StatusOr<LinkState> GetLink(const std::string& netns, const std::string& ifname);

}  // namespace fl::injectors
