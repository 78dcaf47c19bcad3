// The shipped real job end to end: PyTorch DDP (workloads/python/ddp_train.py, CPU, gloo) as a
// command job on a small local lab, through the shipped scenarios
// (configs/scenarios/torch_ddp_*.yaml) with `--lab` a 2-host lab. Root only; needs Debian's
// python3-torch for /usr/bin/python3, which scripts/test.sh's set-up installs as root.
#include <dirent.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/file_util.h"
#include "reports/store/store.h"
#include "tests/child_process.h"
#include "tests/harness/run_testing.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using testing::Faultline;
using testing::Netns;
using testing::OnlyRun;
using testing::TempDir;
using testing::WriteLab;

// Fails the test, saying what to do, when /usr/bin/python3 cannot import torch.
void RequireTorch(const std::string& dir) {
  testing::ChildProcess::Options o;
  o.out = dir + "/torch_check.txt";
  testing::ChildProcess py({"/usr/bin/python3", "-c", "import torch, torch.distributed"}, o);
  auto rc = py.Wait(Deadline::After(120 * kNsPerSec));
  if (rc != std::optional<int>(0))
    FAIL("/usr/bin/python3 cannot import torch (" + ReadFile(o.out).value_or("") +
         "): install Debian's python3-torch (FL_WITH_TORCH=1 scripts/setup.sh, which "
         "scripts/test.sh runs as root)");
}

// Processes of the run `run_id` still alive: those whose environment names its run directory
// (FAULTLINE_PROGRESS=RUN_DIR/ranks/rank-N.progress, RUN_DIR ending in the run id).
int ProcessesOfRun(const std::string& run_id) {
  return testing::ProcessesWhose("environ", {"FAULTLINE_PROGRESS=", run_id});
}

// The metrics of the run's (only) fault, by name.
std::map<std::string, double> FaultMetrics(const reports::RunData& data) {
  std::map<std::string, double> m;
  REQUIRE(data.faults.size() == 1);
  for (const auto& r : data.metrics)
    if (r.fault_id == data.faults[0].fault_id) m[r.name] = r.value;
  return m;
}

// Runs a shipped scenario on a 2-host lab (one rank per host) and loads its run.
reports::RunData RunShipped(const TempDir& dir, const std::string& scenario, int want_rc) {
  RequireTorch(dir.path());
  const std::string db = dir.path() + "/r.db";
  Faultline f({"run", scenario, "--lab", WriteLab(dir.path()), "--db", db}, dir.path());
  auto rc = f.Wait(Deadline::After(240 * kNsPerSec));
  INFO(f.err());
  INFO(f.out());
  REQUIRE(rc.has_value());
  CHECK(*rc == want_rc);
  reports::RunData data = OnlyRun(db);
  // Nothing left behind: the run's lab ("fl" + the run id's last 6 characters; other tests'
  // labs come and go meanwhile) and every rank of the job.
  const std::string lab = "fl-fl" + data.run.id.substr(data.run.id.size() - 6) + "-";
  for (const auto& ns : Netns()) CHECK(ns.rfind(lab, 0) != 0);
  CHECK(
      WaitUntil([&] { return ProcessesOfRun(data.run.id) == 0; }, Deadline::After(10 * kNsPerSec)));
  return data;
}

TEST_CASE(
    "torch DDP: the shipped NIC-flap scenario trains through the flap with samples from the "
    "progress helper, and its detection, first progress and recovery are measured",
    "[.root][integration]") {
  TempDir dir("fl_torch");
  reports::RunData data = RunShipped(dir, "configs/scenarios/torch_ddp_nic_flap.yaml", 0);
  CHECK(data.run.status == reports::RunStatus::kPassed);
  // Both ranks wrote progress lines: a step every few hundred ms for 14 s, 8.4 MB each.
  std::set<int> ranks;
  size_t verified = 0;
  for (const auto& s : data.samples) {
    ranks.insert(s.rank);
    CHECK(s.bytes == 8396800);
    CHECK_FALSE(s.mismatch);
    if (s.verified) ++verified;
  }
  CHECK(ranks == std::set<int>{0, 1});
  CHECK(data.samples.size() > 2 * 15);
  CHECK(verified > 0);  // every 5th step's ok=1 (parameters identical on both ranks)
  REQUIRE(data.faults.size() == 1);
  CHECK(data.faults[0].kind == "nic_port_flap");
  CHECK(data.faults[0].revert_verified == std::optional<bool>(true));
  auto m = FaultMetrics(data);
  std::string steps;  // rank 0's step times (ms), for a failure's message
  for (const auto& s : data.samples)
    if (s.rank == 0) steps += std::to_string((s.end_ns - s.start_ns) / kNsPerMs) + " ";
  INFO("rank 0's steps (ms): " << steps);
  INFO("fault effective at +" << (data.faults[0].effective_wall_ns.value_or(0) -
                                  data.samples.front().start_ns) /
                                     kNsPerMs
                              << " ms");
  for (const char* name : {"detection_latency_ms", "time_to_first_progress_ms", "recovery_ms"}) {
    INFO(name);
    REQUIRE(m.count(name));
    CHECK(m[name] >= 0);
  }
  // Gloo stalls for the flap (3 s) and resumes when TCP retransmits: first progress comes
  // after the link is back, detection (the first abnormal gap) well before; recovery (the
  // start of the first steady window under the fault) within the fault's 18 s window.
  CHECK(m["detection_latency_ms"] < 3000);
  CHECK(m["time_to_first_progress_ms"] >= 2500);
  CHECK(m["recovery_ms"] < 18000);
}

TEST_CASE("torch DDP: the shipped rank-kill scenario restarts the job and records the restart cost",
          "[.root][integration]") {
  TempDir dir("fl_torch");
  reports::RunData data = RunShipped(dir, "configs/scenarios/torch_ddp_rank_kill.yaml", 0);
  REQUIRE(data.faults.size() == 1);
  CHECK(data.faults[0].kind == "container_kill");
  bool restarted = false;
  for (const auto& e : data.events) restarted = restarted || e.kind == "job_restarted";
  CHECK(restarted);
  auto m = FaultMetrics(data);
  REQUIRE(m.count("restart_cost_ms"));
  // At least a new interpreter importing torch and a new process group.
  CHECK(m["restart_cost_ms"] > 500);
  // Samples from both ranks after the restart too (iterations numbered on past the kill).
  std::set<int> late;
  for (const auto& s : data.samples)
    if (s.end_ns > data.faults[0].effective_wall_ns.value_or(0)) late.insert(s.rank);
  CHECK(late == std::set<int>{0, 1});
}

}  // namespace
}  // namespace fl::harness
