// `faultline run|suite --lab INVENTORY` on "real hosts": the namespaces of a local lab that the
// coordinator knows only through an inventory file (tests/harness/site_fixture.h). Agents run
// as their systemd unit would start them (supervised, restarted when they exit) or are started
// by a real Slurm through srun (tests/harness/slurm_cluster.h). Every host-side fault acts on
// the hosts' own interfaces; ranks meet through the coordinator's TCP store (no shared
// directory); afterwards nothing is left (snapshots compared).
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "common/file_util.h"
#include "reports/store/store.h"
#include "tests/harness/run_testing.h"
#include "tests/harness/site_fixture.h"
#include "tests/harness/slurm_cluster.h"
#include "tests/test_util.h"

namespace fl::testing {
namespace {

// Every network fault a host can make, one after the other on the hosts' own NICs, on a
// scenario whose own lab is the local rail4 lab: --lab replaces it.
std::string NetworkScenario(const std::string& dir) {
  const std::string p = dir + "/net.yaml";
  REQUIRE(
      WriteFileAtomic(p,
                      "name: real_hosts_net\nseed: 11\nlab: {topology: configs/labs/rail4.yaml}\n"
                      "job:\n  size: 256KiB\n  duration: 15s\n  warmup_iterations: 10\n"
                      "  collective_timeout: 20s\n"
                      "faults:\n"
                      "  - {kind: nic_port_flap, target: h1.nic0, at: 500ms, duration: 1500ms}\n"
                      "  - {kind: link_blackhole, target: h0.nic1, at: 3s, duration: 2s}\n"
                      "  - {kind: packet_loss, target: h1.nic1, at: 6s, duration: 2s,\n"
                      "     params: {percent: 20}}\n"
                      "  - {kind: bandwidth_throttle, target: h0.nic0, at: 9s, duration: 2s,\n"
                      "     params: {rate: 100mbit}}\n"
                      "  - {kind: pfc_storm, target: h1.nic0, at: 12s, duration: 1500ms,\n"
                      "     params: {mode: frames, fps: 200}}\n"
                      "expectations:\n  survives: true\n  exact_correctness: true\n")
          .ok());
  return p;
}

// A rank's container killed; the job restarts from its last iteration.
std::string KillScenario(const std::string& dir) {
  const std::string p = dir + "/kill.yaml";
  REQUIRE(
      WriteFileAtomic(p,
                      "name: real_hosts_kill\nseed: 5\nlab: {topology: configs/labs/rail4.yaml}\n"
                      "job:\n  size: 256KiB\n  iterations: 150\n  warmup_iterations: 10\n"
                      "  failover: false\n  collective_timeout: 5s\n"
                      "faults:\n  - {kind: container_kill, target: h1.rank1, after_iteration: 60}\n"
                      "restart: {enabled: true, max_restarts: 1}\n"
                      "expectations:\n  exact_correctness: false\n")
          .ok());
  return p;
}

// The one run in db: passed, every fault reverted and the revert verified.
void CheckRun(const std::string& db, size_t faults, const std::string& event = "") {
  auto store = reports::Store::Open(db, {.create = false});
  REQUIRE(store.ok());
  auto runs = (*store)->ListRuns({});
  REQUIRE(runs.ok());
  REQUIRE(!runs->empty());
  auto data = (*store)->LoadRun(runs->front().id);
  REQUIRE(data.ok());
  CHECK(data->run.status == reports::RunStatus::kPassed);
  CHECK(!data->run.lab_text.empty());  // the inventory is stored with the run
  CHECK(data->run.lab_hash.size() == 64);
  REQUIRE(data->faults.size() == faults);
  if (!event.empty()) {
    bool seen = false;
    for (const auto& e : data->events) seen = seen || e.kind == event;
    CHECK(seen);
  }
  for (const auto& f : data->faults) {
    INFO(f.fault_id << " " << f.kind << " on " << f.target);
    CHECK(f.effective_wall_ns.has_value());
    if (f.kind != "container_kill") {
      CHECK(f.reverted_wall_ns.has_value());
      CHECK(f.revert_verified);
    }
  }
}

void RunBoth(InventoryFixture& fx, const std::string& dir, const std::string& tag) {
  // PFC frames from h1.nic0 arrive at its ToR port: the far side of the link.
  auto far = fx.SwitchSideOf("h1", "nic0");
  REQUIRE(far.ok());
  auto capture = PfcCapture::Start(far->netns, far->ifname);
  REQUIRE(capture.ok());
  const std::string db = dir + "/" + tag + "-net.db";
  Faultline net({"run", NetworkScenario(dir), "--lab", fx.inventory_path(), "--db", db, "--policy",
                 fx.policy_path()},
                dir, tag + "-net");
  auto rc = net.Wait(Deadline::After(240 * kNsPerSec));
  (*capture)->Stop();
  INFO(net.err() + "\n" + fx.AgentLogText("h0") + fx.AgentLogText("h1"));
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(net.err().find("TCP store") != std::string::npos);  // no shared directory
  CHECK((*capture)->count() > 0);
  CheckRun(db, 5);

  const std::string kdb = dir + "/" + tag + "-kill.db";
  Faultline kill({"run", KillScenario(dir), "--lab", fx.inventory_path(), "--db", kdb, "--policy",
                  fx.policy_path()},
                 dir, tag + "-kill");
  auto krc = kill.Wait(Deadline::After(240 * kNsPerSec));
  INFO(kill.err());
  REQUIRE(krc.has_value());
  CHECK(*krc == 0);
  CheckRun(kdb, 1, "job_restarted");  // the killed rank's job came back
}

TEST_CASE(
    "faultline run --lab INVENTORY: agents as their systemd unit starts them - every host-side "
    "fault on the hosts' own NICs - ranks meet through the TCP store - nothing left",
    "[.root][integration]") {
  TempDir dir("fl_real");
  auto fx = InventoryFixture::Create({});
  REQUIRE(fx.ok());
  const HostSnapshot before = (*fx)->Snapshot();
  REQUIRE((*fx)->StartAgents().ok());
  RunBoth(**fx, dir.path(), "inv");
  (*fx)->StopAgents().IgnoreError();
  auto diff = Diff(before, (*fx)->Snapshot(), {.tolerance = 0.01});
  INFO(FormatDiff(diff));
  CHECK(diff.empty());
}

TEST_CASE(
    "faultline run --lab INVENTORY with launcher: slurm - agents start as one srun step - every "
    "host-side fault - squeue empty and nothing left afterwards",
    "[.root][integration]") {
  TempDir dir("fl_real_slurm");
  InventoryFixtureOptions options;
  options.slurm_launcher = true;
  auto fx = InventoryFixture::Create(options);
  REQUIRE(fx.ok());
  auto slurm = SlurmCluster::Start((*fx)->lab());
  REQUIRE(slurm.ok());
  const HostSnapshot before = (*fx)->Snapshot();
  // The coordinator finds the cluster through SLURM_CONF, as `faultline run` inside a login
  // shell of the cluster would; it asks for its own allocation.
  setenv("SLURM_CONF", (*slurm)->conf().c_str(), 1);
  struct Unset {
    ~Unset() { unsetenv("SLURM_CONF"); }
  } unset;
  RunBoth(**fx, dir.path(), "slurm");
  CHECK((*slurm)->Jobs().empty());
  auto diff = Diff(before, (*fx)->Snapshot(), {.tolerance = 0.01});
  INFO(FormatDiff(diff) + "\n" + (*slurm)->Logs());
  CHECK(diff.empty());
}

TEST_CASE(
    "faultline run --lab INVENTORY: a second run on the lab while the first holds it is "
    "refused naming the first - the first goes on - no claim is left",
    "[.root][integration]") {
  TempDir dir("fl_real_claim");
  auto fx = InventoryFixture::Create({});
  REQUIRE(fx.ok());
  REQUIRE((*fx)->StartAgents().ok());
  const std::string scenario = dir.path() + "/long.yaml";
  REQUIRE(
      WriteFileAtomic(scenario,
                      "name: real_hosts_long\nseed: 2\nlab: {topology: configs/labs/rail4.yaml}\n"
                      "job:\n  size: 64KiB\n  duration: 6s\n  warmup_iterations: 5\n")
          .ok());
  Faultline first({"run", scenario, "--lab", (*fx)->inventory_path(), "--db", dir.path() + "/a.db",
                   "--policy", (*fx)->policy_path()},
                  dir.path(), "first");
  // The first run has its id once it holds the lab.
  std::string run_id;
  REQUIRE(WaitUntil(
      [&] {
        const std::string err = first.err();
        auto p = err.find("faultline run r");
        if (p == std::string::npos) return false;
        run_id = err.substr(p + 14, err.find(':', p) - p - 14);
        return true;
      },
      Deadline::After(60 * kNsPerSec), 20 * kNsPerMs));
  Faultline second({"run", scenario, "--lab", (*fx)->inventory_path(), "--db", dir.path() + "/b.db",
                    "--policy", (*fx)->policy_path()},
                   dir.path(), "second");
  auto rc2 = second.Wait(Deadline::After(60 * kNsPerSec));
  INFO(second.err());
  REQUIRE(rc2.has_value());
  CHECK(*rc2 == 3);
  CHECK(second.err().find("is in use by run " + run_id + " (pid ") != std::string::npos);
  auto rc1 = first.Wait(Deadline::After(240 * kNsPerSec));
  INFO(first.err());
  REQUIRE(rc1.has_value());
  CHECK(*rc1 == 0);
  // The refused run recorded nothing; the first's claim went with it.
  auto b = reports::Store::Open(dir.path() + "/b.db", {.create = false});
  if (b.ok()) CHECK((*b)->ListRuns({})->empty());
  auto inv = ReadFile((*fx)->inventory_path());
  REQUIRE(inv.ok());
  const std::string name = inv->substr(6, inv->find('\n') - 6);  // "name: X"
  CHECK_FALSE(std::filesystem::exists("/run/faultline/claims/inventory-" + name + ".claim"));
  (*fx)->StopAgents().IgnoreError();
}

TEST_CASE("faultline suite nightly.yaml --lab INVENTORY runs unchanged against real hosts",
          "[.root][integration]") {
  TempDir dir("fl_real_suite");
  auto fx = InventoryFixture::Create({});
  REQUIRE(fx.ok());
  REQUIRE((*fx)->StartAgents().ok());
  // The shipped nightly suite, trimmed to two of its scenarios.
  auto nightly = ReadFile(std::string(FL_SOURCE_DIR) + "/configs/suites/nightly.yaml");
  REQUIRE(nightly.ok());
  std::string text = *nightly;
  auto from = text.find("scenarios:\n");
  auto to = text.find("\n# ", from);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  text.replace(from, to - from,
               "scenarios:\n  - " + std::string(FL_SOURCE_DIR) +
                   "/configs/scenarios/nic_flap.yaml\n" + "  - " + FL_SOURCE_DIR +
                   "/configs/scenarios/blackhole.yaml");
  const std::string suite = dir.path() + "/nightly.yaml";
  REQUIRE(WriteFileAtomic(suite, text).ok());
  const std::string db = dir.path() + "/suite.db";
  Faultline f({"suite", suite, "--lab", (*fx)->inventory_path(), "--db", db, "--junit",
               dir.path() + "/nightly.xml"},
              dir.path(), "suite");
  auto rc = f.Wait(Deadline::After(600 * kNsPerSec));
  INFO(f.out() + "\n" + f.err());
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  auto store = reports::Store::Open(db, {.create = false});
  REQUIRE(store.ok());
  auto runs = (*store)->ListRuns({});
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 2);
  for (const auto& r : *runs) {
    CHECK(r.status == reports::RunStatus::kPassed);
    CHECK(r.lab_source == (*fx)->inventory_path());
    // The agents of real hosts sample their inventory's data NICs too (by the inventory's
    // NIC names), and only the hosts' agents do.
    auto data = (*store)->LoadRun(r.id);
    REQUIRE(data.ok());
    CHECK_FALSE(data->nics.empty());
    std::set<std::string> hosts;
    for (const auto& h : data->hosts) hosts.insert(h.name);
    for (const auto& n : data->nics) {
      INFO(n.host << "." << n.nic);
      CHECK(hosts.count(n.host) == 1);
      CHECK(n.host != "fabric");
      CHECK(n.nic.rfind("nic", 0) == 0);
    }
  }
  (*fx)->StopAgents().IgnoreError();
}

TEST_CASE(
    "kill -9 of an inventory agent holding a fault: restarted as its unit would be it reverts "
    "from its journal - the run ends within the lease plus a second with exit 3 naming the host",
    "[.root][integration]") {
  TempDir dir("fl_real_kill");
  auto fx = InventoryFixture::Create({});
  REQUIRE(fx.ok());
  const HostSnapshot before = (*fx)->Snapshot();
  REQUIRE((*fx)->StartAgents().ok());
  const std::string scenario = dir.path() + "/hold.yaml";
  REQUIRE(WriteFileAtomic(scenario,
                          "name: hold\nseed: 1\nlab: {topology: configs/labs/rail4.yaml}\n"
                          "job:\n  size: 256KiB\n  duration: 60s\n  warmup_iterations: 10\n"
                          "  collective_timeout: 20s\n"
                          "faults:\n  - {kind: nic_port_flap, target: h1.nic0, at: 200ms, "
                          "duration: 40s}\n"
                          "expectations:\n  survives: true\n")
              .ok());
  const std::string db = dir.path() + "/kill.db";
  constexpr double kLeaseS = 2;
  Faultline f({"run", scenario, "--lab", (*fx)->inventory_path(), "--db", db, "--lease", "2"},
              dir.path());
  const std::string ns = (*fx)->netns_of("h1");
  auto nic_down = [&] {
    return std::system(("ip -n " + ns + " -o link show nic0 | grep -q 'state DOWN'").c_str()) == 0;
  };
  REQUIRE(WaitUntil(nic_down, Deadline::After(120 * kNsPerSec), 20 * kNsPerMs));
  const Nanos killed_wall = WallNowNs();
  REQUIRE((*fx)->KillAgent("h1", SIGKILL).ok());
  auto rc = f.Wait(Deadline::After(120 * kNsPerSec));
  INFO(f.err() + "\n" + (*fx)->AgentLogText("h1"));
  REQUIRE(rc.has_value());
  CHECK(*rc == 3);
  CHECK(f.err().find("h1") != std::string::npos);
  // The restarted agent reverted the flap from its journal.
  CHECK((*fx)->agent_restarts("h1") >= 1);
  CHECK(WaitUntil([&] { return !nic_down(); }, Deadline::After(10 * kNsPerSec), 20 * kNsPerMs));
  auto store = reports::Store::Open(db, {.create = false});
  REQUIRE(store.ok());
  auto runs = (*store)->ListRuns({});
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  CHECK(runs->front().status == reports::RunStatus::kError);
  auto data = (*store)->LoadRun(runs->front().id);
  REQUIRE(data.ok());
  std::optional<Nanos> lost_wall;
  for (const auto& e : data->events)
    if (e.kind == "agent_lost" && e.detail_json.find("h1") != std::string::npos)
      lost_wall = e.wall_ns;
  REQUIRE(lost_wall.has_value());
  const double after_s = static_cast<double>(*lost_wall - killed_wall) / 1e9;
  INFO("host declared lost " << after_s << " s after the kill");
  CHECK(after_s < kLeaseS + 1);
  // The restarted agent also removed the ranks its killed predecessor left.
  (*fx)->StopAgents().IgnoreError();
  auto diff = Diff(before, (*fx)->Snapshot(), {.tolerance = 0.01});
  INFO(FormatDiff(diff));
  CHECK(diff.empty());
}

}  // namespace
}  // namespace fl::testing
