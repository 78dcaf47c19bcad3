// `faultline inventory discover` on "real hosts" (the namespaces of a local lab, site_fixture.h)
// with a real lldpd in every host and switch namespace: on day one the agents run without an
// inventory (it does not exist yet) and only answer the census; the inventory discover writes
// has the lab's wiring (each NIC's switch and port, as the topology cabled them) and its
// addresses; the agents, restarted, serve a run with --lab on it, which passes; a NIC moved to
// another switch port is then the one line --check reports (exit 1).
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <map>
#include <memory>

#include "common/file_util.h"
#include "common/process.h"
#include "harness/lab/inventory.h"
#include "harness/lab/lldp.h"
#include "harness/lab/local_lab.h"
#include "tests/harness/lldpd_testing.h"
#include "tests/harness/run_testing.h"
#include "tests/harness/site_fixture.h"
#include "tests/test_util.h"

namespace fl::testing {
namespace {

std::string Scenario(const std::string& dir) {
  const std::string p = dir + "/flap.yaml";
  REQUIRE(
      WriteFileAtomic(p,
                      "name: discovered_flap\nseed: 3\nlab: {topology: configs/labs/rail4.yaml}\n"
                      "job:\n  size: 256KiB\n  duration: 6s\n  warmup_iterations: 10\n"
                      "  collective_timeout: 20s\n"
                      "faults:\n"
                      "  - {kind: nic_port_flap, target: h1.nic0, at: 1s, duration: 1500ms}\n"
                      "expectations:\n  survives: true\n  exact_correctness: true\n")
          .ok());
  return p;
}

// Waits until host's lldpd has heard `want` neighbours, the last of them on port `port` when
// given.
bool HeardAll(const Lldpd& d, size_t want, const std::string& ifname = "",
              const std::string& port = "") {
  return WaitUntil(
      [&] {
        auto out = d.Cli({"-f", "json", "show", "neighbors"});
        if (!out.ok()) return false;
        auto n = lab::ParseLldpNeighbors(*out);
        if (!n.ok() || n->size() != want) return false;
        if (ifname.empty()) return true;
        for (const auto& x : *n)
          if (x.ifname == ifname) return x.port == port;
        return false;
      },
      Deadline::After(30 * kNsPerSec), 200 * kNsPerMs);
}

TEST_CASE(
    "faultline inventory discover: real lldpd in the lab - the written inventory has the lab's "
    "wiring - a run with --lab on it passes - a moved NIC is what --check reports",
    "[.root][integration]") {
  TempDir dir("fl_discover");
  REQUIRE(chmod(dir.path().c_str(), 0755) == 0);  // lldpd's unprivileged side opens its socket
  const std::string d = dir.path();
  InventoryFixtureOptions o;
  o.extra_agent_flags = [d](const std::string& host) {
    return std::vector<std::pair<std::string, std::string>>{
        {"--lldp-socket", d + "/" + host + ".lldpd"}};
  };
  auto fx = InventoryFixture::Create(o);
  REQUIRE(fx.ok());
  const lab::LabPlan& plan = (*fx)->lab().plan();
  std::map<std::string, std::unique_ptr<Lldpd>> lldpd;
  for (const auto& n : plan.nodes) {
    if (n.name == "mgmt") continue;
    // Hosts send and listen on their data NICs; switches on their host ports ("h0", and "p*",
    // the name a moved NIC's port gets below).
    auto s = Lldpd::Start(n.netns, d, n.name, n.is_switch ? "h*,p*" : "nic*");
    REQUIRE(s.ok());
    lldpd[n.name] = std::move(*s);
  }
  for (const auto& h : (*fx)->hosts()) REQUIRE(HeardAll(*lldpd[h], (*fx)->nics_of(h).size()));

  // Day one: no inventory yet.
  const std::string inv_path = (*fx)->inventory_path();
  REQUIRE(unlink(inv_path.c_str()) == 0);
  REQUIRE((*fx)->StartAgents().ok());
  Faultline discover(
      {"inventory", "discover", "--hosts", "h0,h1", "--listen", (*fx)->listen(), "--token-file",
       (*fx)->token_path(), "--name", (*fx)->name(), "--wait", "60s", "-o", inv_path},
      d, "discover");
  auto rc = discover.Wait(Deadline::After(120 * kNsPerSec));
  INFO(discover.err() + (*fx)->AgentLogText("h0"));
  REQUIRE(rc.has_value());
  REQUIRE(*rc == 0);
  auto inv = lab::LoadInventory(inv_path, {.open_switch_drivers = false});
  INFO(ReadFile(inv_path).value_or(""));
  REQUIRE(inv.ok());
  REQUIRE(inv->hosts.size() == 2);
  // The wiring equals the topology's: NIC i of host h goes to the switch port the lab cabled.
  size_t compared = 0;
  for (const auto& l : plan.links) {
    if (l.kind != lab::LinkKind::kHost) continue;
    const lab::InventoryHost* h = inv->FindHost(l.a_node);
    REQUIRE(h != nullptr);
    const lab::InventoryNic* nic = nullptr;
    for (const auto& n : h->nics)
      if (n.ifname == l.a_if) nic = &n;
    REQUIRE(nic != nullptr);
    CHECK(nic->sw == l.b_node);
    CHECK(nic->sw_port == l.b_if);
    CHECK(nic->address == (*fx)->address_of(l.a_node, l.a_if));
    CHECK(nic->name == "nic" + std::to_string(l.rail));
    ++compared;
  }
  CHECK(compared == 4);
  CHECK(discover.err().find("[discover] h0: agent ") != std::string::npos);

  // The agents read the inventory at their next start.
  for (const auto& h : (*fx)->hosts())
    REQUIRE((*fx)->RestartAgent(h, Deadline::After(30 * kNsPerSec)).ok());
  Faultline run({"run", Scenario(d), "--lab", inv_path, "--db", d + "/results.db", "--policy",
                 (*fx)->policy_path()},
                d, "run");
  auto rrc = run.Wait(Deadline::After(180 * kNsPerSec));
  INFO(run.err());
  REQUIRE(rrc.has_value());
  CHECK(*rrc == 0);

  // Recabling: h0's rail-0 NIC now arrives at port p9 of its ToR.
  const lab::LinkObj* moved = nullptr;
  for (const auto& l : plan.links)
    if (l.kind == lab::LinkKind::kHost && l.a_node == "h0" && l.rail == 0) moved = &l;
  REQUIRE(moved != nullptr);
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"link", "set", moved->b_if, "down"},
        {"link", "set", moved->b_if, "name", "p9"},
        {"link", "set", "p9", "up"}}) {
    std::vector<std::string> argv = {"/usr/sbin/ip"};
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    RunOptions ro;
    ro.netns = moved->b_netns;
    auto r = Run(argv, ro);
    REQUIRE(r.ok());
    REQUIRE(r->exit_code == 0);
  }
  REQUIRE(HeardAll(*lldpd["h0"], 2, moved->a_if, "p9"));
  Faultline check({"inventory", "discover", "--check", inv_path, "--wait", "60s"}, d, "check");
  auto crc = check.Wait(Deadline::After(120 * kNsPerSec));
  INFO(check.out() + check.err());
  REQUIRE(crc.has_value());
  CHECK(*crc == 1);
  const std::string want = "DRIFT h0.nic0 (" + moved->a_if + "): moved from " + moved->b_node +
                           " " + moved->b_if + " to " + moved->b_node + " p9\n";
  CHECK(check.out().rfind(want, 0) == 0);
  CHECK(check.out().find("DRIFT", want.size()) == std::string::npos);  // that move only
  (*fx)->StopAgents().IgnoreError();
}

}  // namespace
}  // namespace fl::testing
