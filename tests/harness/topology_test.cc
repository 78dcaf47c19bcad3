// Topology and fault-spec parsing: every error names file:line:col; shipped topologies load.
#include <catch2/catch.hpp>

#include "common/yaml_util.h"
#include "harness/lab/fault_spec.h"
#include "harness/lab/topology.h"

namespace fl::lab {
namespace {

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

TEST_CASE("topology: bad input fails with file:line and a clear message", "[unit]") {
  auto err = [](const std::string& text) {
    auto t = ParseTopology(text, "lab.yaml");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == Code::kInvalidArgument);
    return t.status().message();
  };
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
