// Root-gated: faults on a host's own interface, as on real hosts without switch access. A test
// Fabric whose GrayFaultSide() is kHost resolves "a.nic0" to one end of a veth pair between two
// private namespaces (a: "the host", b: "the switch"); 4 tx queues, so an mq root can be put on
// it like on a real NIC. Each test compares the nft rulesets and qdisc trees of both ends before
// and after: nothing may be left behind.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "injectors/builtin_internal.h"
#include "injectors/container_runtime.h"
#include "injectors/injection.h"
#include "injectors/journal_recovery.h"
#include "injectors/netlink.h"
#include "injectors/pfc.h"
#include "injectors/sys.h"
#include "injectors/tc_nft.h"
#include "tests/injectors/lab_testing.h"

namespace fl::injectors {
namespace {

// A command's options: in netns (empty: this one), with a timeout.
CommandOptions Opts(const std::string& netns, Nanos timeout) {
  CommandOptions o;
  o.netns = netns;
  o.timeout = timeout;
  return o;
}

using testing::TcpPair;
using testing::TcpWorks;
using testing::UdpDelivered;

constexpr const char* kAddrA = "192.168.77.1";
constexpr const char* kAddrB = "192.168.77.2";

// Two namespaces joined by a 4-queue veth pair with static neighbours (so that a one-way fault
// does not also break ARP in the other direction). Removed, with everything in them, on
// destruction.
struct HostPair {
  std::string a, b;
  Status up;
  HostPair() {
    static std::atomic<int> n{0};
    std::string base = "fli" + std::to_string(getpid() % 100000) + "n" + std::to_string(n++);
    a = base + "a";
    b = base + "b";
    up = Setup();
  }
  ~HostPair() {
    for (const auto& ns : {a, b})
      if (NetnsExists(ns)) RunCommand({"ip", "netns", "del", ns}).status().IgnoreError();
  }
  Status Setup() {
    FL_RETURN_IF_ERROR(RunChecked({"ip", "netns", "add", a}).status());
    FL_RETURN_IF_ERROR(RunChecked({"ip", "netns", "add", b}).status());
    FL_RETURN_IF_ERROR(RunChecked({"ip",
                                   "link",
                                   "add",
                                   "name",
                                   "va",
                                   "address",
                                   "02:00:00:77:00:01",
                                   "numtxqueues",
                                   "4",
                                   "numrxqueues",
                                   "4",
                                   "netns",
                                   a,
                                   "type",
                                   "veth",
                                   "peer",
                                   "name",
                                   "vb",
                                   "address",
                                   "02:00:00:77:00:02",
                                   "numtxqueues",
                                   "4",
                                   "numrxqueues",
                                   "4",
                                   "netns",
                                   b})
                           .status());
    struct End {
      std::string ns, dev, addr, peer, peer_mac;
    };
    for (const End& e : {End{a, "va", kAddrA, kAddrB, "02:00:00:77:00:02"},
                         End{b, "vb", kAddrB, kAddrA, "02:00:00:77:00:01"}}) {
      FL_RETURN_IF_ERROR(
          RunChecked({"ip", "-n", e.ns, "addr", "add", e.addr + "/24", "dev", e.dev}).status());
      FL_RETURN_IF_ERROR(RunChecked({"ip", "-n", e.ns, "link", "set", e.dev, "up"}).status());
      FL_RETURN_IF_ERROR(RunChecked({"ip", "-n", e.ns, "neigh", "replace", e.peer, "lladdr",
                                     e.peer_mac, "dev", e.dev, "nud", "permanent"})
                             .status());
    }
    bool carrier = WaitUntil(
        [&] {
          auto st = GetLink(a, "va");
          return st.ok() && st->carrier;
        },
        Deadline::After(3 * kNsPerSec));
    return carrier ? OkStatus() : DeadlineExceededError("veth pair has no carrier");
  }
  Status Tc(std::vector<std::string> args) const {
    args.insert(args.begin(), "tc");
    return RunChecked(args, Opts(a, 5 * kNsPerSec)).status();
  }
};

// nft rulesets and qdisc trees of both ends.
struct Snapshot {
  std::string nft_a, nft_b;
  QdiscTree tree_a, tree_b;
};

Snapshot Take(const HostPair& hp) {
  Snapshot s;
  auto nft = [](const std::string& ns) {
    auto r = RunChecked({"nft", "list", "ruleset"}, Opts(ns, 5 * kNsPerSec));
    REQUIRE(r.ok());
    return *r;
  };
  s.nft_a = nft(hp.a);
  s.nft_b = nft(hp.b);
  auto ta = ReadQdiscTree(hp.a, "va");
  auto tb = ReadQdiscTree(hp.b, "vb");
  REQUIRE(ta.ok());
  REQUIRE(tb.ok());
  s.tree_a = *ta;
  s.tree_b = *tb;
  return s;
}

void CheckSame(const Snapshot& before, const Snapshot& after) {
  CHECK(before.nft_a == after.nft_a);
  CHECK(before.nft_b == after.nft_b);
  std::string why;
  INFO("before " << DescribeTree(before.tree_a) << " after " << DescribeTree(after.tree_a));
  CHECK(SameTree(before.tree_a, after.tree_a, &why));
  INFO(why);
  CHECK(SameTree(before.tree_b, after.tree_b));
}

// Real hosts: gray faults act on the host's own NIC, there is no switch to reach.
class HostNicFabric : public Fabric {
 public:
  explicit HostNicFabric(Port nic) : nic_(std::move(nic)) {}
  StatusOr<std::vector<Port>> HostLinks(std::string_view target, PortSide side) const override {
    if (side != PortSide::kHost) return FailedPreconditionError("no switch access");
    if (target != nic_.name && target != "a")
      return NotFoundError("unknown " + std::string(target));
    return std::vector<Port>{nic_};
  }
  StatusOr<std::vector<Port>> Uplinks(std::string_view) const override {
    return NotFoundError("no uplinks");
  }
  StatusOr<std::vector<Port>> UpstreamOf(const Port&) const override {
    return FailedPreconditionError("no switch access");
  }
  StatusOr<ContainerRef> Container(std::string_view target) const override {
    if (container.name.empty() || target != container.name)
      return NotFoundError("unknown container " + std::string(target));
    return container;
  }
  PortSide GrayFaultSide() const override { return PortSide::kHost; }
  ContainerRef container;

 private:
  Port nic_;
};

struct Env {
  testing::ScopedStateDir state;
  InjectorRegistry registry{"injector"};
  FaultJournal journal;
  HostPair hp;
  HostNicFabric fabric;
  Env() : fabric(Port{"a.nic0", hp.a, "va", hp.b, "vb", 0, 0}) {
    INFO(hp.up.ToUserString());
    REQUIRE(hp.up.ok());
    REQUIRE(RegisterBuiltinInjectors(registry).ok());
  }
  std::unique_ptr<Injector> Make(const std::string& kind) {
    auto inj = registry.Create(kind);
    REQUIRE(inj.ok());
    return std::move(*inj);
  }
};

TEST_CASE("host side: link_blackhole drops on the host's NIC in each direction, carrier up",
          "[.root][integration]") {
  Env env;
  Snapshot before = Take(env.hp);
  REQUIRE(TcpWorks(env.hp.a, env.hp.b, kAddrB, 5 * kNsPerSec).ok());
  auto inj = env.Make("link_blackhole");
  for (const char* dir : {"both", "from_host", "to_host"}) {
    INFO("direction " << dir);
    FaultSpec spec{"link_blackhole", "a.nic0", {{"direction", dir}}, 0, 1};
    auto h = InjectFault(*inj, spec, env.fabric, &env.journal);
    REQUIRE(h.ok());
    CHECK(h->state["side"] == "host");
    // On the host's own interface, not on the far end.
    CHECK(*NftTableExists(env.hp.a, "netdev", internal::NftTableName(*h, 0)));
    CHECK_FALSE(*NftTableExists(env.hp.b, "netdev", internal::NftTableName(*h, 0)));
    CHECK(GetLink(env.hp.a, "va")->carrier);
    auto out = UdpDelivered(env.hp.a, env.hp.b, kAddrB, 200);  // from the host
    auto in = UdpDelivered(env.hp.b, env.hp.a, kAddrA, 200);   // to the host
    REQUIRE(out.ok());
    REQUIRE(in.ok());
    std::string d = dir;
    CHECK((d == "to_host" ? *out >= 195 : *out == 0));
    CHECK((d == "from_host" ? *in >= 195 : *in == 0));
    REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
    CHECK(env.journal.List()->empty());
    CHECK(RevertFault(*inj, *h, &env.journal).ok());  // harmless
    CheckSame(before, Take(env.hp));
  }
  CHECK(TcpWorks(env.hp.a, env.hp.b, kAddrB, 5 * kNsPerSec).ok());
}

TEST_CASE("host side: packet_loss drops about its percent of what the host sends",
          "[.root][integration]") {
  Env env;
  Snapshot before = Take(env.hp);
  auto inj = env.Make("packet_loss");
  FaultSpec spec{"packet_loss", "a.nic0", {{"percent", "30"}, {"direction", "from_host"}}, 0, 1};
  auto h = InjectFault(*inj, spec, env.fabric, &env.journal);
  REQUIRE(h.ok());
  const size_t n = 2000;
  auto got = UdpDelivered(env.hp.a, env.hp.b, kAddrB, n);
  REQUIRE(got.ok());
  double loss = 1.0 - static_cast<double>(*got) / n;
  INFO("measured loss " << loss);
  // Binomial sd at p=0.3, n=2000 is 1.0 %; 6 % is 6 sd.
  CHECK(loss > 0.24);
  CHECK(loss < 0.36);
  auto back = UdpDelivered(env.hp.b, env.hp.a, kAddrA, 1000);  // the other direction is clean
  REQUIRE(back.ok());
  CHECK(*back >= 990);
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  CheckSame(before, Take(env.hp));
  auto after = UdpDelivered(env.hp.a, env.hp.b, kAddrB, 1000);
  REQUIRE(after.ok());
  CHECK(*after >= 990);
}

TEST_CASE("host side: bandwidth_throttle slows both directions and the default tree comes back",
          "[.root][integration]") {
  Env env;
  Snapshot before = Take(env.hp);
  CHECK(IsDefaultTree(before.tree_a));  // a veth's noqueue 0:
  auto out = TcpPair::Open(env.hp.a, env.hp.b, kAddrB);
  auto in = TcpPair::Open(env.hp.b, env.hp.a, kAddrA);
  REQUIRE(out.ok());
  REQUIRE(in.ok());
  REQUIRE((*out)->RoundTrip(2 << 20, 3 * kNsPerSec).ok());
  REQUIRE((*in)->RoundTrip(2 << 20, 3 * kNsPerSec).ok());
  auto inj = env.Make("bandwidth_throttle");
  FaultSpec spec{"bandwidth_throttle", "a.nic0", {{"rate", "4mbit"}}, 0, 1};
  auto h = InjectFault(*inj, spec, env.fabric, &env.journal);
  REQUIRE(h.ok());
  CHECK(h->state["side"] == "host");
  auto q = ReadRootQdisc(env.hp.a, "va");
  REQUIRE(q.ok());
  CHECK(q->kind == "tbf");
  CHECK(q->rate_bps == 4000000);
  // The far end is untouched: both directions are shaped on the host's own NIC.
  CHECK(SameTree(before.tree_b, *ReadQdiscTree(env.hp.b, "vb")));
  CHECK(*NftTableExists(env.hp.a, "netdev", internal::NftTableName(*h, 0)));
  // At 4 Mbit/s with a 256 KiB burst, 2 MiB needs about 3.7 s (loose: 1 s).
  CHECK((*out)->RoundTrip(2 << 20, kNsPerSec).code() == Code::kDeadlineExceeded);
  CHECK_FALSE((*in)->RoundTrip(2 << 20, kNsPerSec).ok());
  // Policed, not cut: a small message still gets through to the host.
  CHECK(TcpWorks(env.hp.b, env.hp.a, kAddrA, 5 * kNsPerSec).ok());
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  CHECK(env.journal.List()->empty());
  CheckSame(before, Take(env.hp));
  CHECK(RevertFault(*inj, *h, &env.journal).ok());
  auto out2 = TcpPair::Open(env.hp.a, env.hp.b, kAddrB);
  auto in2 = TcpPair::Open(env.hp.b, env.hp.a, kAddrA);
  REQUIRE(out2.ok());
  REQUIRE(in2.ok());
  CHECK((*out2)->RoundTrip(2 << 20, 3 * kNsPerSec).ok());
  CHECK((*in2)->RoundTrip(2 << 20, 3 * kNsPerSec).ok());
}

TEST_CASE("host side: bandwidth_throttle restores an mq root with configured per-queue children",
          "[.root][integration]") {
  Env env;
  REQUIRE(env.hp.Tc({"qdisc", "replace", "dev", "va", "root", "handle", "1:", "mq"}).ok());
  // fq_codel with non-default parameters where the kernel has it (this lab's kernel may not:
  // then a pfifo with a non-default limit stands in for it).
  Status fq =
      env.hp.Tc({"qdisc", "replace", "dev", "va", "parent", "1:1", "handle", "11:", "fq_codel",
                 "limit", "2000", "flows", "512", "target", "10ms", "interval", "200ms", "noecn"});
  if (!fq.ok())
    REQUIRE(env.hp
                .Tc({"qdisc", "replace", "dev", "va", "parent", "1:1", "handle", "11:", "pfifo",
                     "limit", "321"})
                .ok());
  REQUIRE(env.hp
              .Tc({"qdisc", "replace", "dev", "va", "parent", "1:2", "handle", "12:", "bfifo",
                   "limit", "65432"})
              .ok());
  REQUIRE(env.hp
              .Tc({"qdisc", "replace", "dev", "va", "parent", "1:3", "handle", "13:", "tbf", "rate",
                   "300mbit", "burst", "64k", "latency", "20ms"})
              .ok());
  // 1:4 keeps the kernel's default child.
  Snapshot before = Take(env.hp);
  INFO("tree before: " << DescribeTree(before.tree_a) << (fq.ok() ? "" : " (no fq_codel here)"));
  REQUIRE(before.tree_a.nodes.size() == 5);
  CHECK(before.tree_a.nodes[0].kind == "mq");
  CHECK(before.tree_a.nodes[0].handle == "1:");
  CHECK(before.tree_a.nodes[4].handle == "0:");

  auto inj = env.Make("bandwidth_throttle");
  FaultSpec spec{
      "bandwidth_throttle", "a.nic0", {{"rate", "10mbit"}, {"direction", "from_host"}}, 0, 1};
  auto h = InjectFault(*inj, spec, env.fabric, &env.journal);
  REQUIRE(h.ok());
  auto during = ReadQdiscTree(env.hp.a, "va");
  REQUIRE(during.ok());
  CHECK(during->nodes.size() == 1);
  CHECK(during->nodes[0].kind == "tbf");
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  Snapshot after = Take(env.hp);
  CheckSame(before, after);
  // Spelled out: every qdisc back with its kind, handle, parent and options.
  REQUIRE(after.tree_a.nodes.size() == before.tree_a.nodes.size());
  for (size_t i = 0; i < after.tree_a.nodes.size(); ++i) {
    const auto &x = before.tree_a.nodes[i], &y = after.tree_a.nodes[i];
    INFO(x.kind << " " << x.handle << " " << x.parent);
    CHECK(x.kind == y.kind);
    CHECK(x.handle == y.handle);
    CHECK(x.parent == y.parent);
    if (x.kind != "tbf") CHECK(x.options == y.options);
  }
  CHECK(RevertFault(*inj, *h, &env.journal).ok());  // a second revert changes nothing
  CheckSame(before, Take(env.hp));
  // Verify(gone) compares with the tree read at Prepare: a changed child is not "gone".
  REQUIRE(env.hp
              .Tc({"qdisc", "replace", "dev", "va", "parent", "1:2", "handle", "12:", "bfifo",
                   "limit", "1000"})
              .ok());
  CHECK(inj->Verify(*h, Expect::kGone).code() == Code::kInternal);
}

TEST_CASE("host side: a qdisc tree the revert could not restore is refused before any change",
          "[.root][integration]") {
  Env env;
  REQUIRE(
      env.hp.Tc({"qdisc", "replace", "dev", "va", "root", "handle", "1:", "htb", "default", "10"})
          .ok());
  Snapshot before = Take(env.hp);
  auto inj = env.Make("bandwidth_throttle");
  FaultSpec spec{"bandwidth_throttle", "a.nic0", {{"rate", "10mbit"}}, 0, 1};
  auto h = InjectFault(*inj, spec, env.fabric, &env.journal);
  CHECK(h.status().code() == Code::kFailedPrecondition);
  CHECK(h.status().message().find("htb") != std::string::npos);
  CHECK(h.status().message().find("va") != std::string::npos);
  CHECK(env.journal.List()->empty());
  CheckSame(before, Take(env.hp));
  // pfc_storm stall needs switch access: refused on this fabric, frames are the way.
  auto storm = env.Make("pfc_storm");
  auto s =
      InjectFault(*storm, FaultSpec{"pfc_storm", "a.nic0", {}, 0, 1}, env.fabric, &env.journal);
  CHECK(s.status().code() == Code::kFailedPrecondition);
  CHECK(env.journal.List()->empty());
}

TEST_CASE("host side: faults on an interface of the caller's own namespace (netns \"\")",
          "[.root][integration]") {
  Env env;
  Snapshot before = Take(env.hp);
  // The agent on a real host runs in the host's namespace: Ports carry netns "". Here the whole
  // cycle runs on a thread that has joined namespace a.
  HostNicFabric local(Port{"a.nic0", "", "va", "", "", 0, 0});
  auto hole = env.Make("link_blackhole");
  auto throttle = env.Make("bandwidth_throttle");
  auto storm = env.Make("pfc_storm");
  auto cap = PfcCapture::Open(env.hp.b, "vb");  // the far side of the host's link
  REQUIRE(cap.ok());
  size_t frames = 0;
  std::string table;
  Status cycle = RunInNetns(env.hp.a, [&]() -> Status {
    FL_ASSIGN_OR_RETURN(auto h, InjectFault(*hole, FaultSpec{"link_blackhole", "a.nic0", {}, 0, 1},
                                            local, &env.journal));
    table = internal::NftTableName(h, 0);
    FL_ASSIGN_OR_RETURN(bool here, NftTableExists("", "netdev", table));
    if (!here) return InternalError("blackhole table not in the caller's namespace");
    if (TcpWorks(env.hp.a, env.hp.b, kAddrB, 300 * kNsPerMs).ok())
      return InternalError("traffic passed the blackhole");
    FL_RETURN_IF_ERROR(RevertFault(*hole, h, &env.journal));
    FL_ASSIGN_OR_RETURN(
        auto t, InjectFault(*throttle,
                            FaultSpec{"bandwidth_throttle", "a.nic0", {{"rate", "10mbit"}}, 0, 1},
                            local, &env.journal));
    FL_ASSIGN_OR_RETURN(RootQdisc q, ReadRootQdisc("", "va"));
    if (q.kind != "tbf") return InternalError("no tbf on va in the caller's namespace");
    FL_RETURN_IF_ERROR(RevertFault(*throttle, t, &env.journal));
    FL_ASSIGN_OR_RETURN(
        auto p,
        InjectFault(*storm,
                    FaultSpec{"pfc_storm", "a.nic0", {{"mode", "frames"}, {"fps", "500"}}, 0, 1},
                    local, &env.journal));
    frames = (*cap)->Collect(5, 2 * kNsPerSec).size();
    return RevertFault(*storm, p, &env.journal);
  });
  INFO(cycle.ToUserString());
  CHECK(cycle.ok());
  CHECK(frames >= 5);
  CHECK(env.journal.List()->empty());
  CheckSame(before, Take(env.hp));
  CHECK(TcpWorks(env.hp.a, env.hp.b, kAddrB, 5 * kNsPerSec).ok());
}

// The handle alone reverts a host-side fault: the owner is SIGKILLed holding a throttle (over an
// mq tree) and a blackhole; recovery from the journal, with no Fabric, puts everything back.
TEST_CASE("host side: a SIGKILLed owner's faults are reverted from the journal",
          "[.root][integration]") {
  Env env;
  REQUIRE(env.hp.Tc({"qdisc", "replace", "dev", "va", "root", "handle", "1:", "mq"}).ok());
  REQUIRE(env.hp
              .Tc({"qdisc", "replace", "dev", "va", "parent", "1:3", "handle", "13:", "pfifo",
                   "limit", "77"})
              .ok());
  Snapshot before = Take(env.hp);
  auto throttle = env.Make("bandwidth_throttle");
  auto hole = env.Make("link_blackhole");
  pid_t owner = fork();
  REQUIRE(owner >= 0);
  if (owner == 0) {
    // The child injects and dies without reverting (no Catch2 here).
    auto t = InjectFault(*throttle,
                         FaultSpec{"bandwidth_throttle", "a.nic0", {{"rate", "10mbit"}}, 0, 1},
                         env.fabric, &env.journal);
    auto b = InjectFault(*hole, FaultSpec{"link_blackhole", "a.nic0", {}, 0, 1}, env.fabric,
                         &env.journal);
    if (!t.ok() || !b.ok()) _exit(1);
    kill(getpid(), SIGKILL);
    _exit(2);
  }
  int status = 0;
  REQUIRE(waitpid(owner, &status, 0) == owner);
  REQUIRE(WIFSIGNALED(status));
  auto entries = env.journal.List();
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 2);
  CHECK(ReadRootQdisc(env.hp.a, "va")->kind == "tbf");
  RecoveryReport r = RecoverDeadFaults(env.journal, env.registry);
  CHECK(r.reverted.size() == 2);
  CHECK(r.failed.empty());
  CHECK(env.journal.List()->empty());
  CheckSame(before, Take(env.hp));
  CHECK(TcpWorks(env.hp.a, env.hp.b, kAddrB, 5 * kNsPerSec).ok());
}

// Issue 29: the journal entry of a fault whose NIC is gone (the link removed after its owner
// died) failed every later recovery and was never removed. Now its revert fails, recovery
// finds every object it held gone, and removes the entry, saying so.
TEST_CASE("host side: a dead owner's fault on a NIC that is gone is removed from the journal",
          "[.root][integration]") {
  Env env;
  auto throttle = env.Make("bandwidth_throttle");
  pid_t owner = fork();
  REQUIRE(owner >= 0);
  if (owner == 0) {
    auto t = InjectFault(*throttle,
                         FaultSpec{"bandwidth_throttle", "a.nic0", {{"rate", "10mbit"}}, 0, 1},
                         env.fabric, &env.journal);
    if (!t.ok()) _exit(1);
    kill(getpid(), SIGKILL);
    _exit(2);
  }
  int status = 0;
  REQUIRE(waitpid(owner, &status, 0) == owner);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(env.journal.List()->size() == 1);
  // The NIC goes (both ends of the pair), and with it the throttle's qdisc.
  REQUIRE(RunChecked({"ip", "-n", env.hp.a, "link", "del", "va"}).ok());
  RecoveryReport r = RecoverDeadFaults(env.journal, env.registry);
  INFO((r.failed.empty() ? "" : r.failed.front()));
  CHECK(r.reverted.empty());
  CHECK(r.failed.empty());
  REQUIRE(r.gone.size() == 1);
  CHECK(r.gone.front().find("everything it held is gone") != std::string::npos);
  CHECK(env.journal.List()->empty());
  // A second recovery has nothing to do.
  RecoveryReport again = RecoverDeadFaults(env.journal, env.registry);
  CHECK(again.gone.empty());
  CHECK(again.failed.empty());
}

// Journal entries written before whole qdisc trees were recorded (prior_kind, prior_rate_bps...)
// still revert: a tbf comes back with its rate.
TEST_CASE("host side: a journal entry in the older form restores its tbf", "[.root][integration]") {
  Env env;
  REQUIRE(env.hp
              .Tc({"qdisc", "replace", "dev", "va", "root", "tbf", "rate", "10mbit", "burst", "32k",
                   "latency", "50ms"})
              .ok());
  FaultHandle h;
  h.id = "bandwidth_throttle-old";
  h.spec = FaultSpec{"bandwidth_throttle", "a.nic0", {{"rate", "10mbit"}}, 0, 1};
  h.state["ends"] = nlohmann::json::array({{{"name", "a.nic0/from_host"},
                                            {"netns", env.hp.a},
                                            {"ifname", "va"},
                                            {"prior_kind", "tbf"},
                                            {"prior_handle", "7:"},
                                            {"prior_rate_bps", 300000000},
                                            {"prior_burst", 65536},
                                            {"prior_latency_us", 20000}}});
  auto inj = env.Make("bandwidth_throttle");
  REQUIRE(inj->Revert(h).ok());
  auto q = ReadRootQdisc(env.hp.a, "va");
  REQUIRE(q.ok());
  CHECK(q->kind == "tbf");
  CHECK(q->handle == "7:");
  CHECK(q->rate_bps == 300000000);
  CHECK(inj->Verify(h, Expect::kGone).ok());
}

// A podman container (image imported from a directory holding a static busybox: no registry,
// no network) killed through the podman CLI. Where podman or busybox is missing the test says
// so and checks nothing else.
TEST_CASE("container_kill: a podman container is killed through the podman CLI",
          "[.root][integration]") {
  auto podman = ResolveTool("podman");
  if (!podman.ok() || access("/bin/busybox", X_OK) != 0) {
    WARN("podman or /bin/busybox (busybox-static) not installed: podman case not run");
    return;
  }
  testing::ScopedStateDir state;
  InjectorRegistry registry("injector");
  REQUIRE(RegisterBuiltinInjectors(registry).ok());
  FaultJournal journal;
  const std::string tag = std::to_string(getpid());
  const std::string image = "localhost/fl-inj-test:" + tag;
  const std::string name = "fl-inj-" + tag;
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(state.path()) / "rootfs";
  struct Cleanup {
    std::string podman, name, image;
    ~Cleanup() {
      RunCommand({podman, "rm", "-f", name}, Opts("", 60 * kNsPerSec)).status().IgnoreError();
      RunCommand({podman, "rmi", "-f", image}, Opts("", 60 * kNsPerSec)).status().IgnoreError();
    }
  } cleanup{*podman, name, image};
  fs::create_directories(dir / "bin");
  fs::copy_file("/bin/busybox", dir / "bin" / "busybox");
  fs::create_symlink("busybox", dir / "bin" / "sleep");
  const std::string tar = state.path() + "/rootfs.tar";
  REQUIRE(RunChecked({"tar", "-C", dir.string(), "-cf", tar, "."}).ok());
  const CommandOptions slow = Opts("", 60 * kNsPerSec);
  REQUIRE(RunChecked({*podman, "import", tar, image}, slow).ok());
  std::vector<std::string> run = {*podman};
  // crun refuses hybrid cgroup hierarchies (as on this lab's machines); runc copes.
  if (auto runc = ResolveTool("runc"); runc.ok()) run.insert(run.end(), {"--runtime", *runc});
  run.insert(run.end(), {"run", "-d", "--network", "none", "--ulimit", "nofile=1024:1024",
                         "--ulimit", "nproc=1024:1024", "--name", name, image, "/bin/sleep", "60"});
  auto started = RunChecked(run, slow);
  INFO(started.status().ToUserString());
  REQUIRE(started.ok());
  EngineContainer e{"podman", *podman, name};
  REQUIRE(*EngineRunning(e));

  HostNicFabric fabric(Port{});
  fabric.container = ContainerRef{"h0.rank0", "", "podman", name, ""};
  auto inj = registry.Create("container_kill");
  REQUIRE(inj.ok());
  FaultSpec spec{"container_kill", "h0.rank0", {}, 0, 1};
  auto h = InjectFault(**inj, spec, fabric, &journal);
  INFO(h.status().ToUserString());
  REQUIRE(h.ok());
  CHECK(h->state["runtime"] == "podman");
  CHECK(h->state["cli"] == *podman);
  CHECK(h->effective_wall_ns >= h->requested_wall_ns);
  CHECK_FALSE(*EngineRunning(e));
  REQUIRE(RevertFault(**inj, *h, &journal).ok());
  CHECK(journal.List()->empty());
  // A stopped container is refused before anything is journaled.
  auto again = InjectFault(**inj, spec, fabric, &journal);
  CHECK(again.status().code() == Code::kFailedPrecondition);
  CHECK(again.status().message().find("not running") != std::string::npos);
  CHECK(journal.List()->empty());
}

}  // namespace
}  // namespace fl::injectors
