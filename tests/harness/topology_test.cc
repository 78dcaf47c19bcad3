// Topology and fault-spec parsing: every error names file:line:col; shipped topologies load.
#include <catch2/catch.hpp>

#include <map>

#include "common/yaml_util.h"
#include "harness/lab/fault_spec.h"
#include "harness/lab/topology.h"

namespace fl::lab {
namespace {

// The message of the InvalidArgument that text (as "lab.yaml") fails with.
std::string LoadError(const std::string& text) {
  auto t = ParseTopology(text, "lab.yaml");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == Code::kInvalidArgument);
  return t.status().message();
}

TEST_CASE("topology: the shipped topologies load and plan as documented", "[unit]") {
  for (const char* f : {"rail4", "hpn4", "spine4"}) {
    auto t = LoadTopology(std::string(FL_SOURCE_DIR) + "/configs/labs/" + f + ".yaml");
    REQUIRE(t.ok());
    CHECK(t->hosts == 4);
    CHECK(t->gpus_per_host == 2);
    CHECK(t->nics_per_host == 2);
    CHECK(t->link.burst_bytes >= 256 * 1024);
  }
  auto rail = LoadTopology(std::string(FL_SOURCE_DIR) + "/configs/labs/rail4.yaml");
  LabPlan p = PlanLab(*rail, "x", 3);
  // 4 hosts + 2 ToRs + mgmt; 8 host links + 4 management links.
  CHECK(p.nodes.size() == 7);
  CHECK(p.links.size() == 12);
  for (const auto& n : p.nodes) CHECK(n.netns.rfind("fl-x-", 0) == 0);
  CHECK(p.links[1].a_name == "h0.nic1");
  CHECK(p.links[1].b_name == "tor1.h0");
  CHECK(p.links[1].a_addr == "198.18.2.1/24");
  CHECK(p.root_mgmt_addr == "198.19.3.254/24");
  auto hpn = LoadTopology(std::string(FL_SOURCE_DIR) + "/configs/labs/hpn4.yaml");
  LabPlan ph = PlanLab(*hpn, "x", 0);
  CHECK(ph.nodes.size() == 4 + 4 + 1);
  CHECK(ph.links[1].a_name == "h0.nic0b");
  CHECK(ph.links[1].b_name == "tor0b.h0");
  auto spine = LoadTopology(std::string(FL_SOURCE_DIR) + "/configs/labs/spine4.yaml");
  LabPlan ps = PlanLab(*spine, "x", 0);
  int uplinks = 0;
  for (const auto& l : ps.links) uplinks += l.kind == LinkKind::kUplink;
  CHECK(uplinks == 4);
}

TEST_CASE("topology: routing bgp plans routed uplinks, ASes and FRR configs (clos4)", "[unit]") {
  auto t = LoadTopology(std::string(FL_SOURCE_DIR) + "/configs/labs/clos4.yaml");
  REQUIRE(t.ok());
  CHECK(t->routing == Routing::kBgp);
  CHECK(t->spines == 2);
  CHECK(t->pods() == 2);
  LabPlan p = PlanLab(*t, "x", 0);
  // 4 hosts + 4 ToRs + 2 spines + mgmt; 8 host + 8 uplink + 4 management links.
  CHECK(p.nodes.size() == 11);
  CHECK(p.links.size() == 20);
  std::map<std::string, const NodeObj*> nodes;
  for (const auto& n : p.nodes) nodes[n.name] = &n;
  REQUIRE(nodes.count("tor0p1"));
  CHECK(nodes["tor0p0"]->asn == 65001);
  CHECK(nodes["tor0p0"]->addr == "198.18.0.254/24");
  CHECK(nodes["tor1p1"]->addr == "198.18.3.254/24");
  CHECK(nodes["spine0"]->asn == kSpineAsn);
  CHECK(nodes["spine1"]->asn == kSpineAsn);
  CHECK(nodes["mgmt"]->asn == 0);
  CHECK(nodes["h0"]->asn == 0);
  // Hosts: per-pod rail subnets, and a route to the other pod's subnet of the rail.
  const LinkObj* h2nic0 = nullptr;
  for (const auto& l : p.links)
    if (l.a_name == "h2.nic0") h2nic0 = &l;
  REQUIRE(h2nic0);
  CHECK(h2nic0->a_addr == "198.18.2.3/24");
  CHECK(h2nic0->b_node == "tor0p1");
  using Routes = std::vector<std::pair<std::string, std::string>>;
  CHECK(HostRoutes(*t, *h2nic0) == Routes{{"198.18.0.0/24", "198.18.2.254"}});
  // Uplinks: /31s, ToR end even.
  int uplinks = 0;
  for (const auto& l : p.links) {
    if (l.kind != LinkKind::kUplink) continue;
    CHECK(l.a_addr == "198.18.240." + std::to_string(2 * uplinks) + "/31");
    CHECK(l.b_addr == "198.18.240." + std::to_string(2 * uplinks + 1) + "/31");
    ++uplinks;
  }
  CHECK(uplinks == 8);
  const std::string tor = FrrConfig(p, "tor0p0");
  CHECK(tor.find("router bgp 65001\n") != std::string::npos);
  CHECK(tor.find("timers bgp 1 3") != std::string::npos);
  CHECK(tor.find("neighbor 198.18.240.1 remote-as 65000\n") != std::string::npos);
  CHECK(tor.find("network 198.18.0.0/24") != std::string::npos);
  CHECK(tor.find("maximum-paths") != std::string::npos);
  const std::string spine = FrrConfig(p, "spine1");
  CHECK(spine.find("router bgp 65000\n") != std::string::npos);
  CHECK(spine.find("  network ") == std::string::npos);
  size_t peers = 0;
  for (size_t at = 0; (at = spine.find("remote-as", at)) != std::string::npos; ++at) ++peers;
  CHECK(peers == 4);
  CHECK(FrrConfig(p, "h0").empty());
  // l2 topologies keep today's plan: no AS, no uplink addresses, 198.18.<2*rail+plane>.
  auto spine4 = LoadTopology(std::string(FL_SOURCE_DIR) + "/configs/labs/spine4.yaml");
  REQUIRE(spine4.ok());
  CHECK(spine4->routing == Routing::kL2);
  LabPlan ps = PlanLab(*spine4, "x", 0);
  for (const auto& n : ps.nodes) CHECK(n.asn == 0);
  for (const auto& l : ps.links) {
    if (l.kind == LinkKind::kUplink) CHECK(l.a_addr.empty());
    CHECK(HostRoutes(*spine4, l).empty());
  }
}

TEST_CASE("topology: the routing key is validated with file:line:col", "[unit]") {
  auto err = LoadError;
  const std::string pods = "name: a\nhosts: 4\nhosts_per_tor: 2\n";
  CHECK(err(pods + "spines: 1\nrouting: ospf\n") ==
        "lab.yaml:5:10: routing must be l2 or bgp, not 'ospf'");
  // l2 keeps 0..1 spines; bgp allows 1..4 and needs at least one.
  CHECK(err(pods + "spines: 2\n") == "lab.yaml:4:9: spines must be between 0 and 1, not 2");
  CHECK(err(pods + "spines: 5\nrouting: bgp\n") ==
        "lab.yaml:4:9: spines must be between 1 and 4, not 5");
  CHECK(err(pods + "spines: 0\nrouting: bgp\n") ==
        "lab.yaml:4:9: spines must be between 1 and 4, not 0");
  CHECK(err(pods + "routing: bgp\n").find("missing required key 'spines'") != std::string::npos);
  CHECK(err(pods + "tors_per_rail: 2\nspines: 2\nrouting: bgp\n") ==
        "lab.yaml:4:16: routing: bgp needs tors_per_rail: 1");
  CHECK(err(pods + "spines: 2\nrouting: bgp\nswitch_control: ssh\n") ==
        "lab.yaml:6:17: routing: bgp needs switch_control: netlink");
  CHECK(err(pods + "spines: 2\nrouting: [bgp]\n").rfind("lab.yaml:5:", 0) == 0);
  for (const char* ok : {"spines: 4\nrouting: bgp\n", "spines: 1\nrouting: l2\n"}) {
    auto t = ParseTopology(pods + ok, "lab.yaml");
    CHECK(t.ok());
  }
}

TEST_CASE("topology: bad input fails with file:line and a clear message", "[unit]") {
  auto err = LoadError;
  CHECK(err("name: a\nhosts: 2\nhostz: 3\n").find("lab.yaml:3:1: unknown key 'hostz'") == 0);
  CHECK(err("name: a\nhosts: -2\n").find("lab.yaml:2:8: hosts must be between 1 and 64") == 0);
  CHECK(err("name: a\nhosts: 2\nlink: {rate: 1gbit, burst: 4KiB}\n").find("lab.yaml:3:") == 0);
  CHECK(err("name: a\nhosts: 2\nlink: {rate: 1gbit, bogus: 1}\n").find("unknown key 'bogus'") !=
        std::string::npos);
  CHECK(err("name: A_B\nhosts: 2\n").find("lab.yaml:1:7:") == 0);
  CHECK(err("name: a\nhosts: 4\nhosts_per_tor: 2\n").find("spines: 1") != std::string::npos);
  CHECK(err("hosts: 2\n").find("missing required key 'name'") != std::string::npos);
  // Every number is bounded, with its location.
  CHECK(err("name: a\nhosts: 99999999999\n").rfind("lab.yaml:2:8: ", 0) == 0);
  CHECK(err("name: a\nhosts: 2\ngpus_per_host: 17\n") ==
        "lab.yaml:3:16: gpus_per_host must be between 1 and 16, not 17");
  CHECK(err("name: a\nhosts: 2\nnics_per_host: 0\n") ==
        "lab.yaml:3:16: nics_per_host must be between 1 and 8, not 0");
  CHECK(err("name: a\nhosts: 2\nlink: {rate: 5tbit}\n") ==
        "lab.yaml:3:14: rate must be between 0 bit/s and 1 Tbit/s, not 5 Tbit/s");
  CHECK(err("name: a\nhosts: 2\nlink: {rate: 1gbit, burst: 100GiB}\n")
            .rfind("lab.yaml:3:28: burst must be between 0 B and 256 MiB", 0) == 0);
  CHECK(err("name: a\nhosts: 2\nlink: {mtu: 65536}\n") ==
        "lab.yaml:3:13: mtu must be between 576 and 9000, not 65536");
}

TEST_CASE("fault spec: unknown key or kind or parameter and negative durations point at the line",
          "[unit]") {
  injectors::InjectorRegistry reg("injector");
  REQUIRE(injectors::RegisterBuiltinInjectors(reg).ok());
  auto err = [&](const std::string& text) {
    auto doc = YamlDoc::Parse(text, "fault.yaml");
    REQUIRE(doc.ok());
    auto s = ParseFaultSpec(*doc, doc->root(), reg, nullptr);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == Code::kInvalidArgument);
    return s.status().message();
  };
  CHECK(err("kind: nic_port_flap\ntarget: h0.nic0\nfor: -2s\n").find("fault.yaml:3:6:") == 0);
  CHECK(err("kind: nic_port_flap\ntarget: h0.nic0\nfor: 1000h\n") ==
        "fault.yaml:3:6: for must be between 0ns and 168h, not 1000h");
  CHECK(err("kind: nic_port_flap\ntarget: h0.nic0\nduration: 2s\n")
            .find("fault.yaml:3:1: unknown key") == 0);
  CHECK(err("kind: nic_flap\ntarget: h0.nic0\n")
            .find("fault.yaml:1:7: unknown injector 'nic_flap'") == 0);
  CHECK(err("kind: nic_port_flap\ntarget: h0\nparams:\n  perod: 1s\n").find("fault.yaml:4:3:") ==
        0);
  CHECK(err("kind: nic_port_flap\ntarget: h0\nparams:\n  period: -1s\n").find("fault.yaml:4:11:") ==
        0);
  auto doc =
      YamlDoc::Parse("kind: packet_loss\ntarget: h0.nic0\nfor: 2s\nparams: {percent: 5}\n", "f");
  auto ok = ParseFaultSpec(*doc, doc->root(), reg, nullptr);
  REQUIRE(ok.ok());
  CHECK(ok->duration == 2 * kNsPerSec);
  CHECK(ok->params.at("percent") == "5");
}

}  // namespace
}  // namespace fl::lab
