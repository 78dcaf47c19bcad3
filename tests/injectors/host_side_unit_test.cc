// Pure-logic tests of what faults on a host's own interface need: qdisc trees (read, checked,
// recreated, compared), the nft hooks per side, the ingress policer's rules, the refusals made
// at Prepare on a host-side fabric, the docker/podman CLI's argv and inspect output, and the
// injectors' shared helpers for a namespace that is gone and for their background workers.
#include <catch2/catch.hpp>

#include "injectors/builtin_internal.h"
#include "injectors/container_runtime.h"
#include "injectors/injector.h"
#include "injectors/tc_nft.h"

namespace fl::injectors {
namespace {

// `tc -j qdisc show` of a 4-queue interface: mq 1: with one child per queue (listed in the
// kernel's order, not sorted), as iproute2 6.1 prints it.
constexpr const char* kMqTree =
    R"([{"kind":"mq","handle":"1:","root":true,"options":{}},)"
    R"({"kind":"pfifo_fast","handle":"0:","parent":"1:1","options":{"bands":3,"priomap":[1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1],"multiqueue":false}},)"
    R"({"kind":"tbf","handle":"14:","parent":"1:4","options":{"rate":12500000,"burst":32762,"lat":20000}},)"
    R"({"kind":"pfifo","handle":"12:","parent":"1:2","options":{"limit":321}},)"
    R"({"kind":"bfifo","handle":"13:","parent":"1:3","options":{"limit":65432}},)"
    R"({"kind":"ingress","handle":"ffff:","parent":"ffff:fff1","options":{}}])";

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> v;
  std::string cur;
  for (char c : s) {
    if (c == ' ') {
      v.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  v.push_back(cur);
  return v;
}

TEST_CASE("qdisc tree: an mq root with per-queue children is read, sorted and recreated",
          "[unit]") {
  auto t = ParseQdiscTree(kMqTree, "eth0");
  REQUIRE(t.ok());
  REQUIRE(t->nodes.size() == 5);  // the ingress qdisc is not part of the egress tree
  CHECK(t->nodes[0].kind == "mq");
  CHECK(t->nodes[0].parent == "root");
  CHECK(t->nodes[1].parent == "1:1");
  CHECK(t->nodes[4].parent == "1:4");
  CHECK_FALSE(IsDefaultTree(*t));
  CHECK(CheckRestorableTree(*t, "eth0").ok());
  auto cmds = RestoreTreeCommands("eth0", *t);
  REQUIRE(cmds.ok());
  // The root first, then each configured child; the default child (0:) comes back with the root.
  REQUIRE(cmds->size() == 4);
  CHECK((*cmds)[0] == Split("tc qdisc replace dev eth0 root handle 1: mq"));
  CHECK((*cmds)[1] == Split("tc qdisc replace dev eth0 parent 1:2 handle 12: pfifo limit 321"));
  CHECK((*cmds)[2] == Split("tc qdisc replace dev eth0 parent 1:3 handle 13: bfifo limit 65432"));
  CHECK((*cmds)[3] == Split("tc qdisc replace dev eth0 parent 1:4 handle 14: tbf rate "
                            "100000000bit burst 32762 latency 20000us"));
  // The journal form round-trips.
  QdiscTree back = TreeFromJson(TreeToJson(*t));
  CHECK(SameTree(*t, back));
}

TEST_CASE("qdisc tree: fq_codel children are recreated with their options", "[unit]") {
  auto t = ParseQdiscTree(
      R"([{"kind":"mq","handle":"1:","root":true,"options":{}},)"
      R"({"kind":"fq_codel","handle":"11:","parent":"1:1","options":{"limit":2000,"flows":512,)"
      R"("quantum":1514,"target":10000,"interval":200000,"memory_limit":16777216,"ecn":true,)"
      R"("drop_batch":32}},)"
      R"({"kind":"fq_codel","handle":"0:","parent":"1:2","options":{"limit":10240,"flows":1024,)"
      R"("quantum":1514,"target":"5ms","interval":"100ms","ecn":false}}])",
      "eth1");
  REQUIRE(t.ok());
  auto cmds = RestoreTreeCommands("eth1", *t);
  REQUIRE(cmds.ok());
  REQUIRE(cmds->size() == 2);  // the default child 1:2 is the kernel's
  CHECK((*cmds)[1] == Split("tc qdisc replace dev eth1 parent 1:1 handle 11: fq_codel limit 2000 "
                            "flows 512 quantum 1514 target 10000us interval 200000us "
                            "memory_limit 16777216 drop_batch 32 ecn"));
  // A configured fq_codel with the string form of times (older iproute2) and noecn.
  t->nodes[2].handle = "22:";
  cmds = RestoreTreeCommands("eth1", *t);
  REQUIRE(cmds.ok());
  CHECK((*cmds)[2] == Split("tc qdisc replace dev eth1 parent 1:2 handle 22: fq_codel limit 10240 "
                            "flows 1024 quantum 1514 target 5ms interval 100ms noecn"));
}

TEST_CASE("qdisc tree: kernel defaults need no commands", "[unit]") {
  for (const char* json :
       {R"([{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}])",
        R"([{"kind":"mq","handle":"0:","root":true,"options":{}},)"
        R"({"kind":"fq_codel","handle":"0:","parent":":1","options":{"limit":10240}},)"
        R"({"kind":"fq_codel","handle":"0:","parent":":2","options":{"limit":10240}}])"}) {
    auto t = ParseQdiscTree(json, "eth0");
    REQUIRE(t.ok());
    CHECK(IsDefaultTree(*t));
    auto cmds = RestoreTreeCommands("eth0", *t);
    REQUIRE(cmds.ok());
    CHECK(cmds->empty());
  }
  // A configured child under the default mq: put back under the re-created default root.
  auto t =
      ParseQdiscTree(R"([{"kind":"mq","handle":"0:","root":true,"options":{}},)"
                     R"({"kind":"pfifo","handle":"8001:","parent":":1","options":{"limit":50}}])",
                     "eth0");
  REQUIRE(t.ok());
  CHECK_FALSE(IsDefaultTree(*t));
  auto cmds = RestoreTreeCommands("eth0", *t);
  REQUIRE(cmds.ok());
  REQUIRE(cmds->size() == 1);
  CHECK((*cmds)[0] == Split("tc qdisc replace dev eth0 parent :1 handle 8001: pfifo limit 50"));
}

TEST_CASE("qdisc tree: trees a revert could not restore are refused, naming the qdisc", "[unit]") {
  struct Case {
    const char* json;
    const char* named;
  } cases[] = {
      {R"([{"kind":"htb","handle":"1:","root":true,"options":{"r2q":10,"default":"0x1"}}])", "htb"},
      {R"([{"kind":"netem","handle":"5:","root":true,"options":{"limit":1000}}])", "netem"},
      {R"([{"kind":"tbf","handle":"1:","root":true,"options":{"rate":1000,"burst":3000,"lat":1000,)"
       R"("peakrate":2000}}])",
       "peakrate"},
      {R"([{"kind":"tbf","handle":"1:","root":true,"options":{"rate":1000,"burst":3000,"lat":1000}},)"
       R"({"kind":"pfifo","handle":"10:","parent":"1:1","options":{"limit":5}}])",
       "child of tbf"},
      {R"([{"kind":"mq","handle":"1:","root":true,"options":{}},)"
       R"({"kind":"fq_codel","handle":"11:","parent":"1:1","options":{"limit":5,"fancy":1}}])",
       "fancy"},
      {R"([{"kind":"mq","handle":"1:","root":true,"options":{}},)"
       R"({"kind":"pfifo","handle":"21:","parent":"11:1","options":{"limit":5}}])",
       "per-queue child"},
      {R"([{"kind":"pfifo","handle":"5:","parent":"1:1","options":{"limit":5}}])", "no root"},
  };
  for (const auto& c : cases) {
    auto t = ParseQdiscTree(c.json, "eth0");
    REQUIRE(t.ok());
    Status s = CheckRestorableTree(*t, "eth0");
    INFO(c.json << " -> " << s.message());
    CHECK(s.code() == Code::kFailedPrecondition);
    CHECK(s.message().find(c.named) != std::string::npos);
    CHECK(s.message().find("eth0") != std::string::npos);
  }
  CHECK(ParseQdiscTree("{}", "eth0").status().code() == Code::kInvalidArgument);
  CHECK(ParseQdiscTree("not json", "eth0").status().code() == Code::kInvalidArgument);
}

TEST_CASE("qdisc tree: comparison covers kinds, handles, parents and options", "[unit]") {
  auto a = ParseQdiscTree(kMqTree, "eth0");
  REQUIRE(a.ok());
  QdiscTree b = *a;
  CHECK(SameTree(*a, b));
  // tbf within tc's rounding is the same.
  b.nodes[4].options["burst"] = 32760;
  CHECK(SameTree(*a, b));
  std::string why;
  b = *a;
  b.nodes[2].options["limit"] = 322;
  CHECK_FALSE(SameTree(*a, b, &why));
  CHECK(why.find("pfifo 12:") != std::string::npos);
  b = *a;
  b.nodes[3].handle = "99:";
  CHECK_FALSE(SameTree(*a, b));
  // A counter among the options (htb's direct_packets_stat) is traffic, not config.
  QdiscTree h;
  h.nodes.push_back({"htb", "1:", "root", {{"default", "0x10"}, {"direct_packets_stat", 0}}});
  QdiscTree h2 = h;
  h2.nodes[0].options["direct_packets_stat"] = 7;
  CHECK(SameTree(h, h2));
  h2.nodes[0].options["default"] = "0x20";
  CHECK_FALSE(SameTree(h, h2));
  b = *a;
  b.nodes.pop_back();
  CHECK_FALSE(SameTree(*a, b));
  // An unknown default (a journal entry from before trees were recorded) equals any default.
  auto def = ParseQdiscTree(R"([{"kind":"noqueue","handle":"0:","root":true,"options":{}}])", "x");
  REQUIRE(def.ok());
  CHECK(SameTree(QdiscTree{}, *def));
  CHECK_FALSE(SameTree(QdiscTree{}, *a));
}

TEST_CASE("host side: nft hooks and the ingress policer", "[unit]") {
  // The switch port's ingress is what the host sent; the host NIC's ingress is what it receives.
  CHECK(std::string(internal::HooksFor(PortSide::kSwitch).from_host) == "ingress");
  CHECK(std::string(internal::HooksFor(PortSide::kSwitch).to_host) == "egress");
  CHECK(std::string(internal::HooksFor(PortSide::kHost).from_host) == "egress");
  CHECK(std::string(internal::HooksFor(PortSide::kHost).to_host) == "ingress");
  std::string rs = internal::PolicerRuleset("fl_t_0", "eth2", 10000000, 262144);
  CHECK(rs.find("table netdev fl_t_0") != std::string::npos);
  CHECK(rs.find("hook ingress device \"eth2\"") != std::string::npos);
  CHECK(rs.find("limit rate over 1250000 bytes/second burst 262144 bytes drop") !=
        std::string::npos);
}

TEST_CASE("injectors: Verify skips an end whose namespace is gone only after a revert", "[unit]") {
  // The root namespace (none named) is never gone.
  auto root = internal::SkipGoneNetns("", Expect::kPresent);
  REQUIRE(root.ok());
  CHECK_FALSE(*root);
  const std::string gone = "fl-unit-no-such-netns";
  auto after_revert = internal::SkipGoneNetns(gone, Expect::kGone);
  REQUIRE(after_revert.ok());
  CHECK(*after_revert);
  auto present = internal::SkipGoneNetns(gone, Expect::kPresent);
  CHECK(present.status().code() == Code::kUnavailable);
  CHECK(present.status().message() == "namespace " + gone + " is gone");
}

TEST_CASE("injectors: a fault's background worker is taken out of the map once", "[unit]") {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<int>> workers;
  workers["a"] = std::make_unique<int>(1);
  workers["b"] = std::make_unique<int>(2);
  std::unique_ptr<int> a = internal::TakeWorker(mu, workers, "a");
  REQUIRE(a);
  CHECK(*a == 1);
  CHECK_FALSE(internal::TakeWorker(mu, workers, "a"));
  CHECK_FALSE(internal::TakeWorker(mu, workers, "c"));
  auto all = internal::TakeAllWorkers(mu, workers);
  CHECK(workers.empty());
  REQUIRE(all.size() == 1);
  CHECK(*all.at("b") == 2);
}

// A fabric of real hosts (gray faults on the host's own NIC) that resolves nothing but the
// containers it is given; enough for the refusals that Prepare makes before any kernel access.
class HostOnlyFabric : public Fabric {
 public:
  StatusOr<std::vector<Port>> HostLinks(std::string_view, PortSide) const override {
    return std::vector<Port>{Port{"h0.nic0", "", "eth0", "", "", 0, 0}};
  }
  StatusOr<std::vector<Port>> Uplinks(std::string_view) const override {
    return NotFoundError("no uplinks");
  }
  StatusOr<std::vector<Port>> UpstreamOf(const Port&) const override {
    return NotFoundError("no switches");
  }
  StatusOr<ContainerRef> Container(std::string_view) const override { return container; }
  PortSide GrayFaultSide() const override { return PortSide::kHost; }
  ContainerRef container;
};

TEST_CASE("host side: pfc_storm stall needs switch access and is refused at Prepare", "[unit]") {
  InjectorRegistry reg("injector");
  REQUIRE(RegisterBuiltinInjectors(reg).ok());
  auto storm = reg.Create("pfc_storm");
  REQUIRE(storm.ok());
  HostOnlyFabric fabric;
  FaultSpec spec{"pfc_storm", "h0.nic0", {}, 0, 1};
  auto h = (*storm)->Prepare(spec, fabric);
  CHECK(h.status().code() == Code::kFailedPrecondition);
  CHECK(h.status().message().find("mode=frames") != std::string::npos);
  spec.params["mode"] = "frames";
  auto f = (*storm)->Prepare(spec, fabric);  // resolves the host NIC; changes nothing
  REQUIRE(f.ok());
  CHECK(f->state["ports"][0]["ifname"] == "eth0");
  CHECK(f->state["ports"][0]["netns"] == "");
}

TEST_CASE("container_kill: docker/podman references are checked at Prepare", "[unit]") {
  InjectorRegistry reg("injector");
  REQUIRE(RegisterBuiltinInjectors(reg).ok());
  auto kill = reg.Create("container_kill");
  REQUIRE(kill.ok());
  HostOnlyFabric fabric;
  FaultSpec spec{"container_kill", "h0.rank0", {}, 0, 1};
  fabric.container = ContainerRef{"h0.rank0", "", "docker", "x;rm -rf /", ""};
  CHECK((*kill)->Prepare(spec, fabric).status().code() == Code::kInvalidArgument);
  fabric.container = ContainerRef{"h0.rank0", "", "docker", "rank0", "bin/docker"};
  CHECK((*kill)->Prepare(spec, fabric).status().code() == Code::kInvalidArgument);
  fabric.container = ContainerRef{"h0.rank0", "", "lxc", "rank0", ""};
  CHECK((*kill)->Prepare(spec, fabric).status().code() == Code::kInvalidArgument);
}

TEST_CASE("container engines: argv and inspect output", "[unit]") {
  auto c = ResolveEngineContainer("docker", "f00ba4", "/bin/sh");
  REQUIRE(c.ok());
  CHECK(c->cli == "/bin/sh");
  CHECK(EngineKillArgv(*c) ==
        std::vector<std::string>{"/bin/sh", "kill", "--signal", "KILL", "f00ba4"});
  CHECK(EngineInspectRunningArgv(*c) == std::vector<std::string>{"/bin/sh", "inspect", "--type",
                                                                 "container", "-f",
                                                                 "{{.State.Running}}", "f00ba4"});
  CHECK(ResolveEngineContainer("podman", "-rf", "/bin/sh").status().code() ==
        Code::kInvalidArgument);
  CHECK(ResolveEngineContainer("podman", "ok", "podman").status().code() ==
        Code::kInvalidArgument);  // a CLI given must be absolute
  CHECK(ResolveEngineContainer("podman", "ok", "/nonexistent/podman").status().code() ==
        Code::kNotFound);
  CHECK(ResolveEngineContainer("kubectl", "ok", "/bin/sh").status().code() ==
        Code::kInvalidArgument);

  CHECK(*ParseInspectRunning(0, "true\n", "") == true);
  CHECK(*ParseInspectRunning(0, "false\n", "") == false);
  CHECK(ParseInspectRunning(0, "maybe\n", "").status().code() == Code::kInternal);
  // docker and podman say "no such container" in their own words.
  CHECK(ParseInspectRunning(1, "", "Error: No such container: rank0\n").status().code() ==
        Code::kNotFound);
  CHECK(ParseInspectRunning(1, "\n", "Error: No such object: rank0\n").status().code() ==
        Code::kNotFound);
  CHECK(ParseInspectRunning(125, "", "Error: inspecting object: no such container rank0\n")
            .status()
            .code() == Code::kNotFound);
  auto daemon = ParseInspectRunning(
      1, "", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock.\n");
  CHECK(daemon.status().code() == Code::kUnavailable);
  CHECK(daemon.status().message().find("Docker daemon") != std::string::npos);
}

}  // namespace
}  // namespace fl::injectors
