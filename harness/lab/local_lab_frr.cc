// LocalLab's `routing: bgp`: FRR (zebra + bgpd) in every ToR and spine, their peers read back
// with vtysh, and the route changes they make as lab events.
#include "harness/lab/local_lab.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>
#include <utility>

#include "common/file_util.h"
#include "common/json_util.h"
#include "common/log.h"
#include "common/process.h"
#include "common/units.h"
#include "harness/lab/local_lab_internal.h"
#include "injectors/journal.h"
#include "injectors/tc_nft.h"

namespace fl::lab {

using injectors::RunChecked;
using local_internal::kToolTimeout;
using local_internal::LabsDir;
using local_internal::SpawnSwitchDaemon;
using local_internal::Tail;

namespace {

constexpr const char* kZebra = "/usr/lib/frr/zebra";
constexpr const char* kBgpd = "/usr/lib/frr/bgpd";
constexpr const char* kVtysh = "/usr/bin/vtysh";
constexpr Nanos kBgpUpTimeout = 30 * kNsPerSec;

}  // namespace

// Reads RTM_NEWROUTE / RTM_DELROUTE (group RTMGRP_IPV4_ROUTE) from a socket in each switch's
// namespace on a thread of its own and keeps them until TakeEvents.
class LocalLab::RouteMonitor {
 public:
  static StatusOr<std::shared_ptr<RouteMonitor>> Start(
      const std::vector<std::pair<std::string, std::string>>& switches) {
    auto m = std::shared_ptr<RouteMonitor>(new RouteMonitor());
    for (const auto& sw : switches) {
      const std::string& name = sw.first;
      const std::string& netns = sw.second;  // a plain name: lambdas cannot capture bindings
      int fd = -1;
      FL_RETURN_IF_ERROR(injectors::RunInNetns(netns, [&]() -> Status {
        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
        if (fd < 0) return ErrnoStatus(errno, "netlink socket");
        sockaddr_nl sa{};
        sa.nl_family = AF_NETLINK;
        sa.nl_groups = RTMGRP_IPV4_ROUTE;
        if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
          const int e = errno;
          close(fd);
          return ErrnoStatus(e, "netlink bind in " + netns);
        }
        return OkStatus();
      }));
      m->fds_.push_back({fd, name});
    }
    m->thread_ = std::thread([raw = m.get()] { raw->Run(); });
    return m;
  }
  ~RouteMonitor() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (const auto& [fd, name] : fds_) close(fd);
  }
  std::vector<Lab::LabEvent> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(events_, {});
  }

 private:
  RouteMonitor() = default;
  void Run() {
    std::vector<pollfd> pfds;
    for (const auto& [fd, name] : fds_) pfds.push_back({fd, POLLIN, 0});
    std::vector<char> buf(1 << 16);
    while (!stop_) {
      if (poll(pfds.data(), pfds.size(), 50) <= 0) continue;
      for (size_t i = 0; i < pfds.size(); ++i) {
        if (!(pfds[i].revents & POLLIN)) continue;
        ssize_t n;
        while ((n = recv(pfds[i].fd, buf.data(), buf.size(), 0)) > 0)
          Parse(fds_[i].second, buf.data(), n);
      }
    }
  }
  void Parse(const std::string& sw, char* data, ssize_t n) {
    const Nanos now = WallNowNs();
    int len = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(data); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type != RTM_NEWROUTE && h->nlmsg_type != RTM_DELROUTE) continue;
      auto* rt = static_cast<rtmsg*>(NLMSG_DATA(h));
      if (rt->rtm_family != AF_INET || rt->rtm_table != RT_TABLE_MAIN) continue;
      nlohmann::json d = {{"switch", sw},
                          {"action", h->nlmsg_type == RTM_NEWROUTE ? "add" : "delete"},
                          {"protocol", rt->rtm_protocol == RTPROT_KERNEL ? "kernel" : "bgp"}};
      std::string dst = "0.0.0.0";
      int alen = static_cast<int>(RTM_PAYLOAD(h));
      int nexthops = 0;
      for (rtattr* a = RTM_RTA(rt); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
        char ip[INET_ADDRSTRLEN] = "";
        if ((a->rta_type == RTA_DST || a->rta_type == RTA_GATEWAY) &&
            RTA_PAYLOAD(a) == sizeof(in_addr))
          inet_ntop(AF_INET, RTA_DATA(a), ip, sizeof ip);
        if (a->rta_type == RTA_DST) dst = ip;
        if (a->rta_type == RTA_GATEWAY) d["gateway"] = ip;
        if (a->rta_type == RTA_NH_ID && RTA_PAYLOAD(a) == sizeof(uint32_t))
          d["nh_id"] = *static_cast<uint32_t*>(RTA_DATA(a));
        if (a->rta_type == RTA_MULTIPATH) {
          int mlen = static_cast<int>(RTA_PAYLOAD(a));
          for (auto* nh = static_cast<rtnexthop*>(RTA_DATA(a)); RTNH_OK(nh, mlen);
               mlen -= NLMSG_ALIGN(nh->rtnh_len), nh = RTNH_NEXT(nh))
            ++nexthops;
        }
        if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) == sizeof(uint32_t))
          nexthops = std::max(nexthops, 1);
      }
      d["prefix"] = dst + "/" + std::to_string(rt->rtm_dst_len);
      if (nexthops > 0) d["nexthops"] = nexthops;
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back({now, "route_change", d.dump()});
    }
  }

  std::vector<std::pair<int, std::string>> fds_;  // socket, switch
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<Lab::LabEvent> events_;
};

std::vector<Lab::LabEvent> LocalLab::TakeEvents() {
  return routes_ ? routes_->Take() : std::vector<LabEvent>{};
}

std::string LocalLab::FrrDir() const { return LabsDir() + "/" + plan_.lab + ".frr"; }

StatusOr<std::string> LocalLab::Vtysh(const std::string& node, const std::string& command) const {
  const NodeObj* n = FindNode(node);
  if (!n || n->asn == 0) return NotFoundError("lab " + plan_.lab + " has no router '" + node + "'");
  injectors::CommandOptions o;
  o.timeout = kToolTimeout;
  return RunChecked({"ip", "netns", "exec", n->netns, kVtysh, "--vty_socket", FrrDir() + "/" + node,
                     "-c", command},
                    o);
}

StatusOr<std::vector<std::pair<std::string, std::string>>> LocalLab::BgpPeers(
    const std::string& node) const {
  FL_ASSIGN_OR_RETURN(std::string out, Vtysh(node, "show bgp summary json"));
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded()) return InternalError("vtysh on " + node + ": not JSON: " + out);
  std::vector<std::pair<std::string, std::string>> peers;
  if (j.contains("ipv4Unicast") && j["ipv4Unicast"].contains("peers"))
    for (const auto& [addr, p] : j["ipv4Unicast"]["peers"].items())
      peers.push_back({p.value("desc", p.value("hostname", addr)), p.value("state", "?")});
  return peers;
}

Status LocalLab::ProvisionFrr() {
  if (access(kZebra, X_OK) != 0 || access(kBgpd, X_OK) != 0 || access(kVtysh, X_OK) != 0)
    return FailedPreconditionError(
        "routing: bgp needs Debian's frr (zebra, bgpd, vtysh): apt-get install frr "
        "(scripts/setup.sh installs it)");
  const std::string dir = FrrDir();
  FL_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  // Both daemons in the lab's cgroup (Teardown's cgroup.kill ends them with the containers;
  // without a cgroup the namespace sweep still does).
  std::string cgroup = CgroupDir() + "/frr";
  if (Status cg = MakeDirs(cgroup); !cg.ok()) {
    FL_LOG(kWarn, "lab") << "lab " << plan_.lab << ": FRR outside a cgroup: " << cg.ToString();
    cgroup.clear();
  }
  std::vector<const NodeObj*> routers;
  for (const auto& n : plan_.nodes)
    if (n.asn != 0) routers.push_back(&n);
  injectors::CommandOptions o;
  o.timeout = kToolTimeout;
  for (const NodeObj* n : routers) {
    // Forwarding, and ECMP hashed on L4 ports so that flows spread over the spines.
    FL_RETURN_IF_ERROR(RunChecked({"ip", "netns", "exec", n->netns, "sysctl", "-q", "-w",
                                   "net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1"},
                                  o)
                           .status());
    const std::string sw = dir + "/" + n->name;
    FL_RETURN_IF_ERROR(MakeDirs(sw, 0700));
    const std::string conf = sw + "/frr.conf";
    FL_RETURN_IF_ERROR(WriteFileAtomic(conf, FrrConfig(plan_, n->name)));
    for (const char* daemon : {kZebra, kBgpd}) {
      const std::string d = std::filesystem::path(daemon).filename();
      // Root in FRR's vty group (its vty sockets need one); every path in the switch's own
      // directory, so that labs and the host's own FRR do not meet.
      FL_ASSIGN_OR_RETURN(const pid_t pid,
                          SpawnSwitchDaemon({daemon, "-u", "root", "-g", "frrvty", "-f", conf, "-i",
                                             sw + "/" + d + ".pid", "-z", sw + "/zserv.api",
                                             "--vty_socket", sw, "-A", "127.0.0.1", "-P", "0",
                                             "--log", "file:" + sw + "/" + d + ".log"},
                                            n->netns, cgroup, sw + "/" + d + ".out"));
      frr_pids_.push_back(pid);
      // bgpd connects to zebra's socket: zebra first.
      if (daemon == kZebra) {
        const std::string zsock = sw + "/zserv.api";
        WaitUntil([&] { return access(zsock.c_str(), F_OK) == 0 || !ProcessAlive(pid); },
                  Deadline::After(5 * kNsPerSec), 5 * kNsPerMs);
        if (!ProcessAlive(pid))
          return UnavailableError("zebra of switch " + n->name +
                                  " exited: " + Tail(sw + "/zebra.out"));
      }
    }
  }
  // Every session established before the lab counts as up.
  Deadline deadline = Deadline::After(kBgpUpTimeout);
  for (const NodeObj* n : routers) {
    std::string last;
    bool up = WaitUntil(
        [&] {
          auto peers = BgpPeers(n->name);
          if (!peers.ok()) {
            last = peers.status().ToString();
            return false;
          }
          last.clear();
          for (const auto& [peer, state] : *peers)
            if (state != "Established") last += (last.empty() ? "" : ", ") + peer + " " + state;
          return !peers->empty() && last.empty();
        },
        deadline, 100 * kNsPerMs);
    if (!up)
      return DeadlineExceededError("BGP of switch " + n->name + " not established after " +
                                   FormatDuration(kBgpUpTimeout) + ": " + last);
  }
  // And every ToR's kernel has a route to each other ToR's subnet through every spine (an
  // established session has not yet exchanged its routes).
  std::string missing;
  bool converged = WaitUntil(
      [&] {
        missing.clear();
        for (const NodeObj* n : routers) {
          if (n->addr.empty()) continue;
          auto out = RunChecked({"ip", "-n", n->netns, "-j", "route", "show", "proto", "bgp"}, o);
          nlohmann::json j = out.ok() ? nlohmann::json::parse(*out, nullptr, false) : nullptr;
          std::map<std::string, size_t> paths;
          if (j.is_array())
            for (const auto& r : j)
              paths[r.value("dst", "")] = r.contains("nexthops") ? r["nexthops"].size() : 1;
          for (const NodeObj* m : routers) {
            if (m == n || m->addr.empty()) continue;
            const std::string ip = m->addr.substr(0, m->addr.find('/'));
            const std::string dst = ip.substr(0, ip.rfind('.')) + ".0/24";
            if (paths[dst] != static_cast<size_t>(topology_.spines))
              missing += (missing.empty() ? "" : ", ") + n->name + " to " + dst;
          }
        }
        return missing.empty();
      },
      deadline, 50 * kNsPerMs);
  if (!converged)
    return DeadlineExceededError("BGP routes not converged after " + FormatDuration(kBgpUpTimeout) +
                                 ": no ECMP route from " + missing);
  // From here on, every route change of a switch is an event (TakeEvents).
  std::vector<std::pair<std::string, std::string>> watched;
  for (const NodeObj* n : routers) watched.push_back({n->name, n->netns});
  FL_ASSIGN_OR_RETURN(routes_, RouteMonitor::Start(watched));
  FL_LOG(kInfo, "lab") << "lab " << plan_.lab << ": FRR up on " << routers.size()
                       << " switches, every BGP session established, ECMP routes in place (" << dir
                       << ")";
  return OkStatus();
}

}  // namespace fl::lab
