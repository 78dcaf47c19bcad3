// Local NIC link state from rtnetlink (RTMGRP_LINK): the fastest fault signal ftccl has, as a
// link-down is reported within milliseconds while timeouts take hundreds of them.
//
// The one place ftccl talks rtnetlink. Thread-safety: none; used by the engine thread only.
// Blocking: never; fd() is polled by the caller and Read() drains what is there.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace fl::ccl::ftccl {

struct LinkChange {
  int ifindex = 0;
  bool up = false;  // administratively up and carrier (IFF_UP && IFF_RUNNING)
};

class LinkMonitor {
 public:
  LinkMonitor() = default;
  ~LinkMonitor();
  LinkMonitor(const LinkMonitor&) = delete;
  LinkMonitor& operator=(const LinkMonitor&) = delete;

  Status Open();
  int fd() const { return fd_; }
  // Link changes received since the last call.
  std::vector<LinkChange> Read();

 private:
  int fd_ = -1;
};

// The interface index that holds IPv4 address ip in this network namespace, or NotFound.
StatusOr<int> IfIndexOfAddress(const std::string& ip);
// Whether ifindex is up with carrier now.
bool LinkIsUp(int ifindex);

}  // namespace fl::ccl::ftccl
