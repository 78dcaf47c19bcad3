#include "ccl_under_test/ftccl/link_monitor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace fl::ccl::ftccl {

LinkMonitor::~LinkMonitor() {
  if (fd_ >= 0) close(fd_);
}

Status LinkMonitor::Open() {
  fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd_ < 0) return ErrnoStatus(errno, "netlink socket");
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  sa.nl_groups = RTMGRP_LINK;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    Status s = ErrnoStatus(errno, "netlink bind");
    close(fd_);
    fd_ = -1;
    return s;
  }
  return OkStatus();
}

std::vector<LinkChange> LinkMonitor::Read() {
  std::vector<LinkChange> out;
  if (fd_ < 0) return out;
  alignas(nlmsghdr) char buf[16384];
  while (true) {
    ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, static_cast<unsigned>(n));
         h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK) continue;
      auto* ifi = static_cast<ifinfomsg*>(NLMSG_DATA(h));
      bool up = h->nlmsg_type == RTM_NEWLINK && (ifi->ifi_flags & IFF_UP) &&
                (ifi->ifi_flags & IFF_RUNNING);
      out.push_back({ifi->ifi_index, up});
    }
  }
  return out;
}

StatusOr<int> IfIndexOfAddress(const std::string& ip) {
  in_addr want{};
  if (inet_pton(AF_INET, ip.c_str(), &want) != 1) return InvalidArgumentError("bad IPv4 " + ip);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return ErrnoStatus(errno, "getifaddrs");
  int idx = -1;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    auto* sin = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if (sin->sin_addr.s_addr == want.s_addr) {
      idx = static_cast<int>(if_nametoindex(a->ifa_name));
      break;
    }
  }
  freeifaddrs(list);
  if (idx <= 0) return NotFoundError("no interface holds " + ip);
  return idx;
}

bool LinkIsUp(int ifindex) {
  char name[IF_NAMESIZE] = {};
  if (!if_indextoname(static_cast<unsigned>(ifindex), name)) return false;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;
  ifreq req{};
  std::memcpy(req.ifr_name, name, IF_NAMESIZE);
  bool up = true;
  if (ioctl(fd, SIOCGIFFLAGS, &req) == 0) {
    up = (req.ifr_flags & IFF_UP) && (req.ifr_flags & IFF_RUNNING);
  }
  close(fd);
  return up;
}

}  // namespace fl::ccl::ftccl
