// `faultline gate prolog|epilog|health` as slurm.conf's Prolog and Epilog on a real Slurm over
// a local lab (slurm_cluster.h): a clean node runs jobs; a fault a job left (a real
// tor_port_down whose owner was SIGKILLed) is reverted by the epilog and the node stays in
// service; a node holding a fault is refused by the prolog and drained naming it; a fault the
// epilog cannot revert drains the node with that reason; `gate health` resumes a node the gate
// drained once it holds nothing ([.root][integration]).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "common/process.h"
#include "injectors/journal.h"
#include "injectors/netlink.h"
#include "tests/harness/slurm_cluster.h"
#include "tests/injectors/lab_testing.h"
#include "tests/test_util.h"

namespace fl::lab {
namespace {

// The node's state and reason as sinfo prints them ("idle|none", "drained|faultline: ...").
std::string NodeState(const testing::SlurmCluster& c, const std::string& node) {
  auto r = c.Client({"sinfo", "-h", "-N", "-n", node, "-o", "%T|%E"});
  if (!r.ok() || r->exit_code != 0) return "?";
  std::string s = r->out;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Submits a batch job on `node` running `command`; returns its id.
std::string Submit(const testing::SlurmCluster& c, const std::string& node,
                   const std::string& command) {
  auto r = c.Client({"sbatch", "--parsable", "-w", node, "-N", "1", "-o", "/dev/null", "--chdir",
                     "/tmp", "--wrap", command});
  REQUIRE(r.ok());
  INFO(r->out + r->err);
  REQUIRE(r->exit_code == 0);
  std::string id = r->out.substr(0, r->out.find_first_of(";\n"));
  REQUIRE_FALSE(id.empty());
  return id;
}

bool Gone(const testing::SlurmCluster& c, const std::string& job) {
  for (const auto& j : c.Jobs())
    if (j == job) return false;
  return true;
}

// A real fault on the switch port of h0 whose owner is then SIGKILLed: what a crashed agent
// leaves. Returns once the journal holds it applied and its owner is dead.
void LeaveFault(const LocalLab& lab) {
  ProcessSpec spec;
  spec.argv = {FL_FAULTLINE_BIN, "lab",      "inject", lab.name(),
               "tor_port_down",  "--target", "tor0.h0"};
  spec.out.kind = Stdio::kNull;
  spec.err.kind = Stdio::kNull;
  auto p = Spawn(spec);
  REQUIRE(p.ok());
  injectors::FaultJournal journal;
  bool applied = WaitUntil(
      [&] {
        auto e = journal.List();
        return e.ok() && e->size() == 1 && (*e)[0].phase == "applied";
      },
      Deadline::After(15 * kNsPerSec), 10 * kNsPerMs);
  kill(p->pid(), SIGKILL);
  WaitExit(p->pid(), Deadline::After(5 * kNsPerSec)).status().IgnoreError();  // SIGKILLed: it goes
  REQUIRE(applied);
  REQUIRE_FALSE(injectors::GetLink(lab.NetnsOf("tor0"), "h0")->admin_up);
}

// An entry no revert can clear: a fault of a kind this build does not have (left by another
// version of the agent), owned by a dead process.
void LeaveUnrevertable() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  injectors::FaultHandle h;
  h.id = "fw_reset-77";
  h.spec.kind = "fw_reset";
  h.spec.target = "h0.nic0";
  nlohmann::json j = {{"owner_pid", static_cast<int>(pid)},
                      {"owner_start", 0},
                      {"phase", "applied"},
                      {"handle", injectors::HandleToJson(h)}};
  const std::string dir = injectors::StateDir() + "/journal";
  REQUIRE(MakeDirs(dir, 0700).ok());
  REQUIRE(WriteFileAtomic(dir + "/" + h.id + ".json", j.dump()).ok());
}

TEST_CASE("faultline gate on real Slurm daemons: prolog, epilog and health",
          "[.root][integration]") {
  testing::ScopedStateDir state;
  testing::TempDir dir("fl_gate");
  auto l = testing::TestLab::Up(testing::kSmallRail);
  REQUIRE(l.ok());
  LocalLab& lab = (*l)->lab();
  const std::string prolog = dir.path() + "/prolog", epilog = dir.path() + "/epilog";
  auto c = testing::SlurmCluster::Start(lab, 90 * kNsPerSec,
                                        "Prolog=" + prolog + "\nEpilog=" + epilog + "\n");
  INFO((c.ok() ? std::string() : c.status().ToString()));
  REQUIRE(c.ok());
  testing::SlurmCluster& slurm = **c;
  // What slurm.conf's Prolog and Epilog name on a node: the gate with this cluster's
  // slurm.conf and this test's state directory (the journal `lab inject` writes to).
  for (const auto& [path, step] : {std::pair{prolog, "prolog"}, std::pair{epilog, "epilog"}}) {
    REQUIRE(WriteFileAtomic(path, "#!/bin/sh\nexport SLURM_CONF=" + slurm.conf() +
                                      "\nexport FAULTLINE_STATE_DIR=" + state.path() +
                                      "\nexec " FL_FAULTLINE_BIN " gate " + step + "\n")
                .ok());
    REQUIRE(chmod(path.c_str(), 0755) == 0);
  }
  auto log = [&] {
    auto g = ReadFile(state.path() + "/gate.log");  // absent: the gate said nothing yet
    return "gate.log:\n" + (g.ok() ? *g : std::string()) + "\n" + slurm.Logs();
  };
  const Deadline end = Deadline::After(240 * kNsPerSec);
  auto wait_gone = [&](const std::string& job) {
    return WaitUntil([&] { return Gone(slurm, job); }, Deadline::After(60 * kNsPerSec),
                     100 * kNsPerMs);
  };
  auto idle = [&] { return NodeState(slurm, "h0") == "idle|none"; };

  // 1. A clean node: the prolog lets the job run, the epilog finds nothing.
  std::string job = Submit(slurm, "h0", "true");
  REQUIRE(wait_gone(job));
  INFO(log());
  CHECK(idle());

  // 2. A job whose agent died holding a fault: the epilog reverts it, the node stays in
  // service and the next job runs.
  // The fault comes once the job runs (its prolog passed): the job says so with a file.
  const std::string started = dir.path() + "/started";
  auto run_job = [&] {
    unlink(started.c_str());
    std::string id = Submit(slurm, "h0", "touch " + started + "; sleep 3");
    REQUIRE(WaitUntil([&] { return access(started.c_str(), F_OK) == 0; },
                      Deadline::After(30 * kNsPerSec), 20 * kNsPerMs));
    return id;
  };
  job = run_job();
  LeaveFault(lab);
  REQUIRE(wait_gone(job));
  CHECK(injectors::GetLink(lab.NetnsOf("tor0"), "h0")->admin_up);
  CHECK(injectors::FaultJournal().List()->empty());
  CHECK(WaitUntil(idle, Deadline::After(10 * kNsPerSec), 100 * kNsPerMs));
  auto g = ReadFile(state.path() + "/gate.log");
  REQUIRE(g.ok());
  CHECK(g->find("h0 epilog OK reverted 1 fault left on the node") != std::string::npos);

  // 3. A node that holds a fault is refused: the prolog drains it naming the fault, and the
  // job does not run there. Slurm then runs the epilog for the refused job, which reverts
  // the fault (its owner is dead); the node stays drained until the health check, finding
  // it clear, resumes it.
  LeaveFault(lab);
  const std::string marker = dir.path() + "/ran";
  job = Submit(slurm, "h0", "touch " + marker);
  CHECK(WaitUntil(
      [&] { return NodeState(slurm, "h0").find("faultline: holds") != std::string::npos; },
      Deadline::After(60 * kNsPerSec), 100 * kNsPerMs));
  std::string st = NodeState(slurm, "h0");
  INFO("node: " + st);
  CHECK(st.rfind("drain", 0) == 0);
  CHECK(st.find("tor_port_down on tor0.h0") != std::string::npos);
  CHECK(access(marker.c_str(), F_OK) != 0);
  slurm.Client({"scancel", job}).status().IgnoreError();  // held after its failed launch
  REQUIRE(wait_gone(job));
  CHECK(WaitUntil([&] { return injectors::FaultJournal().List()->empty(); },
                  Deadline::After(20 * kNsPerSec), 100 * kNsPerMs));
  CHECK(injectors::GetLink(lab.NetnsOf("tor0"), "h0")->admin_up);
  CHECK(NodeState(slurm, "h0").rfind("drain", 0) == 0);
  auto gate = [&](const char* step) {
    RunOptions o;
    o.env = CleanEnvironment({"SLURM_CONF=" + slurm.conf(), "FAULTLINE_STATE_DIR=" + state.path()});
    o.timeout = 60 * kNsPerSec;
    auto r = Run({FL_FAULTLINE_BIN, "gate", step, "--node", "h0"}, o);
    REQUIRE(r.ok());
    return *r;
  };
  auto r = gate("health");
  INFO("health: " + r.out + r.err + "\nnode: " + NodeState(slurm, "h0"));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("resumed h0") != std::string::npos);
  CHECK(WaitUntil([&] { return NodeState(slurm, "h0").rfind("idle", 0) == 0; },
                  Deadline::After(10 * kNsPerSec), 100 * kNsPerMs));

  // 4. A fault the epilog cannot revert: the node is drained with the reason naming it, and
  // the health check keeps it drained while the fault is there.
  job = run_job();
  LeaveUnrevertable();
  REQUIRE(wait_gone(job));
  CHECK(WaitUntil(
      [&] {
        return NodeState(slurm, "h0").find("faultline: could not revert fw_reset-77") !=
               std::string::npos;
      },
      Deadline::After(20 * kNsPerSec), 100 * kNsPerMs));
  CHECK(NodeState(slurm, "h0").rfind("drain", 0) == 0);
  r = gate("health");
  INFO("health: " + r.out + r.err + "\nnode: " + NodeState(slurm, "h0"));
  CHECK(r.exit_code == 2);
  CHECK(r.out.rfind("FAULTLINE CRITICAL - node holds 1 fault: fw_reset-77", 0) == 0);
  CHECK(NodeState(slurm, "h0").rfind("drain", 0) == 0);
  // Cleared by hand: the health check resumes the node the gate drained...
  REQUIRE(unlink((injectors::StateDir() + "/journal/fw_reset-77.json").c_str()) == 0);
  r = gate("health");
  CHECK(r.out.find("resumed h0") != std::string::npos);
  CHECK(WaitUntil([&] { return NodeState(slurm, "h0").rfind("idle", 0) == 0; },
                  Deadline::After(10 * kNsPerSec), 100 * kNsPerMs));
  // ...but never one drained by someone else.
  REQUIRE(slurm.Client({"scontrol", "update", "NodeName=h0", "State=DRAIN", "Reason=bad DIMM"})
              ->exit_code == 0);
  r = gate("health");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("resumed") == std::string::npos);
  CHECK(NodeState(slurm, "h0").find("bad DIMM") != std::string::npos);
  CHECK_FALSE(end.Expired());
}

}  // namespace
}  // namespace fl::lab
