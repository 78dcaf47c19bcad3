// The Slurm gate's decisions (harness/lab/node_gate.h) over a journal in a temporary
// directory, with fake injectors: a node holding nothing, faults of dead and live owners,
// reverts that work and one that fails, corrupt entries, drain reasons and scontrol's text
// ([unit]). The gate on real Slurm daemons is tests/harness/slurm_gate_test.cc.
#include "harness/lab/node_gate.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "tests/test_util.h"

namespace fl::lab {
namespace {

// A pid that is not alive: a child that has exited and been reaped.
int DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

// Writes a journal entry as an agent would have, owned by owner_pid.
void Plant(const std::string& dir, const std::string& id, const std::string& kind,
           const std::string& target, int owner_pid) {
  injectors::FaultHandle h;
  h.id = id;
  h.spec.kind = kind;
  h.spec.target = target;
  nlohmann::json j = {{"owner_pid", owner_pid},
                      {"owner_start", 0},
                      {"phase", "applied"},
                      {"handle", injectors::HandleToJson(h)}};
  REQUIRE(MakeDirs(dir, 0700).ok());
  REQUIRE(WriteFileAtomic(dir + "/" + id + ".json", j.dump(2)).ok());
}

// revert_ok: its revert succeeds and verifies; otherwise the revert fails.
class FakeInjector : public injectors::Injector {
 public:
  explicit FakeInjector(bool revert_ok) : ok_(revert_ok) {}
  std::string_view kind() const override { return ok_ ? "fake_ok" : "fake_stuck"; }
  std::string_view help() const override { return ""; }
  Status Validate(const injectors::FaultSpec&) const override { return OkStatus(); }
  StatusOr<injectors::FaultHandle> Prepare(const injectors::FaultSpec& spec,
                                           const injectors::Fabric&) override {
    injectors::FaultHandle h;
    h.spec = spec;
    return h;
  }
  Status Apply(injectors::FaultHandle&) override { return OkStatus(); }
  Status Revert(const injectors::FaultHandle&) override {
    return ok_ ? OkStatus() : UnavailableError("the port did not come back up");
  }
  Status Verify(const injectors::FaultHandle&, injectors::Expect) override { return OkStatus(); }

 private:
  bool ok_;
};

injectors::InjectorRegistry Fakes() {
  injectors::InjectorRegistry r("injector");
  REQUIRE(r.Register("fake_ok", [] {
             return StatusOr<std::unique_ptr<injectors::Injector>>(
                 std::make_unique<FakeInjector>(true));
           }).ok());
  REQUIRE(r.Register("fake_stuck", [] {
             return StatusOr<std::unique_ptr<injectors::Injector>>(
                 std::make_unique<FakeInjector>(false));
           }).ok());
  return r;
}

TEST_CASE("gate: an empty journal is OK for the prolog and the epilog", "[unit]") {
  testing::TempDir dir("fl_gate");
  injectors::FaultJournal journal(dir.path() + "/journal");  // not even created yet
  auto check = CheckNodeHoldsNoFault(journal);
  CHECK(check.level == GateLevel::kOk);
  CHECK(check.drain_reason.empty());
  auto registry = Fakes();
  auto epi = RevertLeftFaults(journal, registry, false);
  CHECK(epi.level == GateLevel::kOk);
  CHECK(epi.summary == "no fault left on the node");
  CHECK(FormatGateResult(check).rfind("FAULTLINE OK - no fault held", 0) == 0);
}

TEST_CASE("gate: the prolog refuses a node holding a fault, naming it, and touches nothing",
          "[unit]") {
  testing::TempDir dir("fl_gate");
  const std::string jd = dir.path() + "/journal";
  Plant(jd, "nic_port_flap-ab12", "nic_port_flap", "gpu01.nic0", DeadPid());
  Plant(jd, "packet_loss-cd34", "packet_loss", "gpu01.nic1", getpid());
  injectors::FaultJournal journal(jd);
  auto r = CheckNodeHoldsNoFault(journal);
  CHECK(r.level == GateLevel::kCritical);
  CHECK(r.summary.find("holds 2 faults") != std::string::npos);
  CHECK(r.drain_reason.rfind(kDrainPrefix, 0) == 0);
  CHECK(r.drain_reason.find("nic_port_flap-ab12 (nic_port_flap on gpu01.nic0)") !=
        std::string::npos);
  CHECK(r.drain_reason.find("packet_loss on gpu01.nic1") != std::string::npos);
  REQUIRE(r.details.size() == 2);
  CHECK((r.details[0].find("(dead)") != std::string::npos) !=
        (r.details[1].find("(dead)") != std::string::npos));
  CHECK(journal.List()->size() == 2);  // still there
}

TEST_CASE("gate: the epilog reverts what a dead owner left and leaves a live owner's", "[unit]") {
  testing::TempDir dir("fl_gate");
  const std::string jd = dir.path() + "/journal";
  Plant(jd, "fake_ok-1", "fake_ok", "h0.nic0", DeadPid());
  injectors::FaultJournal journal(jd);
  auto registry = Fakes();

  auto r = RevertLeftFaults(journal, registry, false);
  CHECK(r.level == GateLevel::kOk);
  CHECK(r.summary == "reverted 1 fault left on the node");
  REQUIRE(r.details.size() == 1);
  CHECK(r.details[0] == "reverted fake_ok-1 (fake_ok on h0.nic0), verified");
  CHECK(journal.List()->empty());
  CHECK(CheckNodeHoldsNoFault(journal).level == GateLevel::kOk);

  Plant(jd, "fake_ok-2", "fake_ok", "h0.nic1", getpid());
  r = RevertLeftFaults(journal, registry, false);
  CHECK(r.level == GateLevel::kWarning);
  CHECK(r.drain_reason.empty());
  CHECK(journal.List()->size() == 1);
  r = RevertLeftFaults(journal, registry, true);  // --include-live
  CHECK(r.level == GateLevel::kOk);
  CHECK(journal.List()->empty());
}

TEST_CASE("gate: a fault the epilog cannot revert drains the node with a reason naming it",
          "[unit]") {
  testing::TempDir dir("fl_gate");
  const std::string jd = dir.path() + "/journal";
  Plant(jd, "fake_stuck-9", "fake_stuck", "h1.nic0", DeadPid());
  Plant(jd, "fake_ok-3", "fake_ok", "h1.nic1", DeadPid());
  injectors::FaultJournal journal(jd);
  auto registry = Fakes();
  auto r = RevertLeftFaults(journal, registry, false);
  CHECK(r.level == GateLevel::kCritical);
  CHECK(r.drain_reason.rfind("faultline: could not revert fake_stuck-9 (fake_stuck on h1.nic0)",
                             0) == 0);
  CHECK(r.drain_reason.find("did not come back up") != std::string::npos);
  CHECK(r.summary.find("1 other fault reverted") != std::string::npos);
  auto left = journal.List();
  REQUIRE(left.ok());
  REQUIRE(left->size() == 1);  // the stuck one stays for the next try
  CHECK((*left)[0].handle.id == "fake_stuck-9");
  // The next prolog refuses the node.
  CHECK(CheckNodeHoldsNoFault(journal).level == GateLevel::kCritical);
}

TEST_CASE("gate: a corrupt journal entry is critical for both steps", "[unit]") {
  testing::TempDir dir("fl_gate");
  const std::string jd = dir.path() + "/journal";
  REQUIRE(MakeDirs(jd, 0700).ok());
  REQUIRE(WriteFileAtomic(jd + "/nic_port_flap-zz.json", "{\"owner_pid\": ").ok());
  injectors::FaultJournal journal(jd);
  CHECK(CheckNodeHoldsNoFault(journal).level == GateLevel::kCritical);
  auto registry = Fakes();
  auto r = RevertLeftFaults(journal, registry, false);
  CHECK(r.level == GateLevel::kCritical);
  CHECK(r.drain_reason.find("corrupt journal entry") != std::string::npos);
}

TEST_CASE("gate: drain reasons are one bounded line, scontrol's node text is read", "[unit]") {
  testing::TempDir dir("fl_gate");
  const std::string jd = dir.path() + "/journal";
  for (int i = 0; i < 12; ++i)
    Plant(jd, "nic_port_flap-" + std::to_string(i), "nic_port_flap",
          "a-rather-long-host-name-" + std::to_string(i) + ".nic0", DeadPid());
  injectors::FaultJournal journal(jd);
  auto r = CheckNodeHoldsNoFault(journal);
  CHECK(r.drain_reason.size() <= kMaxDrainReason);
  CHECK(r.drain_reason.find('\n') == std::string::npos);
  CHECK(r.drain_reason.substr(r.drain_reason.size() - 3) == "...");

  CHECK(DrainArgs("gpu01", "faultline: x") ==
        std::vector<std::string>{"update", "NodeName=gpu01", "State=DRAIN", "Reason=faultline: x"});
  CHECK(ResumeArgs("gpu01") ==
        std::vector<std::string>{"update", "NodeName=gpu01", "State=RESUME"});
  const std::string ours =
      "NodeName=h0 Arch=x86_64 CoresPerSocket=1\n   State=IDLE+DRAIN ThreadsPerCore=1\n"
      "   Reason=faultline: holds nic_port_flap-1 (nic_port_flap on h0.nic0) [root@2026-12-07]\n";
  CHECK(DrainedByGate(ours));
  std::string theirs = ours;
  theirs.replace(theirs.find("faultline: "), 11, "bad DIMM ");
  CHECK_FALSE(DrainedByGate(theirs));
  std::string idle = ours;
  idle.replace(idle.find("IDLE+DRAIN"), 10, "IDLE");
  CHECK_FALSE(DrainedByGate(idle));
}

}  // namespace
}  // namespace fl::lab
