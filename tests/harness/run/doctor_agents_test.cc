// `faultline doctor --lab INVENTORY` with the hosts' real agents (site_fixture.h): a census of
// them says each is reachable, its version and its clock; a clean lab exits 0. An agent whose
// clock is 2 s off (the agent run under libfaketime, as a host with a bad clock would be) is
// CRITICAL with its offset (exit 2); so is a host that does not answer, and an inventory NIC
// the host does not have.
#include <catch2/catch.hpp>

#include <memory>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "tests/harness/run_testing.h"
#include "tests/harness/site_fixture.h"
#include "tests/test_util.h"

namespace fl::testing {
namespace {

constexpr const char* kFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

// `faultline doctor --json` on the fixture's inventory: its exit code and findings.
std::pair<int, nlohmann::json> Doctor(InventoryFixture& fx, const std::string& dir,
                                      const std::string& tag, const std::string& inventory = "",
                                      const std::string& wait = "20s") {
  REQUIRE(MakeDirs(dir + "/journal", 0700).ok());
  // A fault on h0's first NIC: each agent's own policy (sent in its Hello) decides it too.
  const std::string scenario = dir + "/flap.yaml";
  REQUIRE(WriteFileAtomic(scenario,
                          "name: flap\nlab: {topology: configs/labs/rail4.yaml}\n"
                          "job: {iterations: 100}\nfaults:\n"
                          "  - {kind: nic_port_flap, target: h0." +
                              fx.nics_of("h0").front() + ", at: 1s, duration: 1s}\n")
              .ok());
  Faultline f({"doctor", "--lab", inventory.empty() ? fx.inventory_path() : inventory, "--policy",
               fx.policy_path(), "--scenario", scenario, "--journal-dir", dir + "/journal", "--db",
               dir + "/results.db", "--agent-wait", wait, "--json"},
              dir, tag);
  auto rc = f.Wait(Deadline::After(90 * kNsPerSec));
  INFO(f.out() + f.err());
  REQUIRE(rc.has_value());
  auto j = nlohmann::json::parse(f.out(), nullptr, false);
  REQUIRE(!j.is_discarded());
  return {*rc, j};
}

std::vector<nlohmann::json> AgentLines(const nlohmann::json& j, const std::string& level) {
  std::vector<nlohmann::json> out;
  for (const auto& c : j["checks"])
    if (c["check"] == "agents" && c["level"] == level) out.push_back(c);
  return out;
}

// The fixture with every host's agent running; h1's under libfaketime, its clock 2 s ahead,
// when skewed.
std::unique_ptr<InventoryFixture> Lab(bool skewed) {
  InventoryFixtureOptions o;
  o.extra_agent_env = [skewed](const std::string& host) {
    if (host != "h1" || !skewed) return std::vector<std::string>{};
    return std::vector<std::string>{std::string("LD_PRELOAD=") + kFaketime, "FAKETIME=+2s",
                                    "FAKETIME_DONT_FAKE_MONOTONIC=1"};
  };
  auto fx = InventoryFixture::Create(o);
  REQUIRE(fx.ok());
  REQUIRE((*fx)->StartAgents().ok());
  return std::move(*fx);
}

TEST_CASE(
    "faultline doctor with real agents: a clean lab is OK - each agent's version, clock and own "
    "policy - exit 0",
    "[.root][integration]") {
  TempDir dir("fl_doctor_agents");
  auto fx = Lab(false);
  auto [rc, j] = Doctor(*fx, dir.path(), "clean");
  INFO(j.dump(2));
  CHECK(rc == 0);
  auto ok = AgentLines(j, "OK");
  REQUIRE(ok.size() == 2);
  CHECK(ok[0]["message"].get<std::string>().rfind("h0: agent 0.", 0) == 0);
  CHECK(ok[0]["message"].get<std::string>().find(", clock ") != std::string::npos);
  bool h0_policy = false;
  for (const auto& c : j["checks"])
    h0_policy =
        h0_policy || (c["check"] == "policy" && c["level"] == "OK" &&
                      c["message"].get<std::string>().find("allowed by h0's policy " +
                                                           fx->policy_path()) != std::string::npos);
  CHECK(h0_policy);
  fx->StopAgents().IgnoreError();
}

TEST_CASE(
    "faultline doctor with real agents: an agent whose clock is 2 s off is CRITICAL with its "
    "offset - exit 2",
    "[.root][integration]") {
  TempDir dir("fl_doctor_agents");
  auto fx = Lab(true);
  auto [rc, j] = Doctor(*fx, dir.path(), "skewed");
  INFO(j.dump(2));
  CHECK(rc == 2);
  auto crit = AgentLines(j, "CRITICAL");
  REQUIRE(crit.size() == 1);
  const std::string m = crit[0]["message"];
  CHECK(m.rfind("h1: clock +2", 0) == 0);  // +2000.x ms
  CHECK(m.find("more than 500.0 ms") != std::string::npos);
  CHECK(AgentLines(j, "OK").size() == 1);  // h0
  fx->StopAgents().IgnoreError();
}

TEST_CASE(
    "faultline doctor with real agents: a host without an agent and a NIC its host does not have "
    "are CRITICAL - exit 2",
    "[.root][integration]") {
  TempDir dir("fl_doctor_agents");
  auto fx = Lab(false);
  // An inventory that names a NIC h0 does not have, and a host with no agent.
  auto text = ReadFile(fx->inventory_path());
  REQUIRE(text.ok());
  std::string bad = *text;
  const std::string nic = "ifname: " + fx->nics_of("h0").back();
  REQUIRE(bad.find(nic) != std::string::npos);
  bad.replace(bad.find(nic), nic.size(), "ifname: ens9f9");
  const InventoryFixtureOptions& o = fx->options();
  bad += "  - name: h9\n    ranks: " + std::to_string(o.ranks_per_host) + "\n    nics:\n";
  for (int i = 0; i < o.nics_per_host; ++i)
    bad += "      - {name: n" + std::to_string(i) + ", ifname: n" + std::to_string(i) +
           ", address: 10.9.9." + std::to_string(i + 1) + "}\n";
  const std::string bad_path = fx->dir() + "/bad_inventory.yaml";
  REQUIRE(WriteFileAtomic(bad_path, bad).ok());
  auto [rc, j] = Doctor(*fx, dir.path(), "bad", bad_path, "5s");
  INFO(j.dump(2));
  CHECK(rc == 2);
  bool missing_host = false, missing_nic = false;
  for (const auto& c : AgentLines(j, "CRITICAL")) {
    const std::string msg = c["message"];
    missing_host = missing_host || msg.rfind("h9: no agent dialled in", 0) == 0;
    missing_nic =
        missing_nic || msg.find("(ens9f9): missing (no such interface") != std::string::npos;
  }
  CHECK(missing_host);
  CHECK(missing_nic);
  fx->StopAgents().IgnoreError();
}

}  // namespace
}  // namespace fl::testing
