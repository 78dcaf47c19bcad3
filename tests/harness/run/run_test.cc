// `faultline run` end to end on a real (small) local lab, as the user runs it: the binary, its
// agents, workers in containers, real faults, a real SQLite file. Root only.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <set>

#include "common/file_util.h"
#include "harness/control/auth.h"
#include "harness/control/certs.h"
#include "harness/lab/local_lab.h"
#include "injectors/journal.h"
#include "injectors/sys.h"
#include "reports/store/store.h"
#include "tests/child_process.h"
#include "tests/harness/run_testing.h"
#include "tests/pg_server.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using testing::Faultline;
using testing::Netns;
using testing::TempDir;
using testing::WriteLab;

// Pids of processes whose command line is "faultline-agent ... --lab <lab> ..." (and
// "--host <host>" when host is given).
std::vector<int> AgentPids(const std::string& lab, const std::string& host = "") {
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    auto cmd = ReadFile(std::string("/proc/") + e->d_name + "/cmdline");
    if (!cmd.ok()) continue;
    std::vector<std::string> args;
    for (size_t i = 0; i < cmd->size();) {
      size_t z = cmd->find('\0', i);
      if (z == std::string::npos) z = cmd->size();
      args.push_back(cmd->substr(i, z - i));
      i = z + 1;
    }
    bool agent = !args.empty() && args[0].size() >= 15 &&
                 args[0].rfind("faultline-agent") == args[0].size() - 15;
    bool lab_match = false, host_match = host.empty();
    for (size_t i = 0; agent && i + 1 < args.size(); ++i) {
      if (args[i] == "--lab" && args[i + 1] == lab) lab_match = true;
      if (args[i] == "--host" && args[i + 1] == host) host_match = true;
    }
    if (agent && lab_match && host_match) pids.push_back(std::atoi(e->d_name));
  }
  closedir(d);
  return pids;
}
int AgentsOfLab(const std::string& lab) { return static_cast<int>(AgentPids(lab).size()); }

// The job runs for job_duration; the fault starts 500 ms into the steady state.
std::string WriteScenario(const std::string& dir, const std::string& lab,
                          const std::string& job_duration, const std::string& fault_yaml) {
  std::string p = dir + "/scenario.yaml";
  REQUIRE(WriteFileAtomic(p, "name: test_run\nseed: 3\nlab: {topology: " + lab +
                                 "}\n"
                                 "job:\n  size: 256KiB\n  duration: " +
                                 job_duration +
                                 "\n  warmup_iterations: 10\n  collective_timeout: 20s\n"
                                 "faults:\n" +
                                 fault_yaml +
                                 "expectations:\n  survives: true\n  exact_correctness: true\n")
              .ok());
  return p;
}

TEST_CASE("faultline run: a malformed scenario exits 2 with its location and creates nothing",
          "[.root][serial][integration]") {
  TempDir dir("fl_run");
  std::string lab = WriteLab(dir.path());
  std::string bad = dir.path() + "/bad.yaml";
  REQUIRE(WriteFileAtomic(bad,
                          "name: bad\nlab: {topology: " + lab +
                              "}\njob: {iterations: 10}\n"
                              "faults:\n  - kind: nic_port_flap\n    target: h0.nic7\n    at: 1s\n")
              .ok());
  auto before = Netns();
  Faultline f({"run", bad, "--db", dir.path() + "/r.db"}, dir.path());
  REQUIRE(f.Wait(Deadline::After(60 * kNsPerSec)) == 2);
  CHECK(f.err().find(bad + ":5:5: target 'h0.nic7' is not in the lab") != std::string::npos);
  CHECK(Netns() == before);
  CHECK(access((dir.path() + "/r.db").c_str(), F_OK) != 0);  // not even the results file
}

// The fault here is one ftccl rides through without a path failure (a throttled NIC), so
// that this test judges the harness, not the CCL: ftccl's own failover has its tests in
// tests/ccl_under_test.
TEST_CASE("faultline run: a throttled NIC on ftccl is survived, recorded and cleaned up",
          "[.root][serial][integration]") {
  TempDir dir("fl_run");
  std::string scenario =
      WriteScenario(dir.path(), WriteLab(dir.path()), "4s",
                    "  - kind: bandwidth_throttle\n    target: h0.nic0\n    at: 500ms\n"
                    "    duration: 1500ms\n    params: {rate: 200mbit}\n");
  auto before = Netns();
  Faultline f({"run", scenario, "--db", dir.path() + "/r.db"}, dir.path());
  auto rc = f.Wait(Deadline::After(300 * kNsPerSec));
  INFO(f.err());
  INFO(f.out());
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(Netns() == before);
  auto store = reports::Store::Open(dir.path() + "/r.db", {.create = false});
  REQUIRE(store.ok());
  auto runs = (*store)->ListRuns({});
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  auto data = (*store)->LoadRun(runs->front().id);
  REQUIRE(data.ok());
  CHECK(data->run.status == reports::RunStatus::kPassed);
  // both ranks reported iterations, fault window included
  std::set<int> ranks;
  for (const auto& smp : data->samples) ranks.insert(smp.rank);
  CHECK(ranks == std::set<int>{0, 1, 2, 3});
  CHECK(data->samples.size() > 40);
  REQUIRE(data->faults.size() == 1);
  CHECK(data->faults[0].effective_wall_ns.has_value());
  CHECK(data->faults[0].revert_verified == true);
  CHECK(data->hosts.size() == 3);  // h0, h1 and the fabric agent
  std::set<std::string> kinds;
  for (const auto& e : data->events) kinds.insert(e.kind);
  CHECK(kinds.count("steady_state"));
  CHECK(kinds.count("rank_exit"));
  CHECK(data->faults[0].kind == "bandwidth_throttle");
  CHECK(*data->faults[0].effective_wall_ns >= *data->faults[0].scheduled_wall_ns);
  CHECK(*data->faults[0].reverted_wall_ns > *data->faults[0].effective_wall_ns);
  CHECK_FALSE(data->metrics.empty());
  CHECK_FALSE(data->verdicts.empty());
  CHECK(f.out().find("PASS") != std::string::npos);
}

TEST_CASE("faultline run: two coordinators at once write their runs into one PostgreSQL store",
          "[.root][serial][integration]") {
  TempDir dir("fl_run");
  std::string error;
  auto server = testing::PgServer::Start(&error);
  INFO(error);
  REQUIRE(server);
  const std::string pg = server->Uri();
  std::string scenario =
      WriteScenario(dir.path(), WriteLab(dir.path()), "3s",
                    "  - kind: bandwidth_throttle\n    target: h0.nic0\n    at: 500ms\n"
                    "    duration: 1s\n    params: {rate: 200mbit}\n");
  auto before = Netns();
  // Two clusters' coordinators, started together on an empty database (both migrate it).
  Faultline a({"run", scenario, "--db", pg, "--tag", "cluster=A"}, dir.path());
  Faultline b({"run", scenario, "--db", pg, "--tag", "cluster=B"}, dir.path());
  auto rc_a = a.Wait(Deadline::After(300 * kNsPerSec));
  auto rc_b = b.Wait(Deadline::After(300 * kNsPerSec));
  INFO(a.err() << "\n---\n" << b.err() << "\n---\n" << server->Log());
  REQUIRE(rc_a.has_value());
  REQUIRE(rc_b.has_value());
  CHECK(*rc_a == 0);
  CHECK(*rc_b == 0);
  CHECK(Netns() == before);
  auto store = reports::Store::Open(pg, {.create = false});
  REQUIRE(store.ok());
  auto runs = (*store)->ListRuns({});
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 2);
  std::set<std::string> clusters;
  for (const auto& r : *runs) {
    INFO(r.id);
    clusters.insert(r.tags.at("cluster"));
    auto data = (*store)->LoadRun(r.id);
    REQUIRE(data.ok());
    CHECK(data->run.status == reports::RunStatus::kPassed);
    CHECK(data->samples.size() > 40);
    REQUIRE(data->faults.size() == 1);
    CHECK(data->faults[0].revert_verified == true);
    CHECK(data->hosts.size() == 3);
    CHECK_FALSE(data->metrics.empty());
    CHECK_FALSE(data->verdicts.empty());
    // Every sample is of this run's own ranks.
    for (const auto& smp : data->samples) CHECK(smp.run_id == r.id);
  }
  CHECK(clusters == std::set<std::string>{"A", "B"});
  CHECK(runs->front().id != runs->back().id);
}

// What a person reads of the main job (scripts/main.sh runs this scenario): a short account,
// with a line for each thing that happened to the fault, and nothing the ranks logged (their
// logs are RUN_DIR/ranks/rank-N.log; ftccl warns once per path retry).
TEST_CASE(
    "faultline run: the default scenario's terminal output is at most 40 lines, tells of its "
    "fault and holds no line logged by a rank",
    "[.root][serial][integration]") {
  TempDir dir("fl_run");
  auto before = Netns();
  Faultline f({"run", "configs/scenarios/nic_flap.yaml", "--db", dir.path() + "/r.db"}, dir.path());
  auto rc = f.Wait(Deadline::After(300 * kNsPerSec));
  const std::string all = f.err() + f.out();
  INFO(all);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(Netns() == before);
  std::vector<std::string> lines;
  for (size_t at = 0; at < all.size();) {
    size_t nl = all.find('\n', at);
    if (nl == std::string::npos) nl = all.size();
    lines.push_back(all.substr(at, nl - at));
    at = nl + 1;
  }
  CHECK(lines.size() <= 40);
  auto has = [&](const std::string& needle) {
    for (const auto& l : lines)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  };
  CHECK(has("[fault] f0 nic_port_flap on h1.nic0: injected"));
  CHECK(has("[fault] f0 detected by rank "));
  CHECK(has("[fault] f0 reverted after "));
  CHECK(has("recovery "));  // the summary's line for the fault
  for (const auto& l : lines) {
    INFO(l);
    CHECK(l.find("rank=") == std::string::npos);  // a rank's log context (common/log.cc)
    CHECK(l.find(" W ftccl ") == std::string::npos);
  }
  // -q: the summary only.
  Faultline q({"run", "configs/scenarios/nic_flap.yaml", "--db", dir.path() + "/q.db", "-q"},
              dir.path(), "quiet");
  rc = q.Wait(Deadline::After(300 * kNsPerSec));
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(q.err().empty());
  CHECK(q.out().find("verdicts: 4 passed, 0 failed") != std::string::npos);
  CHECK(q.out().find("recovery ") != std::string::npos);
}

// Waits until the run's first fault is in place (its effective time is in the results file).
bool WaitFaultApplied(const std::string& db, std::string* run_id) {
  return WaitUntil(
      [&] {
        auto store = reports::Store::Open(db, {.create = false});
        if (!store.ok()) return false;
        auto runs = (*store)->ListRuns({});
        if (!runs.ok() || runs->empty()) return false;
        *run_id = runs->front().id;
        auto data = (*store)->LoadRun(*run_id);
        return data.ok() && !data->faults.empty() && data->faults[0].effective_wall_ns.has_value();
      },
      Deadline::After(180 * kNsPerSec), 100 * kNsPerMs);
}

// A run holding h0.nic0 down (a 60 s flap from 500 ms on) under the given --lease, once its
// fault is in place: what the tests of a lost coordinator or agent start from.
struct HeldFault {
  std::string db;
  Faultline f;
  std::string run_id, lab, h0;
  bool applied = false;
  HeldFault(const std::string& dir, const std::string& lease)
      : db(dir + "/r.db"),
        f({"run",
           WriteScenario(
               dir, WriteLab(dir), "120s",
               "  - kind: nic_port_flap\n    target: h0.nic0\n    at: 500ms\n    duration: 60s\n"),
           "--db", db, "--lease", lease},
          dir) {
    applied = WaitFaultApplied(db, &run_id) && run_id.size() > 6;
    if (!applied) return;
    lab = "fl" + run_id.substr(run_id.size() - 6);
    h0 = "fl-" + lab + "-h0";
  }
  bool LinkUp() const {
    return std::system(("ip -n " + h0 + " -o link show nic0 | grep -q 'state UP'").c_str()) == 0;
  }
};

// Directories of rank containers of a lab under the cgroup2 tree ("...rank...").
bool NoRankCgroups(const std::string& lab) {
  auto cgroot = injectors::Cgroup2Root();
  if (!cgroot.ok()) return false;
  DIR* d = opendir((*cgroot + "/faultline/fl-" + lab).c_str());
  if (!d) return true;
  bool any = false;
  while (dirent* e = readdir(d))
    any = any || std::string(e->d_name).find("rank") != std::string::npos;
  closedir(d);
  return !any;
}

// Issue 29: two labs at once left an empty faultline cgroup behind. Two runs on two labs of
// this machine, started together, each with its own fault; whichever ends first, nothing of
// either is left: no namespace, no cgroup of either lab, no faultline cgroup folder.
TEST_CASE("faultline run: two runs at once on two labs pass and leave nothing behind",
          "[.root][serial][integration]") {
  auto before = Netns();
  TempDir a("fl_run_a"), b("fl_run_b");
  std::string sa = WriteScenario(
      a.path(), WriteLab(a.path()), "3s",
      "  - kind: nic_port_flap\n    target: h0.nic0\n    at: 500ms\n    duration: 800ms\n");
  std::string sb = WriteScenario(
      b.path(), WriteLab(b.path()), "5s",
      "  - kind: nic_port_flap\n    target: h1.nic0\n    at: 700ms\n    duration: 800ms\n");
  Faultline fa({"run", sa, "--db", a.path() + "/r.db"}, a.path());
  Faultline fb({"run", sb, "--db", b.path() + "/r.db"}, b.path());
  auto ra = fa.Wait(Deadline::After(180 * kNsPerSec));
  auto rb = fb.Wait(Deadline::After(180 * kNsPerSec));
  INFO(fa.err() << "\n---\n" << fb.err());
  REQUIRE(ra.has_value());
  REQUIRE(rb.has_value());
  CHECK(*ra == 0);
  CHECK(*rb == 0);
  CHECK(Netns() == before);
  auto cgroot = injectors::Cgroup2Root();
  REQUIRE(cgroot.ok());
  // No other lab of this machine is up while root tests run (they run one at a time).
  CHECK(access((*cgroot + "/faultline").c_str(), F_OK) != 0);
}

TEST_CASE(
    "faultline run: SIGKILL of the coordinator leaves nothing applied, the next command marks the "
    "run aborted",
    "[.root][serial][integration]") {
  TempDir dir("fl_run");
  auto before = Netns();
  HeldFault held(dir.path(), "1");
  INFO(held.f.err());
  REQUIRE(held.applied);
  Faultline& f = held.f;
  const std::string &db = held.db, &run_id = held.run_id, &lab = held.lab;
  auto link_up = [&] { return held.LinkUp(); };
  CHECK_FALSE(link_up());  // the flap holds nic0 down

  kill(f.pid(), SIGKILL);
  REQUIRE(f.Wait(Deadline::After(10 * kNsPerSec)) == -SIGKILL);
  // Within the lease (1 s) plus scheduling slack, the agent brings nic0 back and stops ranks.
  CHECK(WaitUntil(link_up, Deadline::After(15 * kNsPerSec), 50 * kNsPerMs));
  CHECK(WaitUntil([&] { return NoRankCgroups(lab); }, Deadline::After(15 * kNsPerSec),
                  50 * kNsPerMs));

  // The next faultline command marks the run aborted and removes its lab.
  Faultline runs({"runs", "--db", db}, dir.path());
  REQUIRE(runs.Wait(Deadline::After(120 * kNsPerSec)) == 0);
  CHECK(runs.err().find("marked aborted") != std::string::npos);
  CHECK(runs.out().find("aborted") != std::string::npos);
  // ... and removes its run directory, which the killed coordinator could not.
  CHECK(access((injectors::StateDir() + "/runs/" + run_id).c_str(), F_OK) != 0);
  CHECK(WaitUntil([&] { return Netns() == before; }, Deadline::After(30 * kNsPerSec)));
  // Agents exit on their own once their lease lapsed and they have reverted.
  CHECK(WaitUntil([&] { return AgentsOfLab(lab) == 0; }, Deadline::After(20 * kNsPerSec)));
}

// Whether a rank container of host `host` of the lab has a process left.
bool HostRanksRunning(const std::string& lab, const std::string& host) {
  auto cgroot = injectors::Cgroup2Root();
  if (!cgroot.ok()) return false;
  const std::string dir = *cgroot + "/faultline/fl-" + lab;
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  bool any = false;
  while (dirent* e = readdir(d))
    if (std::string(e->d_name).rfind(host + ".rank", 0) == 0)
      any = any || !ReadFile(dir + "/" + e->d_name + "/cgroup.procs").value_or("").empty();
  closedir(d);
  return any;
}

TEST_CASE(
    "faultline run: the coordinator cut off from an agent holding a fault (the control path "
    "blackholed, nothing killed): the agent reverts and ends its ranks within the lease plus "
    "1 s - the run ends with exit 3 naming the host",
    "[.root][serial][integration]") {
  TempDir dir("fl_run");
  auto before = Netns();
  HeldFault held(dir.path(), "2");
  INFO(held.f.err());
  REQUIRE(held.applied);
  Faultline& f = held.f;
  const std::string &lab = held.lab, &h0 = held.h0;
  auto link_up = [&] { return held.LinkUp(); };
  CHECK_FALSE(link_up());
  REQUIRE(HostRanksRunning(lab, "h0"));
  // The control connection of h0's agent, dropped both ways in h0's namespace.
  const std::string err = f.err();
  auto at = err.find("dial in at ");
  REQUIRE(at != std::string::npos);
  const std::string ctl = err.substr(at + 11, err.find_first_of(" \n", at + 11) - at - 11);
  const std::string addr = ctl.substr(0, ctl.find(':')), port = ctl.substr(ctl.find(':') + 1);
  const std::string rules = dir.path() + "/cut.nft";
  REQUIRE(WriteFileAtomic(rules,
                          "table ip flcut {\n  chain out { type filter hook output priority "
                          "0; ip daddr " +
                              addr + " tcp dport " + port +
                              " drop; }\n  chain in { type filter hook input priority 0; "
                              "ip saddr " +
                              addr + " tcp sport " + port + " drop; }\n}\n")
              .ok());
  Nanos cut = MonoNowNs();
  REQUIRE(std::system(("ip netns exec " + h0 + " nft -f " + rules).c_str()) == 0);
  // The lease is 2 s: the fault reverted and h0's ranks gone within the lease plus 1 s, by
  // the agent itself (the coordinator cannot reach it).
  CHECK(WaitUntil(link_up, Deadline::After(4 * kNsPerSec), 10 * kNsPerMs));
  const Nanos nic_back = MonoNowNs() - cut;
  CHECK(WaitUntil([&] { return !HostRanksRunning(lab, "h0"); }, Deadline::After(4 * kNsPerSec),
                  10 * kNsPerMs));
  const Nanos ranks_gone = MonoNowNs() - cut;
  std::printf("cut off: nic0 up after %lld ms, h0's ranks gone after %lld ms (lease 2 s)\n",
              static_cast<long long>(nic_back / kNsPerMs),
              static_cast<long long>(ranks_gone / kNsPerMs));
  CHECK(nic_back <= 3 * kNsPerSec);
  CHECK(ranks_gone <= 3 * kNsPerSec);
  auto rc = f.Wait(Deadline::After(60 * kNsPerSec));
  REQUIRE(rc.has_value());
  CHECK(*rc == 3);
  CHECK(f.err().find("host h0") != std::string::npos);
  CHECK(WaitUntil([&] { return Netns() == before; }, Deadline::After(30 * kNsPerSec)));
  CHECK(WaitUntil([&] { return AgentsOfLab(lab) == 0; }, Deadline::After(20 * kNsPerSec)));
  CHECK(NoRankCgroups(lab));
}

TEST_CASE(
    "faultline run: SIGKILL of the agent holding a fault: the coordinator reverts it from the "
    "journal within the lease and ends the run with exit 3 naming the host",
    "[.root][serial][integration]") {
  TempDir dir("fl_run");
  auto before = Netns();
  HeldFault held(dir.path(), "2");
  INFO(held.f.err());
  REQUIRE(held.applied);
  Faultline& f = held.f;
  const std::string &db = held.db, &run_id = held.run_id, &lab = held.lab;
  auto link_up = [&] { return held.LinkUp(); };
  CHECK_FALSE(link_up());
  std::vector<int> agent = AgentPids(lab, "h0");
  REQUIRE(agent.size() == 1);

  Nanos killed = MonoNowNs();
  REQUIRE(kill(agent[0], SIGKILL) == 0);
  // The lease is 2 s: the fault must be gone within the lease plus one second, not at the
  // lab's teardown.
  CHECK(WaitUntil(link_up, Deadline::After(3 * kNsPerSec), 10 * kNsPerMs));
  Nanos back = MonoNowNs() - killed;
  CHECK(back <= 3 * kNsPerSec);
  auto rc = f.Wait(Deadline::After(60 * kNsPerSec));
  REQUIRE(rc.has_value());
  CHECK(*rc == 3);
  CHECK(f.err().find("host h0") != std::string::npos);
  CHECK(Netns() == before);
  CHECK(AgentsOfLab(lab) == 0);
  auto store = reports::Store::Open(db, {.create = false});
  REQUIRE(store.ok());
  auto data = (*store)->LoadRun(run_id);
  REQUIRE(data.ok());
  REQUIRE(data->faults.size() == 1);
  CHECK(data->faults[0].revert_verified == std::optional<bool>(true));
  bool lost_event = false;
  for (const auto& e : data->events) lost_event = lost_event || e.kind == "agent_lost";
  CHECK(lost_event);
}

TEST_CASE("faultline run: Ctrl-C while a fault is applied reverts, tears down and exits 130",
          "[.root][serial][integration]") {
  TempDir dir("fl_run");
  std::string scenario = WriteScenario(
      dir.path(), WriteLab(dir.path()), "120s",
      "  - kind: nic_port_flap\n    target: h0.nic0\n    at: 500ms\n    duration: 60s\n");
  auto before = Netns();
  std::string db = dir.path() + "/r.db";
  Faultline f({"run", scenario, "--db", db}, dir.path());
  std::string run_id;
  bool applied = WaitFaultApplied(db, &run_id);
  INFO(f.err());
  REQUIRE(applied);
  const std::string lab = "fl" + run_id.substr(run_id.size() - 6);
  REQUIRE(Netns().size() > before.size());

  kill(f.pid(), SIGINT);
  auto rc = f.Wait(Deadline::After(60 * kNsPerSec));
  REQUIRE(rc.has_value());
  CHECK(*rc == 130);
  // Everything was undone by the coordinator itself, before it exited: no lab namespace, no
  // agent, no rank container; the run is recorded as aborted with the fault reverted.
  CHECK(Netns() == before);
  CHECK(AgentsOfLab(lab) == 0);
  CHECK(NoRankCgroups(lab));
  auto store = reports::Store::Open(db, {.create = false});
  REQUIRE(store.ok());
  auto data = (*store)->LoadRun(run_id);
  REQUIRE(data.ok());
  CHECK(data->run.status == reports::RunStatus::kAborted);
  REQUIRE(data->faults.size() == 1);
  CHECK(data->faults[0].reverted_wall_ns.has_value());
}

// A fault whose revert cannot succeed (its link is deleted under it while it is applied):
// the run must not pass. It fails with exit 1, its faults_reverted verdict failed and naming
// the fault's target, and the lab is still torn down.
TEST_CASE("faultline run: a fault whose revert fails fails the run, naming its target",
          "[.root][serial][integration]") {
  TempDir dir("fl_run");
  std::string scenario = WriteScenario(
      dir.path(), WriteLab(dir.path()), "8s",
      "  - kind: nic_port_flap\n    target: h0.nic0\n    at: 500ms\n    duration: 3s\n");
  auto before = Netns();
  std::string db = dir.path() + "/r.db";
  Faultline f({"run", scenario, "--db", db}, dir.path());
  std::string run_id;
  bool applied = WaitFaultApplied(db, &run_id);
  INFO(f.err());
  REQUIRE(applied);
  const std::string lab = "fl" + run_id.substr(run_id.size() - 6);
  const std::string ns = "fl-" + lab + "-h0";
  REQUIRE(std::system(("ip -n " + ns + " link del nic0").c_str()) == 0);

  auto rc = f.Wait(Deadline::After(120 * kNsPerSec));
  REQUIRE(rc.has_value());
  INFO(f.err());
  CHECK(*rc == 1);
  CHECK(Netns() == before);
  CHECK(AgentsOfLab(lab) == 0);
  auto store = reports::Store::Open(db, {.create = false});
  REQUIRE(store.ok());
  auto data = (*store)->LoadRun(run_id);
  REQUIRE(data.ok());
  CHECK(data->run.status == reports::RunStatus::kFailed);
  REQUIRE(data->faults.size() == 1);
  CHECK(data->faults[0].revert_verified == std::optional<bool>(false));
  bool found = false;
  for (const auto& v : data->verdicts) {
    if (v.expectation != "faults_reverted") continue;
    found = true;
    CHECK_FALSE(v.passed);
    CHECK(v.message.find("h0.nic0") != std::string::npos);
  }
  CHECK(found);
  CHECK(f.out().find("faults_reverted") != std::string::npos);
}

// Connects to a Unix stream socket and writes text; false when either fails.
bool WriteToUnixSocket(const std::string& path, const std::string& text) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) {
    close(fd);
    return false;
  }
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  for (size_t off = 0; ok && off < text.size();) {
    ssize_t n = write(fd, text.data() + off, text.size() - off);
    ok = n > 0;
    off += ok ? static_cast<size_t>(n) : 0;
  }
  close(fd);
  return ok;
}

// Regression: this one line on h0's telemetry socket once ended the coordinator (a type_error
// from reading "code" as an int), so the leases lapsed and the run stayed `running` with its
// lab. Now the agent drops it (rank_exit is the agent's own kind, and "x" is not a code), says
// so in a telemetry_dropped event, and the run ends as it would have without it.
TEST_CASE(
    "faultline run: a malformed line on an agent's telemetry socket is dropped, the run "
    "finishes",
    "[.root][integration]") {
  TempDir dir("fl_run");
  std::string scenario =
      WriteScenario(dir.path(), WriteLab(dir.path()), "5s",
                    "  - kind: bandwidth_throttle\n    target: h0.nic0\n    at: 500ms\n"
                    "    duration: 1s\n    params: {rate: 500mbit}\n");
  const std::string db = dir.path() + "/r.db";
  Faultline f({"run", scenario, "--db", db}, dir.path());
  // Once ranks report samples, the agents' sockets are in use: inject there.
  std::string run_id;
  bool running = WaitUntil(
      [&] {
        auto store = reports::Store::Open(db, {.create = false});
        if (!store.ok()) return false;
        auto runs = (*store)->ListRuns({});
        if (!runs.ok() || runs->empty()) return false;
        run_id = runs->front().id;
        auto data = (*store)->LoadRun(run_id);
        return data.ok() && !data->samples.empty();
      },
      Deadline::After(180 * kNsPerSec), 100 * kNsPerMs);
  INFO(f.err());
  REQUIRE(running);
  const std::string sock = injectors::StateDir() + "/runs/" + run_id + "/h0.sock";
  CHECK(WriteToUnixSocket(
      sock, "{\"t\":\"worker\",\"rank\":0,\"kind\":\"rank_exit\",\"detail\":{\"code\":\"x\"}}\n"));
  // More of the same kind on a second connection: a string rank, a non-object, garbage.
  CHECK(WriteToUnixSocket(sock,
                          "{\"t\":\"sample\",\"rank\":\"0\",\"it\":1,\"start\":1,\"end\":2}\n"
                          "[1,2,3]\n\xff\xfe not json\n"));

  auto rc = f.Wait(Deadline::After(300 * kNsPerSec));
  INFO(f.err());
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  // This run's lab is gone (other tests' labs may come and go meanwhile).
  const std::string lab_prefix = "fl-fl" + run_id.substr(run_id.size() - 6) + "-";
  for (const auto& ns : Netns()) CHECK(ns.rfind(lab_prefix, 0) != 0);
  auto store = reports::Store::Open(db, {.create = false});
  REQUIRE(store.ok());
  auto data = (*store)->LoadRun(run_id);
  REQUIRE(data.ok());
  CHECK(data->run.status == reports::RunStatus::kPassed);
  // The agent reported what it dropped, once per connection, naming its socket.
  int dropped_events = 0;
  for (const auto& e : data->events) {
    if (e.kind != "telemetry_dropped") continue;
    ++dropped_events;
    CHECK(e.detail_json.find("h0.sock") != std::string::npos);
  }
  CHECK(dropped_events >= 2);
  // And no forged exit: rank 0's only rank_exit is the real one, with code 0.
  int rank0_exits = 0;
  for (const auto& e : data->events)
    if (e.kind == "rank_exit" && e.rank == 0) {
      ++rank0_exits;
      CHECK(e.detail_json.find("\"code\":0") != std::string::npos);
    }
  CHECK(rank0_exits == 1);
}

// Bad numbers are bad input: exit 2 before any lab, run row or results file exists.
TEST_CASE("faultline run: a bad --lease or a 4e9-firing fault exits 2 and creates nothing",
          "[.root][serial][integration]") {
  TempDir dir("fl_run");
  std::string lab = WriteLab(dir.path());
  const std::string db = dir.path() + "/r.db";
  auto before = Netns();
  auto no_trace = [&] {
    CHECK(Netns() == before);
    CHECK(access(db.c_str(), F_OK) != 0);  // no results file, so no run row
  };
  std::string ok = WriteScenario(dir.path(), lab, "2s",
                                 "  - kind: nic_port_flap\n    target: h0.nic0\n    at: 500ms\n"
                                 "    duration: 1s\n");
  for (const char* lease : {"0", "-1", "600", "nan"}) {
    Faultline f({"run", ok, "--db", db, "--lease", lease}, dir.path(),
                std::string("lease") + lease);
    INFO(lease << ": " << f.err());
    REQUIRE(f.Wait(Deadline::After(60 * kNsPerSec)) == 2);
    CHECK(f.err().find("--lease (seconds) must be between 0.1 and 300") != std::string::npos);
    no_trace();
  }
  // The regression: a periodic fault of 4e9 firings aborted with bad_alloc, even dry.
  std::string huge = dir.path() + "/huge.yaml";
  REQUIRE(WriteFileAtomic(huge, "name: huge\nlab: {topology: " + lab +
                                    "}\njob: {iterations: 10}\nfaults:\n"
                                    "  - kind: nic_port_flap\n    target: h0.nic0\n"
                                    "    every: 1s\n    count: 4000000000\n    duration: 10ms\n")
              .ok());
  for (bool dry : {true, false}) {
    std::vector<std::string> args = {"run", huge, "--db", db};
    if (dry) args.push_back("--dry-run");
    Faultline f(args, dir.path(), dry ? "dry" : "wet");
    INFO(f.err());
    REQUIRE(f.Wait(Deadline::After(60 * kNsPerSec)) == 2);
    CHECK(f.err().find(huge + ":8:12: count must be between 1 and 10000, not 4000000000") !=
          std::string::npos);
    no_trace();
  }
}

// Issue 29: the loaders read endless input (/dev/zero, /dev/urandom) until memory ran out, and
// a FIFO with no writer forever. Every file from outside is read through ReadInputFile now.
TEST_CASE(
    "faultline: a device, a FIFO or an endless file as scenario, topology or lab exits 2 "
    "at once, naming it",
    "[.root][integration]") {
  TempDir dir("fl_run");
  const std::string db = dir.path() + "/r.db";
  const std::string fifo = dir.path() + "/scenario.fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  auto refused = [&](const std::vector<std::string>& args, const std::string& named,
                     const std::string& tag) {
    Faultline f(args, dir.path(), tag);
    auto rc = f.Wait(Deadline::After(30 * kNsPerSec));
    INFO(tag << ": " << f.err());
    REQUIRE(rc.has_value());  // it returned: nothing waited on the endless input
    CHECK(*rc == 2);
    CHECK(f.err().find(named) != std::string::npos);
    CHECK(f.err().find("not a regular file") != std::string::npos);
  };
  refused({"run", "/dev/zero", "--dry-run", "--db", db}, "/dev/zero", "run_zero");
  refused({"run", fifo, "--dry-run", "--db", db}, fifo, "run_fifo");
  refused({"lab", "up", "/dev/zero", "--name", "flzero"}, "/dev/zero", "lab_zero");
  for (const char* topo : {"/dev/zero", "/dev/urandom"}) {
    const std::string sc = dir.path() + "/endless_topology.yaml";
    REQUIRE(WriteFileAtomic(sc, std::string("name: endless\nlab: {topology: ") + topo +
                                    "}\njob: {iterations: 10}\n")
                .ok());
    refused({"run", sc, "--dry-run", "--db", db}, topo, std::string("topo") + (topo + 5));
  }
  CHECK(access(db.c_str(), F_OK) != 0);  // no results file
  unlink(fifo.c_str());
}

TEST_CASE(
    "faultline run: SIGTERM and SIGHUP while a fault is applied revert and tear down as "
    "Ctrl-C does",
    "[.root][serial][integration]") {
  for (int sig : {SIGTERM, SIGHUP}) {
    TempDir dir("fl_run");
    std::string scenario = WriteScenario(
        dir.path(), WriteLab(dir.path()), "120s",
        "  - kind: nic_port_flap\n    target: h0.nic0\n    at: 500ms\n    duration: 60s\n");
    auto before = Netns();
    std::string db = dir.path() + "/r.db";
    Faultline f({"run", scenario, "--db", db}, dir.path());
    std::string run_id;
    bool applied = WaitFaultApplied(db, &run_id);
    INFO(strsignal(sig) << "\n" << f.err());
    REQUIRE(applied);
    const std::string lab = "fl" + run_id.substr(run_id.size() - 6);
    REQUIRE(Netns().size() > before.size());

    kill(f.pid(), sig);
    auto rc = f.Wait(Deadline::After(60 * kNsPerSec));
    REQUIRE(rc.has_value());
    CHECK(*rc == 130);  // as for Ctrl-C
    // The lab is gone (with it the flapped NIC and any nft table inside its namespaces), no
    // agent or rank is left, and the run is aborted with its fault reverted.
    CHECK(Netns() == before);
    CHECK(AgentsOfLab(lab) == 0);
    CHECK(NoRankCgroups(lab));
    CHECK(std::system(("nft list tables 2>/dev/null | grep -q " + lab).c_str()) != 0);
    auto store = reports::Store::Open(db, {.create = false});
    REQUIRE(store.ok());
    auto data = (*store)->LoadRun(run_id);
    REQUIRE(data.ok());
    CHECK(data->run.status == reports::RunStatus::kAborted);
    REQUIRE(data->faults.size() == 1);
    CHECK(data->faults[0].reverted_wall_ns.has_value());
    CHECK(data->faults[0].revert_verified == true);
  }
}

TEST_CASE("faultline run: Ctrl-C during a restart delay is honoured at once",
          "[.root][serial][integration]") {
  TempDir dir("fl_run");
  std::string scenario = dir.path() + "/restart.yaml";
  REQUIRE(WriteFileAtomic(scenario,
                          "name: restart_delay\nseed: 5\nlab: {topology: " + WriteLab(dir.path()) +
                              "}\njob:\n  ccl: ftccl\n  failover: false\n"
                              "  size: 256KiB\n  iterations: 100000\n"
                              "  warmup_iterations: 10\n  collective_timeout: 5s\n"
                              "faults:\n  - kind: container_kill\n    target: h0.rank0\n"
                              "    at: 500ms\nrestart:\n  max_restarts: 1\n"
                              "  delay: 1h\nexpectations:\n  exact_correctness: false\n")
              .ok());
  auto before = Netns();
  std::string db = dir.path() + "/r.db";
  Faultline f({"run", scenario, "--db", db}, dir.path());
  // The job failed and the coordinator is in its (hour-long) restart delay.
  std::string run_id;
  bool failed = WaitUntil(
      [&] {
        auto store = reports::Store::Open(db, {.create = false});
        if (!store.ok()) return false;
        auto runs = (*store)->ListRuns({});
        if (!runs.ok() || runs->empty()) return false;
        run_id = runs->front().id;
        auto data = (*store)->LoadRun(run_id);
        if (!data.ok()) return false;
        for (const auto& e : data->events)
          if (e.kind == "job_failed") return true;
        return false;
      },
      Deadline::After(180 * kNsPerSec), 100 * kNsPerMs);
  INFO(f.err());
  REQUIRE(failed);
  kill(f.pid(), SIGINT);
  const Nanos sent = MonoNowNs();
  auto rc = f.Wait(Deadline::After(60 * kNsPerSec));
  REQUIRE(rc.has_value());
  CHECK(*rc == 130);
  CHECK(MonoNowNs() - sent < 50 * kNsPerSec);  // not after the hour
  CHECK(Netns() == before);
  auto store = reports::Store::Open(db, {.create = false});
  REQUIRE(store.ok());
  auto data = (*store)->LoadRun(run_id);
  REQUIRE(data.ok());
  CHECK(data->run.status == reports::RunStatus::kAborted);
}

testing::ChildProcess::Options AgentOptions(const std::string& log, const std::string& netns) {
  testing::ChildProcess::Options o;
  o.out = log;
  o.netns = netns;
  return o;
}

TEST_CASE(
    "faultline run: an inventory lab — agents started by hand on its hosts dial in, a NIC flap "
    "is survived and reverted",
    "[.root][integration]") {
  // The "real hosts" are the namespaces of a local lab this test builds; the coordinator knows
  // them only through the inventory file, and starts no agent itself.
  TempDir dir("fl_inv");
  auto topo = lab::LoadTopology(WriteLab(dir.path()));
  REQUIRE(topo.ok());
  const std::string lab_name = "inv" + std::to_string(getpid() % 100000);
  auto lab = lab::LocalLab::Create(*topo, lab_name);
  REQUIRE(lab.ok());
  struct LabGuard {
    lab::LocalLab* l;
    ~LabGuard() { l->Teardown().IgnoreError(); }
  } guard{lab->get()};
  REQUIRE((*lab)->Provision().ok());
  const lab::LabPlan& plan = (*lab)->plan();
  const std::string mgmt = plan.root_mgmt_addr.substr(0, plan.root_mgmt_addr.find('/'));
  const int port = testing::FreeTcpPort(mgmt);
  REQUIRE(port > 0);
  const std::string token = dir.path() + "/token";
  REQUIRE(CreateTokenFile(token).ok());
  // Mutual TLS is the default on an inventory: the lab's certificates in tls/ beside the token.
  REQUIRE(InitLabCa(dir.path() + "/tls").ok());
  IssueOptions coord;
  coord.role = CertRole::kCoordinator;
  coord.extra_names = {mgmt};
  REQUIRE(IssueCertificate(dir.path() + "/tls", "coord", coord).ok());
  for (const char* h : {"h0", "h1"}) REQUIRE(IssueCertificate(dir.path() + "/tls", h, {}).ok());
  std::string inv = "name: t" + std::to_string(getpid() % 100000) +
                    "\ncoordinator: {listen: " + mgmt + ":" + std::to_string(port) +
                    ", token_file: " + token + "}\nagent_wait: 60s\nhosts:\n";
  for (const char* h : {"h0", "h1"}) {
    inv += std::string("  - name: ") + h + "\n    ranks: 2\n    nics:\n";
    for (const auto& l : plan.links)
      if (l.kind == lab::LinkKind::kHost && l.a_node == h)
        inv += "      - {name: " + l.a_if + ", ifname: " + l.a_if +
               ", address: " + l.a_addr.substr(0, l.a_addr.find('/')) + "}\n";
  }
  const std::string inv_path = dir.path() + "/inventory.yaml";
  REQUIRE(WriteFileAtomic(inv_path, inv).ok());
  const std::string scenario = dir.path() + "/scenario.yaml";
  REQUIRE(WriteFileAtomic(scenario,
                          "name: inv_flap\nseed: 5\nlab: {inventory: " + inv_path +
                              "}\njob:\n  size: 256KiB\n  duration: 6s\n  warmup_iterations: 10\n"
                              "  collective_timeout: 20s\nfaults:\n"
                              "  - kind: nic_port_flap\n    target: h1.nic0\n    at: 500ms\n"
                              "    duration: 2s\nexpectations:\n  survives: true\n")
              .ok());

  // Agents of real hosts refuse every fault without a policy that lists the kinds.
  const std::string policy = dir.path() + "/policy.yaml";
  REQUIRE(WriteFileAtomic(policy, "allow_kinds: [nic_port_flap]\nmax_fault_duration: 1m\n").ok());
  std::string db = dir.path() + "/r.db";
  Faultline f({"run", scenario, "--db", db}, dir.path());
  // The agents come up after the coordinator listens; they retry until it does.
  std::vector<std::unique_ptr<testing::ChildProcess>> agents;
  for (const char* h : {"h0", "h1"})
    agents.push_back(std::make_unique<testing::ChildProcess>(
        std::vector<std::string>{std::string(FL_BUILD_DIR) + "/bin/faultline-agent",
                                 "--coordinator", mgmt + ":" + std::to_string(port), "--token-file",
                                 token, "--host", h, "--inventory", inv_path, "--connect-timeout",
                                 "60", "--policy", policy},
        AgentOptions(dir.path() + "/agent-" + h + ".log", (*lab)->NetnsOf(h))));
  auto rc = f.Wait(Deadline::After(240 * kNsPerSec));
  INFO(f.err() + "\n" + ReadFile(dir.path() + "/agent-h0.log").value_or("") +
       ReadFile(dir.path() + "/agent-h1.log").value_or(""));
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(f.out().find("survives") != std::string::npos);
  // The coordinator released its agents: they exit on their own.
  for (auto& a : agents) CHECK(a->Wait(Deadline::After(30 * kNsPerSec)).value_or(-1) == 0);
  // nic0 of h1 is up again, and no rank cgroup is left on either host.
  CHECK(std::system(("ip -n " + (*lab)->NetnsOf("h1") + " -o link show nic0 | grep -q 'state UP'")
                        .c_str()) == 0);
  auto cgroot = injectors::Cgroup2Root();
  REQUIRE(cgroot.ok());
  struct stat st;
  for (const char* h : {"h0", "h1"})
    CHECK(stat((injectors::StateDir() + "/agent-" + h).c_str(), &st) != 0);  // socket dirs gone
  for (const char* h : {"h0", "h1"})
    CHECK(stat((*cgroot + "/faultline/inv-t" + std::to_string(getpid() % 100000) + "-" + h).c_str(),
               &st) != 0);
  auto store = reports::Store::Open(db, {.create = false});
  REQUIRE(store.ok());
  auto runs = (*store)->ListRuns({});
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  auto data = (*store)->LoadRun(runs->front().id);
  REQUIRE(data.ok());
  CHECK(data->run.status == reports::RunStatus::kPassed);
  CHECK(data->hosts.size() == 2);
  REQUIRE(data->faults.size() == 1);
  CHECK(data->faults[0].target == "h1.nic0");
  CHECK(data->faults[0].reverted_wall_ns.has_value());
  CHECK(data->samples.size() > 40);
}

}  // namespace
}  // namespace fl::harness
