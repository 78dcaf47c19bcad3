// Switch-side faults made the way a real fabric makes them: over SSH with the SONiC preset
// (configs/switches/sonic.yaml), by the fabric agent, against switches that run a real sshd
// (a local lab with switch_control: ssh). First on the local lab itself, then on an inventory
// whose switches are that lab's switch namespaces, reached only through their management
// addresses. ftccl survives each fault with exact results; each is reverted and verified;
// nothing is left. Then the fabric agent and the coordinator are killed with a ToR port down.
#include <signal.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <functional>

#include "common/file_util.h"
#include "harness/lab/local_lab.h"
#include "injectors/journal.h"
#include "injectors/netlink.h"
#include "reports/store/store.h"
#include "tests/harness/run_testing.h"
#include "tests/harness/site_fixture.h"
#include "tests/test_util.h"

namespace fl::testing {
namespace {

// The switch driver's log lines (one per command it ran) reach the coordinator's stderr.
struct SwitchLog {
  SwitchLog() { setenv("FAULTLINE_LOG", "warn,switch=info", 1); }
  ~SwitchLog() { unsetenv("FAULTLINE_LOG"); }
};

// The one run in db passed; every fault was made, reverted and its revert verified.
void CheckPassed(const std::string& db, size_t faults) {
  const reports::RunData data = OnlyRun(db);
  CHECK(data.run.status == reports::RunStatus::kPassed);
  REQUIRE(data.faults.size() == faults);
  for (const auto& f : data.faults) {
    INFO(f.fault_id << " " << f.kind << " on " << f.target);
    CHECK(f.effective_wall_ns.has_value());
    CHECK(f.reverted_wall_ns.has_value());
    CHECK(f.revert_verified == std::optional<bool>(true));
  }
  size_t mismatches = 0;
  for (const auto& s : data.samples) mismatches += s.mismatch ? 1 : 0;
  CHECK(mismatches == 0);
}

// The fault entries (*.json) of a journal directory ("?" when it cannot be read).
std::vector<std::string> Entries(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
  if (ec) out.push_back("?");
  return out;
}

bool CarrierOf(const std::string& netns, const std::string& ifname) {
  auto st = injectors::GetLink(netns, ifname);
  return st.ok() && st->carrier;
}

TEST_CASE(
    "faultline run on a local lab with switch_control: ssh - tor_port_down (rail4), a "
    "switch-side link_blackhole and tor_uplink_down (spine4) go over SSH with the SONiC "
    "preset - ftccl survives with exact results",
    "[.root][integration]") {
  TempDir dir("fl_swssh");
  SwitchLog log;
  {
    const std::string db = dir.path() + "/rail4.db";
    Faultline f({"run", "configs/scenarios/switch_ssh.yaml", "--db", db}, dir.path(), "rail4");
    auto rc = f.Wait(Deadline::After(240 * kNsPerSec));
    INFO(f.err());
    REQUIRE(rc.has_value());
    CHECK(*rc == 0);
    // Made by the SONiC commands, over SSH, and read back on the switch.
    CHECK(f.err().find("config interface shutdown Ethernet") != std::string::npos);
    CHECK(f.err().find("config interface startup Ethernet") != std::string::npos);
    CHECK(f.err().find("config acl add table") != std::string::npos);
    CHECK(f.err().find("config acl remove table") != std::string::npos);
    CheckPassed(db, 2);
  }
  {
    const std::string scenario = dir.path() + "/uplink.yaml";
    REQUIRE(
        WriteFileAtomic(scenario,
                        "name: uplink_ssh\nseed: 4\nlab: {topology: configs/labs/spine4_ssh.yaml}\n"
                        "job:\n  size: 256KiB\n  duration: 8s\n  warmup_iterations: 10\n"
                        "faults:\n  - {kind: tor_uplink_down, target: tor0p0.up0, at: 2s, "
                        "duration: 3s}\n"
                        "expectations:\n  survives: true\n  exact_correctness: true\n")
            .ok());
    const std::string db = dir.path() + "/spine4.db";
    Faultline f({"run", scenario, "--db", db}, dir.path(), "spine4");
    auto rc = f.Wait(Deadline::After(240 * kNsPerSec));
    INFO(f.err());
    REQUIRE(rc.has_value());
    CHECK(*rc == 0);
    CHECK(f.err().find("config interface shutdown Ethernet") != std::string::npos);
    CheckPassed(db, 1);
  }
}

InventoryFixtureOptions SwitchedInventory() {
  InventoryFixtureOptions o;
  o.hosts = 2;
  o.nics_per_host = 2;
  o.ranks_per_host = 1;
  o.extra_topology_yaml = "hosts_per_tor: 1\nspines: 1\nuplink: {rate: 2gbit}\n";
  o.switches = true;
  return o;
}

// An inventory with switches whose agents (the hosts' and the fabric's) run; Finish() stops
// them and checks that nothing is left: no difference in the lab's namespaces (the shim's ACL
// tables included), no entry in the fabric agent's journal.
struct Switched {
  std::unique_ptr<InventoryFixture> fx;
  HostSnapshot before;

  // edit: a change to the files before the agents start (they read the inventory then).
  explicit Switched(const std::function<void(InventoryFixture&)>& edit = {}) {
    auto f = InventoryFixture::Create(SwitchedInventory());
    REQUIRE(f.ok());
    fx = std::move(*f);
    if (edit) edit(*fx);
    before = fx->Snapshot();
    REQUIRE(fx->StartAgents().ok());
  }
  void Finish() {
    fx->StopAgents().IgnoreError();
    auto diff = Diff(before, fx->Snapshot(), {.tolerance = 0.01});
    INFO(FormatDiff(diff) + "\n" + fx->AgentLogText("fabric"));
    CHECK(diff.empty());
    CHECK(Entries(fx->journal_dir("fabric")).empty());
  }
  // `faultline run SCENARIO --lab INVENTORY ARGS...`, waited for.
  std::optional<int> Run(Faultline& f) { return f.Wait(Deadline::After(240 * kNsPerSec)); }
  std::vector<std::string> RunArgs(const std::string& scenario, const std::string& db,
                                   std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {"run", scenario, "--lab", fx->inventory_path(), "--db", db};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

std::string WriteScenario(const std::string& path, const std::string& name, const std::string& job,
                          const std::string& faults, bool exact = true) {
  REQUIRE(WriteFileAtomic(path, "name: " + name +
                                    "\nseed: 8\nlab: {topology: configs/labs/rail4.yaml}\n"
                                    "job:\n  size: 256KiB\n  warmup_iterations: 10\n" +
                                    job + "faults:\n" + faults +
                                    "expectations:\n  survives: true\n" +
                                    (exact ? "  exact_correctness: true\n" : ""))
              .ok());
  return path;
}

TEST_CASE(
    "faultline run --lab INVENTORY with switches: the fabric agent makes tor_port_down, "
    "tor_uplink_down and a switch-side link_blackhole over SSH - ftccl survives - nothing "
    "left",
    "[.root][integration]") {
  TempDir dir("fl_swinv");
  SwitchLog log;
  Switched sw;
  // h0.nic0's ToR port by its switch's name for it; h1.nic0's ToR by name (all its uplinks).
  std::string h0_tor, h0_port, h1_tor;
  for (const auto& l : sw.fx->lab().plan().links)
    if (l.kind == lab::LinkKind::kHost && l.a_if == "nic0") {
      if (l.a_node == "h0") {
        h0_tor = l.b_node;
        h0_port = sw.fx->SwitchPortOf(l.b_node, l.b_if);
      } else {
        h1_tor = l.b_node;
      }
    }
  REQUIRE(!h0_port.empty());
  const std::string scenario = WriteScenario(
      dir.path() + "/switched.yaml", "switched", "  duration: 13s\n  collective_timeout: 20s\n",
      "  - {kind: tor_port_down, target: h1.nic1, at: 1s, duration: 2s}\n"
      "  - {kind: link_blackhole, target: " +
          h0_tor + "." + h0_port + ", at: 5s, duration: 2s}\n" +
          "  - {kind: tor_uplink_down, target: " + h1_tor + ", at: 9s, duration: 2s}\n");
  const std::string db = dir.path() + "/inv.db";
  Faultline f(sw.RunArgs(scenario, db), dir.path());
  auto rc = sw.Run(f);
  INFO(f.err() + "\n" + sw.fx->AgentLogText("fabric"));
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CheckPassed(db, 3);
  const std::string fabric_log = sw.fx->AgentLogText("fabric");
  CHECK(fabric_log.find("config interface shutdown Ethernet") != std::string::npos);
  CHECK(fabric_log.find("config acl add table") != std::string::npos);
  sw.Finish();
}

TEST_CASE(
    "a switch the fabric agent cannot log in to ends the run naming the switch and the "
    "command - nothing is applied",
    "[.root][integration]") {
  TempDir dir("fl_swbad");
  // Every switch's key replaced by one the switches do not know.
  const std::string other = dir.path() + "/other_key";
  REQUIRE(std::system(("ssh-keygen -q -t ed25519 -N '' -f " + other).c_str()) == 0);
  Switched sw([&](InventoryFixture& fx) {
    auto text = ReadFile(fx.inventory_path());
    REQUIRE(text.ok());
    std::string inv = *text;
    const std::string key = fx.lab().Describe()->ssh_key;
    REQUIRE(!key.empty());
    for (auto at = inv.find(key); at != std::string::npos; at = inv.find(key, at + other.size()))
      inv.replace(at, key.size(), other);
    REQUIRE(WriteFileAtomic(fx.inventory_path(), inv).ok());
  });
  const std::string scenario =
      WriteScenario(dir.path() + "/bad.yaml", "badkey", "  duration: 6s\n",
                    "  - {kind: tor_port_down, target: h1.nic0, at: 1s, duration: 2s}\n", false);
  Faultline f(sw.RunArgs(scenario, dir.path() + "/bad.db"), dir.path());
  auto rc = sw.Run(f);
  INFO(f.err() + "\n" + sw.fx->AgentLogText("fabric"));
  REQUIRE(rc.has_value());
  CHECK(*rc != 0);
  CHECK(f.err().find("switch tor") != std::string::npos);
  CHECK(f.err().find("show interfaces status Ethernet") != std::string::npos);
  CHECK(f.err().find("Permission denied") != std::string::npos);
  sw.Finish();
}

// A scenario holding h1.nic0's ToR port down for 40 s.
std::string HoldScenario(const std::string& dir) {
  return WriteScenario(
      dir + "/hold.yaml", "hold_tor", "  duration: 60s\n  collective_timeout: 20s\n",
      "  - {kind: tor_port_down, target: h1.nic0, at: 200ms, duration: 40s}\n", false);
}

TEST_CASE(
    "kill -9 of the fabric agent holding a ToR port down: restarted, it brings the port "
    "back from its journal",
    "[.root][integration]") {
  TempDir dir("fl_swkill");
  Switched sw;
  const std::string ns = sw.fx->netns_of("h1");
  Faultline f(sw.RunArgs(HoldScenario(dir.path()), dir.path() + "/kill.db", {"--lease", "2"}),
              dir.path());
  REQUIRE(WaitUntil([&] { return !CarrierOf(ns, "nic0"); }, Deadline::After(120 * kNsPerSec),
                    20 * kNsPerMs));
  REQUIRE(sw.fx->KillAgent("fabric", SIGKILL).ok());
  // The restarted fabric agent finds the port in its journal and brings it up.
  CHECK(WaitUntil([&] { return CarrierOf(ns, "nic0"); }, Deadline::After(20 * kNsPerSec),
                  20 * kNsPerMs));
  CHECK(sw.fx->agent_restarts("fabric") >= 1);
  auto rc = sw.Run(f);
  INFO(f.err() + "\n" + sw.fx->AgentLogText("fabric"));
  REQUIRE(rc.has_value());
  CHECK(*rc == 3);  // the run lost its fabric agent
  CHECK(f.err().find("fabric") != std::string::npos);
  sw.Finish();
}

TEST_CASE(
    "kill -9 of the coordinator while the fabric agent holds a ToR port down: the fabric "
    "agent brings it back within the lease",
    "[.root][integration]") {
  TempDir dir("fl_swcoord");
  Switched sw;
  const std::string ns = sw.fx->netns_of("h1");
  const std::string db = dir.path() + "/coord.db";
  constexpr double kLeaseS = 2;
  Faultline f(sw.RunArgs(HoldScenario(dir.path()), db, {"--lease", "2"}), dir.path());
  REQUIRE(WaitUntil([&] { return !CarrierOf(ns, "nic0"); }, Deadline::After(120 * kNsPerSec),
                    20 * kNsPerMs));
  const Nanos killed = MonoNowNs();
  REQUIRE(kill(f.pid(), SIGKILL) == 0);
  REQUIRE(f.Wait(Deadline::After(10 * kNsPerSec)) == -SIGKILL);
  REQUIRE(WaitUntil([&] { return CarrierOf(ns, "nic0"); }, Deadline::After(30 * kNsPerSec),
                    20 * kNsPerMs));
  const double after_s = static_cast<double>(MonoNowNs() - killed) / 1e9;
  INFO("ToR port back " << after_s << " s after the coordinator was killed");
  // Within the lease, plus the SSH round trips of the revert and its read-back.
  CHECK(after_s < kLeaseS + 3);
  // The next command marks the dead coordinator's run aborted and removes its run directory.
  Faultline runs({"runs", "--db", db}, dir.path(), "runs");
  REQUIRE(runs.Wait(Deadline::After(60 * kNsPerSec)) == 0);
  CHECK(runs.err().find("marked aborted") != std::string::npos);
  // The killed coordinator's lock went with it; its claim file went with that command.
  CHECK_FALSE(std::filesystem::exists(injectors::StateDir() + "/claims/inventory-" + sw.fx->name() +
                                      ".claim"));
  sw.Finish();
}

}  // namespace
}  // namespace fl::testing
