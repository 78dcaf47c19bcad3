// Command jobs end to end on a real local lab (docs/scenarios.md, "Command jobs"): a command
// runs once per rank in the ranks' containers with the rank environment, its progress comes
// from outside (the line protocol here), its output is kept per rank, and nothing of it
// survives the run. Root only.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/file_util.h"
#include "injectors/journal.h"
#include "tests/harness/run_testing.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using testing::Faultline;
using testing::Netns;
using testing::OnlyRun;
using testing::TempDir;
using testing::WriteLab;

// Processes whose command line mentions `needle` (the test's own script path).
int ProcessesWith(const std::string& needle) {
  return testing::ProcessesWhose("cmdline", {needle});
}

// The namespaces of the lab this run made ("[provision] lab flXXXXXX" in its stderr) still
// present; other tests' labs come and go concurrently and are not ours to judge.
int NamespacesLeft(const std::string& err) {
  auto p = err.find("[provision] lab ");
  if (p == std::string::npos) return -1;
  const std::string lab = err.substr(p + 16, err.find(' ', p + 16) - p - 16);
  int n = 0;
  for (const auto& ns : Netns()) n += ns.rfind("fl-" + lab + "-", 0) == 0;
  return n;
}

// A training loop as a framework would write it: the rank environment printed, one progress
// line per step (verified), forever (the runner ends it at the job's duration).
constexpr const char* kLoop = R"(import os, sys, time
env = {k: os.environ.get(k, '') for k in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE',
                                          'MASTER_ADDR', 'MASTER_PORT', 'FAULTLINE_PROGRESS',
                                          'STEP_NOTE')}
print(' '.join(k + '=' + v for k, v in sorted(env.items())), flush=True)
print('stderr of rank', env['RANK'], file=sys.stderr, flush=True)
with open(os.environ['FAULTLINE_PROGRESS'], 'a', buffering=1) as p:
    i = 0
    while True:
        time.sleep(0.02)
        p.write('it=%d bytes=4096 ok=1\n' % i)
        i += 1
)";

TEST_CASE(
    "command job: a Python loop with the line protocol runs once per rank, its samples "
    "arrive, its output is kept per rank, and nothing survives",
    "[.root][integration]") {
  TempDir dir("fl_cmdjob");
  const std::string script = dir.path() + "/loop.py";
  REQUIRE(WriteFileAtomic(script, kLoop).ok());
  const std::string scenario = dir.path() + "/cmd.yaml";
  REQUIRE(WriteFileAtomic(scenario,
                          "name: cmd_lines\nseed: 3\nlab: {topology: " + WriteLab(dir.path()) +
                              "}\njob:\n  command: [/usr/bin/python3, " + script +
                              "]\n  env: {STEP_NOTE: hello, MASTER_PORT: \"29611\"}\n"
                              "  duration: 4s\n  warmup_iterations: 5\n"
                              "  progress: {format: lines}\n"
                              "expectations:\n  survives: true\n")
              .ok());
  Faultline f({"run", scenario, "--db", dir.path() + "/r.db"}, dir.path());
  // While it runs: the run's directory holds every rank's output, with the environment it
  // got (the run directory goes with the run; the stderr tail stays in the results).
  std::string run_id;
  REQUIRE(WaitUntil(
      [&] {
        const std::string err = f.err();
        auto p = err.find("faultline run r");
        if (p == std::string::npos) return false;
        auto e = err.find(':', p);
        if (e == std::string::npos) return false;
        run_id = err.substr(p + 14, e - p - 14);
        return true;
      },
      Deadline::After(60 * kNsPerSec), 10 * kNsPerMs));
  const std::string run_dir = injectors::StateDir() + "/runs/" + run_id;
  std::vector<std::string> outs(4), errs(4);
  const bool logs = WaitUntil(
      [&] {
        for (int r = 0; r < 4; ++r) {
          const std::string base = run_dir + "/ranks/rank-" + std::to_string(r);
          outs[r] = ReadFile(base + ".stdout").value_or("");
          errs[r] = ReadFile(base + ".stderr").value_or("");
          if (outs[r].find("STEP_NOTE") == std::string::npos ||
              errs[r].find("stderr of rank") == std::string::npos)
            return false;
        }
        return true;
      },
      Deadline::After(60 * kNsPerSec), 20 * kNsPerMs);
  auto rc = f.Wait(Deadline::After(120 * kNsPerSec));
  INFO(f.err());
  INFO(f.out());
  CHECK(logs);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(NamespacesLeft(f.err()) == 0);
  CHECK(ProcessesWith(script) == 0);
  CHECK_FALSE(std::filesystem::exists(run_dir));

  reports::RunData data = OnlyRun(dir.path() + "/r.db");
  CHECK(data.run.id == run_id);
  CHECK(data.run.status == reports::RunStatus::kPassed);
  std::set<int> ranks;
  size_t verified = 0;
  for (const auto& s : data.samples) {
    ranks.insert(s.rank);
    verified += s.verified;
    CHECK(s.end_ns >= s.start_ns);
  }
  CHECK(ranks == std::set<int>{0, 1, 2, 3});
  CHECK(data.samples.size() > 100);  // ~3 s at 50 steps/s on 4 ranks
  CHECK(verified == data.samples.size());
  int exits = 0;
  for (const auto& e : data.events)
    if (e.kind == "command_exit") {
      ++exits;
      CHECK(e.detail_json.find("\"stopped_by_runner\":true") != std::string::npos);
      CHECK(e.detail_json.find("stderr of rank") != std::string::npos);  // the tail, kept
    }
  CHECK(exits == 4);

  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r << ": " << outs[r]);
    CHECK(outs[r].find("RANK=" + std::to_string(r) + " ") != std::string::npos);
    CHECK(outs[r].find("WORLD_SIZE=4") != std::string::npos);
    CHECK(outs[r].find("LOCAL_RANK=" + std::to_string(r % 2)) != std::string::npos);
    CHECK(outs[r].find("LOCAL_WORLD_SIZE=2") != std::string::npos);
    CHECK(outs[r].find("MASTER_ADDR=198.18.") != std::string::npos);  // rank 0's first NIC
    CHECK(outs[r].find("MASTER_PORT=29611") != std::string::npos);    // the job's env wins
    CHECK(outs[r].find("STEP_NOTE=hello") != std::string::npos);
    CHECK(outs[r].find("FAULTLINE_PROGRESS=" + run_dir + "/ranks/rank-" + std::to_string(r) +
                       ".progress") != std::string::npos);
  }
}

TEST_CASE(
    "command job: a killed rank's container restarts the command job and the restart "
    "cost is recorded",
    "[.root][integration]") {
  TempDir dir("fl_cmdjob");
  const std::string script = dir.path() + "/loop.py";
  REQUIRE(WriteFileAtomic(script, kLoop).ok());
  const std::string scenario = dir.path() + "/restart.yaml";
  REQUIRE(WriteFileAtomic(scenario,
                          "name: cmd_restart\nseed: 3\nlab: {topology: " + WriteLab(dir.path()) +
                              "}\njob:\n  command: [/usr/bin/python3, " + script +
                              "]\n  duration: 3s\n  warmup_iterations: 5\n"
                              "faults:\n  - kind: container_kill\n"
                              "    target_class: container\n    after_iteration: 30\n"
                              "restart: {enabled: true, max_restarts: 1}\n"
                              "expectations:\n  survives: true\n")
              .ok());
  Faultline f({"run", scenario, "--db", dir.path() + "/r.db"}, dir.path());
  auto rc = f.Wait(Deadline::After(120 * kNsPerSec));
  INFO(f.err());
  INFO(f.out());
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(NamespacesLeft(f.err()) == 0);
  CHECK(ProcessesWith(script) == 0);
  reports::RunData data = OnlyRun(dir.path() + "/r.db");
  int restarted = 0;
  for (const auto& e : data.events) restarted += e.kind == "job_restarted";
  CHECK(restarted == 1);
  std::optional<double> cost;
  for (const auto& m : data.metrics)
    if (m.fault_id == std::optional<std::string>("f0") && m.name == "restart_cost_ms")
      cost = m.value;
  REQUIRE(cost);
  CHECK(*cost > 0);
  CHECK(*cost < 30000);
  // The relaunched command numbers its progress from where the job resumed.
  int64_t high = -1;
  for (const auto& smp : data.samples) high = std::max(high, smp.iteration);
  CHECK(high > 40);
}

// The figures of one fault from `faultline run --json`.
struct FaultFigures {
  std::optional<double> detection_ms, first_progress_ms, recovery_ms;
};

FaultFigures RunOnce(const std::string& dir, const std::string& scenario, const std::string& tag) {
  Faultline f({"run", scenario, "--db", dir + "/" + tag + ".db", "--json"}, dir, tag);
  auto rc = f.Wait(Deadline::After(120 * kNsPerSec));
  INFO(tag << " stderr:\n" << f.err());
  INFO(tag << " stdout:\n" << f.out());
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(NamespacesLeft(f.err()) == 0);
  const std::string out = f.out();
  auto j = nlohmann::json::parse(out.substr(std::min(out.size(), out.find('{'))), nullptr, false);
  REQUIRE(j.is_object());
  REQUIRE(j["faults"].size() == 1);
  auto get = [&](const char* k) -> std::optional<double> {
    const auto& v = j["faults"][0][k];
    return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
  };
  return {get("detection_ms"), get("first_progress_ms"), get("recovery_ms")};
}

std::optional<double> Median(std::vector<std::optional<double>> v) {
  std::vector<double> x;
  for (auto& e : v)
    if (e) x.push_back(*e);
  if (x.size() * 2 <= v.size()) return std::nullopt;  // absent in most runs
  std::sort(x.begin(), x.end());
  return x.size() % 2 ? x[x.size() / 2] : (x[x.size() / 2 - 1] + x[x.size() / 2]) / 2;
}

// The acceptance test of command jobs: ftccl-perf as a black box (nccl-tests output, -N 0)
// measures a NIC flap as faultline-worker does from inside, within 20% (or 20 ms). 1 MiB
// AllReduces (about 8 ms each at the lab's 1 Gbit/s): a black box's iteration ends when its
// row is read, so with sub-millisecond iterations (64 KiB) the read jitter alone spread the
// per-iteration rate by more than the 10% a recovery window asks (docs/metrics.md), and the
// black box never "recovered".
TEST_CASE(
    "command job: ftccl-perf as a black box under a NIC flap measures detection, first "
    "progress and recovery like faultline-worker",
    "[.root][integration]") {
  TempDir dir("fl_cmdjob");
  const std::string lab = WriteLab(dir.path());
  const std::string common_tail =
      "  duration: 3s\n  warmup_iterations: 20\n"
      "faults:\n  - kind: nic_port_flap\n    target: h1.nic0\n    at: 700ms\n"
      "    duration: 1200ms\n"
      "expectations:\n  survives: true\n";
  const std::string worker = dir.path() + "/worker.yaml";
  REQUIRE(
      WriteFileAtomic(worker, "name: flap_worker\nseed: 5\nlab: {topology: " + lab +
                                  "}\njob:\n  workload: allreduce_loop\n  ccl: ftccl\n"
                                  "  size: 1MiB\n  check_every: 100\n  collective_timeout: 20s\n" +
                                  common_tail)
          .ok());
  const std::string perf = std::string(FL_BUILD_DIR) + "/bin/ftccl-perf";
  const std::string command = dir.path() + "/command.yaml";
  REQUIRE(WriteFileAtomic(command, "name: flap_command\nseed: 5\nlab: {topology: " + lab +
                                       "}\njob:\n  command: [" + perf +
                                       ", -b, 1MiB, -e, 1MiB, -n, \"1\", -w, \"0\", -N, "
                                       "\"0\", -c, \"0\"]\n"
                                       "  ccl: ftccl\n  progress: {format: nccl-tests}\n" +
                                       common_tail)
              .ok());
  std::vector<FaultFigures> w, c;
  // The issue asks for 3 runs each; 5 keep the medians steady: a failover that catches a
  // segment in flight on the downed NIC waits for TCP's 200 ms minimum RTO, so single
  // recoveries are bimodal (~10-60 ms or ~250 ms) for both jobs.
  for (int i = 0; i < 5; ++i) {
    w.push_back(RunOnce(dir.path(), worker, "worker" + std::to_string(i)));
    c.push_back(RunOnce(dir.path(), command, "command" + std::to_string(i)));
  }
  auto column = [](const std::vector<FaultFigures>& v, auto member) {
    std::vector<std::optional<double>> out;
    for (const auto& f : v) out.push_back(f.*member);
    return out;
  };
  // Detection and first progress agree within 20 ms (or 20%). Recovery is compared more
  // loosely, within 100 ms (or 50%): it is the start of the first settled window of
  // iterations, and single recoveries of either job spread over 2-250 ms (above); one suite
  // run (2026-12-03) drew worker recoveries of 123 2 68 61 19 ms against the command's
  // 5 10 4 9 6, a 55 ms gap of medians with nothing wrong, and the next two runs alone
  // agreed within 8 ms. What this test guards is that the black box's recovery is measured
  // at all and on the same scale, not a figure (that is docs/performance.md's).
  struct Metric {
    const char* name;
    std::optional<double> FaultFigures::*member;
    double abs_ms, rel;
  };
  for (const Metric& m : {Metric{"detection_ms", &FaultFigures::detection_ms, 20, 0.2},
                          Metric{"first_progress_ms", &FaultFigures::first_progress_ms, 20, 0.2},
                          Metric{"recovery_ms", &FaultFigures::recovery_ms, 100, 0.5}}) {
    auto show = [](const std::vector<std::optional<double>>& v) {
      std::string s;
      for (auto& e : v) s += (e ? std::to_string(static_cast<int>(std::lround(*e))) : "-") + " ";
      return s;
    };
    const auto wv = column(w, m.member), cv = column(c, m.member);
    const auto wm = Median(wv), cm = Median(cv);
    std::printf("%-18s worker [%s] median %s   command [%s] median %s\n", m.name, show(wv).c_str(),
                wm ? std::to_string(*wm).c_str() : "-", show(cv).c_str(),
                cm ? std::to_string(*cm).c_str() : "-");
    INFO(m.name << ": worker " << show(wv) << "command " << show(cv));
    REQUIRE(wm);
    REQUIRE(cm);
    CHECK(std::fabs(*cm - *wm) <= std::max(m.abs_ms, m.rel * *wm));
  }
}

// A command that waits for the test: rank 2 (host h1) says when the job is in steady state,
// then fails once the test has frozen h0's agent.
constexpr const char* kStuck = R"(import os, sys, time
rank = int(os.environ['RANK'])
with open(os.environ['FAULTLINE_PROGRESS'], 'a', buffering=1) as p:
    i = 0
    while True:
        time.sleep(0.02)
        p.write('it=%d bytes=4096 ok=1\n' % i)
        i += 1
        if rank == 2 and i == 20:
            open(sys.argv[1] + '/ready', 'w').close()
        if rank == 2 and i > 20 and os.path.exists(sys.argv[1] + '/go'):
            sys.exit(1)
)";

// The pids of processes whose command line holds every one of needles (NUL-separated words).
std::vector<int> PidsWhose(const std::vector<std::string>& needles) {
  std::vector<int> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    auto text = ReadFile(std::string("/proc/") + e->d_name + "/cmdline");
    if (!text.ok()) continue;
    bool all = true;
    for (const auto& n : needles) all = all && text->find(n) != std::string::npos;
    if (all) out.push_back(std::atoi(e->d_name));
  }
  closedir(d);
  return out;
}

TEST_CASE(
    "command job: a host whose ranks will not stop gets no second job - the run fails naming "
    "the host",
    "[.root][integration]") {
  // h0's agent is frozen (SIGSTOP) while its ranks run: when rank 2 on h1 fails, h0 cannot
  // stop its ranks, so the restart would land a second job on top of the first.
  TempDir dir("fl_cmdjob");
  const std::string script = dir.path() + "/stuck.py";
  REQUIRE(WriteFileAtomic(script, kStuck).ok());
  const std::string scenario = dir.path() + "/stuck.yaml";
  REQUIRE(WriteFileAtomic(
              scenario, "name: cmd_stuck\nseed: 3\nlab: {topology: " + WriteLab(dir.path()) +
                            "}\njob:\n  command: [/usr/bin/python3, " + script + ", " + dir.path() +
                            "]\n  duration: 60s\n  warmup_iterations: 5\n"
                            "restart: {enabled: true, max_restarts: 1}\n")
              .ok());
  Faultline f({"run", scenario, "--db", dir.path() + "/r.db"}, dir.path());
  REQUIRE(WaitUntil([&] { return std::filesystem::exists(dir.path() + "/ready"); },
                    Deadline::After(60 * kNsPerSec), 20 * kNsPerMs));
  auto p = f.err().find("[provision] lab ");
  REQUIRE(p != std::string::npos);
  const std::string lab = f.err().substr(p + 16, f.err().find(' ', p + 16) - p - 16);
  // The agent this run's lab started for h0 (argv: ... --host h0 --lab LAB ...).
  const std::vector<int> agent = PidsWhose(
      {"faultline-agent", std::string("--host\0h0\0", 10), std::string("--lab\0", 6) + lab});
  REQUIRE(agent.size() == 1);
  REQUIRE(kill(agent[0], SIGSTOP) == 0);
  REQUIRE(WriteFileAtomic(dir.path() + "/go", "").ok());
  auto rc = f.Wait(Deadline::After(120 * kNsPerSec));
  kill(agent[0], SIGCONT);  // if the run's clean-up left it (it ends it by pid)
  INFO(f.err());
  REQUIRE(rc.has_value());
  CHECK(*rc == 3);
  CHECK(f.err().find("no restart: the job's ranks did not stop on h0") != std::string::npos);
  CHECK(f.err().find("did not stop on h1") == std::string::npos);  // h1's stopped
  reports::RunData data = OnlyRun(dir.path() + "/r.db");
  int launches = 0, refused = 0;
  for (const auto& e : data.events) {
    launches += e.kind == "job_launch";
    refused += e.kind == "restart_refused";
  }
  CHECK(launches == 1);  // no second job
  CHECK(refused == 1);
  CHECK(data.run.status != reports::RunStatus::kPassed);
  CHECK(NamespacesLeft(f.err()) == 0);
  CHECK(ProcessesWith(script) == 0);
  CHECK(PidsWhose({"faultline-agent", std::string("--lab\0", 6) + lab}).empty());
}

}  // namespace
}  // namespace fl::harness
