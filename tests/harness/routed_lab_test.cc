// Root-gated test of the routed lab (routing: bgp, configs/labs/clos4.yaml): FRR's BGP
// sessions come up, ToRs hold ECMP routes over both spines, traffic between pods survives
// tor_uplink_down on one spine uplink (BGP withdraws the routes through it and traffic moves
// to the other spine), the route change is seen on the ToRs, and lab down leaves no zebra,
// bgpd, namespace or file.
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/process.h"
#include "common/units.h"
#include "harness/lab/local_lab.h"
#include "injectors/injection.h"
#include "injectors/injector.h"
#include "injectors/journal.h"
#include "injectors/sys.h"
#include "tests/harness/run_testing.h"
#include "tests/injectors/lab_testing.h"
#include "tests/test_util.h"

namespace fl::lab {
namespace {

using injectors::RunChecked;

// Nexthop devices of the kernel route to prefix in netns ("up0", "up1"); empty when none.
std::vector<std::string> Nexthops(const std::string& netns, const std::string& prefix) {
  auto out = RunChecked({"ip", "-n", netns, "-j", "route", "show", prefix});
  std::vector<std::string> devs;
  if (!out.ok()) return devs;
  nlohmann::json j = nlohmann::json::parse(*out, nullptr, false);
  if (!j.is_array()) return devs;
  for (const auto& r : j) {
    if (r.contains("nexthops"))
      for (const auto& nh : r["nexthops"]) devs.push_back(nh.value("dev", ""));
    else if (r.contains("dev"))
      devs.push_back(r.value("dev", ""));
  }
  std::sort(devs.begin(), devs.end());
  return devs;
}

// Records the kernel's route messages (RTM_NEWROUTE / RTM_DELROUTE, rtnetlink group
// RTMGRP_IPV4_ROUTE) for prefix in netns: a socket opened in the namespace, read by a thread.
class RouteWatch {
 public:
  struct Change {
    Nanos at;
    bool deleted;
  };
  RouteWatch(const std::string& netns, const std::string& prefix) {
    const std::string ip = prefix.substr(0, prefix.find('/'));
    dst_len_ = std::atoi(prefix.c_str() + prefix.find('/') + 1);
    REQUIRE(inet_pton(AF_INET, ip.c_str(), &dst_) == 1);
    Status open = injectors::RunInNetns(netns, [&]() -> Status {
      fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
      if (fd_ < 0) return ErrnoStatus(errno, "netlink socket");
      sockaddr_nl sa{};
      sa.nl_family = AF_NETLINK;
      sa.nl_groups = RTMGRP_IPV4_ROUTE;
      if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
        return ErrnoStatus(errno, "netlink bind");
      return OkStatus();
    });
    REQUIRE(open.ok());
    thread_ = std::thread([this] { Read(); });
  }
  ~RouteWatch() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  std::vector<Change> changes() {
    std::lock_guard<std::mutex> lock(mu_);
    return changes_;
  }

 private:
  void Read() {
    std::vector<char> buf(1 << 16);
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
      if (n <= 0) continue;
      const Nanos at = MonoNowNs();
      int len = static_cast<int>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, len);
           h = NLMSG_NEXT(h, len)) {
        if (h->nlmsg_type != RTM_NEWROUTE && h->nlmsg_type != RTM_DELROUTE) continue;
        auto* rt = static_cast<rtmsg*>(NLMSG_DATA(h));
        if (rt->rtm_family != AF_INET || rt->rtm_dst_len != dst_len_) continue;
        int alen = static_cast<int>(RTM_PAYLOAD(h));
        for (rtattr* a = RTM_RTA(rt); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
          if (a->rta_type != RTA_DST || RTA_PAYLOAD(a) != sizeof(in_addr)) continue;
          if (std::memcmp(RTA_DATA(a), &dst_, sizeof(in_addr)) != 0) continue;
          std::lock_guard<std::mutex> lock(mu_);
          changes_.push_back({at, h->nlmsg_type == RTM_DELROUTE});
        }
      }
    }
  }

  in_addr dst_{};
  int dst_len_ = 0;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Change> changes_;
  std::thread thread_;
};

const std::vector<std::string> kBoth = {"up0", "up1"};

TEST_CASE("routed lab: BGP ECMP over two spines survives tor_uplink_down and leaves nothing",
          "[.root][integration]") {
  testing::ScopedStateDir state;
  auto t = LoadTopology(std::string(FL_SOURCE_DIR) + "/configs/labs/clos4.yaml");
  REQUIRE(t.ok());
  auto l = LocalLab::Create(*t, testing::UniqueLabName());
  REQUIRE(l.ok());
  LocalLab& lab = **l;
  std::vector<pid_t> frr_pids;
  {
    LabGuard guard(&lab);
    Status up = lab.Provision();
    INFO(up.ToString());
    REQUIRE(up.ok());
    // Every session established (Provision waits for that; checked again here).
    for (const auto& n : lab.plan().nodes) {
      if (n.asn == 0) continue;
      auto peers = lab.BgpPeers(n.name);
      REQUIRE(peers.ok());
      CHECK(peers->size() == (n.name.rfind("spine", 0) == 0 ? 4u : 2u));
      for (const auto& [peer, st] : *peers) CHECK(st == "Established");
      for (const char* d : {"zebra", "bgpd"}) {
        auto pid = ReadFile(lab.FrrDir() + "/" + n.name + "/" + d + ".pid");
        REQUIRE(pid.ok());
        frr_pids.push_back(std::atoi(pid->c_str()));
        CHECK(kill(frr_pids.back(), 0) == 0);
      }
    }
    CHECK(frr_pids.size() == 12);
    // ECMP: the remote pod's subnet of rail 0 through both spines, on both pods' ToRs.
    const std::string pod0 = RailSubnet(*t, 0, 0), pod1 = RailSubnet(*t, 0, 1);
    CHECK(Nexthops(lab.NetnsOf("tor0p0"), pod1) == kBoth);
    CHECK(Nexthops(lab.NetnsOf("tor0p1"), pod0) == kBoth);
    // lab status's line per router.
    auto d = lab.Describe();
    REQUIRE(d.ok());
    CHECK(d->routing == "bgp");
    for (const auto& n : d->nodes)
      if (n.name == "spine1")
        CHECK(n.bgp.find("4/4 BGP sessions established") != std::string::npos);

    // Traffic between pods: h0 (pod 0) to h2 (pod 1) on rail 0; several connections, so that
    // the L4 hash puts some on each spine.
    const std::string h0 = lab.NetnsOf("h0"), h2 = lab.NetnsOf("h2");
    const std::string dst = *lab.AddressOf("h2", "nic0");
    std::vector<std::unique_ptr<testing::TcpPair>> flows;
    for (int i = 0; i < 8; ++i) {
      auto f = testing::TcpPair::Open(h0, h2, dst, 5 * kNsPerSec);
      REQUIRE(f.ok());
      REQUIRE((*f)->RoundTrip(64 * 1024, 5 * kNsPerSec).ok());
      flows.push_back(std::move(*f));
    }

    // tor0p0's uplink to spine0 goes down: the remote ToR's route to pod 0 loses spine0.
    RouteWatch watch(lab.NetnsOf("tor0p1"), pod0);
    injectors::InjectorRegistry reg("injector");
    REQUIRE(injectors::RegisterBuiltinInjectors(reg).ok());
    injectors::FaultJournal journal;
    auto inj = reg.Create("tor_uplink_down");
    REQUIRE(inj.ok());
    injectors::FaultSpec spec{"tor_uplink_down", "tor0p0.up0", {}, 0, 1};
    const Nanos t_fault = MonoNowNs();
    auto h = injectors::InjectFault(**inj, spec, lab.fabric(), &journal);
    REQUIRE(h.ok());
    CHECK(WaitUntil(
        [&] { return Nexthops(lab.NetnsOf("tor0p1"), pod0) == std::vector<std::string>{"up1"}; },
        Deadline::After(5 * kNsPerSec), 10 * kNsPerMs));
    CHECK(Nexthops(lab.NetnsOf("tor0p0"), pod1) == std::vector<std::string>{"up1"});
    // Every flow still flows (those that were on spine0 retransmit through spine1), and a
    // new connection works.
    for (auto& f : flows) CHECK(f->RoundTrip(64 * 1024, 10 * kNsPerSec).ok());
    CHECK(testing::TcpWorks(h0, h2, dst, 5 * kNsPerSec).ok());
    // The route change was seen, within a few seconds of the fault.
    auto changes = watch.changes();
    REQUIRE_FALSE(changes.empty());
    const Nanos reconverge = changes.front().at - t_fault;
    INFO("reconvergence " << FormatDuration(reconverge));
    CHECK(reconverge < 3 * kNsPerSec);
    // The lab's own record of it (what a run stores as route_change events).
    bool recorded = false;
    for (const auto& ev : lab.TakeEvents()) {
      CHECK(ev.kind == "route_change");
      auto d = nlohmann::json::parse(ev.detail_json);
      recorded = recorded || (d["switch"] == "tor0p1" && d["prefix"] == pod0);
    }
    CHECK(recorded);

    // Back: the session comes up again and ECMP returns.
    const size_t during = watch.changes().size();
    REQUIRE(injectors::RevertFault(**inj, *h, &journal).ok());
    CHECK(WaitUntil([&] { return Nexthops(lab.NetnsOf("tor0p1"), pod0) == kBoth; },
                    Deadline::After(10 * kNsPerSec), 10 * kNsPerMs));
    CHECK(WaitUntil([&] { return watch.changes().size() > during; }, Deadline::After(kNsPerSec)));
    for (auto& f : flows) CHECK(f->RoundTrip(64 * 1024, 10 * kNsPerSec).ok());
    flows.clear();
  }  // lab down
  // Nothing left: no zebra or bgpd, no namespace, no FRR directory.
  CHECK(WaitUntil(
      [&] {
        for (pid_t p : frr_pids)
          if (ProcessAlive(p)) return false;
        return true;
      },
      Deadline::After(3 * kNsPerSec)));
  for (const auto& ns : injectors::ListNetns()) CHECK(ns.rfind(lab.plan().prefix, 0) != 0);
  CHECK_FALSE(std::filesystem::exists(lab.FrrDir()));
}

TEST_CASE("routed lab: an ftccl run on clos4 survives tor_uplink_down and stores route changes",
          "[.root][integration]") {
  testing::ScopedStateDir state;
  testing::TempDir dir("fl_clos4");
  const std::string db = dir.path() + "/clos4.db";
  testing::Faultline f({"run", "configs/scenarios/clos4_uplink.yaml", "--db", db}, dir.path());
  auto rc = f.Wait(Deadline::After(120 * kNsPerSec));
  INFO(f.err());
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  const reports::RunData data = testing::OnlyRun(db);
  CHECK(data.run.status == reports::RunStatus::kPassed);
  REQUIRE(data.faults.size() == 1);
  REQUIRE(data.faults[0].effective_wall_ns.has_value());
  const Nanos fault_at = *data.faults[0].effective_wall_ns;
  // During the fault a remote ToR's route to pod 0's rail-0 subnet changed (spine0 gone).
  bool changed = false;
  for (const auto& e : data.events) {
    if (e.kind != "route_change" || e.wall_ns < fault_at) continue;
    auto d = nlohmann::json::parse(e.detail_json);
    changed = changed || (d["switch"] == "tor0p1" && d["prefix"] == "198.18.0.0/24");
  }
  CHECK(changed);
  // Nothing of its lab ("fl" + the run id's last 6 characters) is left: no namespace, no FRR
  // directory (Teardown reaped the daemons it started; the lab test above checks their pids).
  const std::string lab = "fl" + data.run.id.substr(data.run.id.size() - 6);
  for (const auto& ns : testing::Netns()) CHECK(ns.rfind("fl-" + lab + "-", 0) != 0);
  CHECK_FALSE(std::filesystem::exists(injectors::StateDir() + "/labs/" + lab + ".frr"));
  CHECK_FALSE(std::filesystem::exists(injectors::StateDir() + "/labs/" + lab + ".json"));
}

}  // namespace
}  // namespace fl::lab
