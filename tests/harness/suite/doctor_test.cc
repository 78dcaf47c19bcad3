// `faultline doctor`'s checks (harness/suite/doctor.h) on an inventory lab written into a
// temporary folder, one planted problem per test: a clean lab is all OK; a certificate near
// its end is a WARNING and an expired one CRITICAL; a policy that forbids a fault of the suite,
// a NIC that does not exist and a fault left in the journal are CRITICAL, each named ([unit]).
// A switch whose SSH host key is unknown or changed, against a real sshd on loopback, is
// [.root][integration].
#include "harness/suite/doctor.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "common/process.h"
#include "harness/control/certs.h"
#include "injectors/injector.h"
#include "tests/harness/run_testing.h"
#include "tests/test_util.h"

namespace fl::harness::suite {
namespace {

using lab::GateLevel;

// An inventory of two hosts (node01, node02: nic0, nic1), its token and TLS folder with a lab
// CA and both hosts' certificates, a scenario flapping node01.nic0 and a policy allowing it.
struct Lab {
  testing::TempDir dir{"fl_doctor"};
  std::string inventory, scenario, policy, tls, journal;

  explicit Lab(const std::string& switches = "") {
    const std::string d = dir.path();
    tls = d + "/tls";
    journal = d + "/journal";
    REQUIRE(WriteFileAtomic(d + "/token", "0123456789abcdef0123456789abcdef\n").ok());
    REQUIRE(chmod((d + "/token").c_str(), 0600) == 0);
    REQUIRE(InitLabCa(tls).ok());
    for (const char* h : {"node01", "node02"}) REQUIRE(IssueCertificate(tls, h, {}).ok());
    inventory = d + "/inventory.yaml";
    REQUIRE(WriteFileAtomic(inventory,
                            "name: rack7\n"
                            "coordinator: {listen: 127.0.0.1:7070, token_file: " +
                                d +
                                "/token}\n"
                                "hosts:\n"
                                "  - name: node01\n    ranks: 1\n    nics:\n"
                                "      - {name: nic0, ifname: ens1f0, address: 10.0.0.1}\n"
                                "      - {name: nic1, ifname: ens1f1, address: 10.1.0.1}\n"
                                "  - name: node02\n    ranks: 1\n    nics:\n"
                                "      - {name: nic0, ifname: ens1f0, address: 10.0.0.2}\n"
                                "      - {name: nic1, ifname: ens1f1, address: 10.1.0.2}\n" +
                                switches)
                .ok());
    scenario = d + "/flap.yaml";
    WriteScenario("node01.nic0");
    policy = d + "/policy.yaml";
    WritePolicy("[nic_port_flap]");
  }
  void WriteScenario(const std::string& target) {
    REQUIRE(WriteFileAtomic(scenario,
                            "name: flap\nlab: {inventory: inventory.yaml}\n"
                            "job: {iterations: 100}\n"
                            "faults:\n  - {kind: nic_port_flap, target: " +
                                target + ", at: 1s, duration: 1s}\n")
                .ok());
  }
  void WritePolicy(const std::string& kinds) {
    REQUIRE(
        WriteFileAtomic(policy, "allow_kinds: " + kinds + "\ntarget_prefixes: [node01]\n").ok());
  }
  DoctorOptions Options() const {
    DoctorOptions o;
    o.lab_file = inventory;
    o.scenario_files = {scenario};
    o.policy_file = policy;
    o.journal_dir = journal;
    o.db = dir.path() + "/results.db";
    o.agents = false;  // no agent runs here (real ones: tests/harness/run/doctor_agents_test.cc)
    return o;
  }
};

// The lines of one check at one level.
std::vector<DoctorLine> Of(const std::vector<DoctorLine>& lines, const std::string& check,
                           GateLevel level) {
  std::vector<DoctorLine> out;
  for (const auto& l : lines)
    if (l.check == check && l.level == level) out.push_back(l);
  return out;
}

TEST_CASE("doctor: a clean inventory lab is OK in every check, exit 0", "[unit]") {
  Lab lab;
  auto lines = RunDoctor(lab.Options());
  INFO(FormatDoctor(lines));
  CHECK(WorstLevel(lines) == GateLevel::kOk);
  for (const char* c : {"scenarios", "policy", "certs", "journal", "room", "host"})
    CHECK(Of(lines, c, GateLevel::kOk).size() == 1);
  CHECK(FormatDoctor(lines).find("0 WARNING, 0 CRITICAL") != std::string::npos);
  auto j = DoctorJson(lines);
  CHECK(j["level"] == "OK");
  CHECK(j["checks"].size() == lines.size());
  // Without --policy it says it did not check one.
  auto o = lab.Options();
  o.policy_file.clear();
  lines = RunDoctor(o);
  auto p = Of(lines, "policy", GateLevel::kOk);
  REQUIRE(p.size() == 1);
  CHECK(p[0].message.rfind("not checked here: give --policy", 0) == 0);
}

TEST_CASE("doctor: a certificate near its end is a WARNING, an expired one CRITICAL", "[unit]") {
  Lab lab;
  IssueOptions shortlived;
  shortlived.validity_ns = 10LL * 24 * 3600 * kNsPerSec;
  REQUIRE(IssueCertificate(lab.tls, "node03", shortlived).ok());
  auto lines = RunDoctor(lab.Options());
  INFO(FormatDoctor(lines));
  auto warn = Of(lines, "certs", GateLevel::kWarning);
  REQUIRE(warn.size() == 1);
  CHECK(warn[0].message.find("node03.crt (node03) expires in 9 day(s)") != std::string::npos);
  CHECK(WorstLevel(lines) == GateLevel::kWarning);
  // Eleven days on, it has expired.
  auto o = lab.Options();
  o.now_wall_ns = WallNowNs() + 11LL * 24 * 3600 * kNsPerSec;
  lines = RunDoctor(o);
  auto crit = Of(lines, "certs", GateLevel::kCritical);
  REQUIRE(crit.size() == 1);
  CHECK(crit[0].message.find("node03.crt (node03) expired") != std::string::npos);
  CHECK(crit[0].fix.find("faultline certs issue") != std::string::npos);
  CHECK(WorstLevel(lines) == GateLevel::kCritical);
}

TEST_CASE("doctor: a policy that forbids a fault of the suite is CRITICAL, naming the fault",
          "[unit]") {
  Lab lab;
  lab.WritePolicy("[container_kill]");
  auto lines = RunDoctor(lab.Options());
  INFO(FormatDoctor(lines));
  auto crit = Of(lines, "policy", GateLevel::kCritical);
  REQUIRE(crit.size() == 1);
  CHECK(crit[0].message.find("flap f0 nic_port_flap on node01.nic0: refused by " + lab.policy) !=
        std::string::npos);
  CHECK(Of(lines, "policy", GateLevel::kOk).empty());
  CHECK(WorstLevel(lines) == GateLevel::kCritical);
}

TEST_CASE("doctor: a NIC that does not exist is CRITICAL, at its place in the scenario", "[unit]") {
  Lab lab;
  lab.WriteScenario("node01.nic7");
  auto lines = RunDoctor(lab.Options());
  INFO(FormatDoctor(lines));
  auto crit = Of(lines, "scenarios", GateLevel::kCritical);
  REQUIRE(crit.size() == 1);
  CHECK(crit[0].message.find(lab.scenario + ":") != std::string::npos);
  CHECK(crit[0].message.find("node01.nic7") != std::string::npos);
  CHECK(WorstLevel(lines) == GateLevel::kCritical);
}

TEST_CASE("doctor: a fault left in the journal is CRITICAL, naming it", "[unit]") {
  Lab lab;
  injectors::FaultHandle h;
  h.id = "nic_port_flap-4242";
  h.spec.kind = "nic_port_flap";
  h.spec.target = "node01.nic0";
  nlohmann::json j = {{"owner_pid", 1},
                      {"owner_start", 0},
                      {"phase", "applied"},
                      {"handle", injectors::HandleToJson(h)}};
  REQUIRE(MakeDirs(lab.journal, 0700).ok());
  REQUIRE(WriteFileAtomic(lab.journal + "/" + h.id + ".json", j.dump()).ok());
  auto lines = RunDoctor(lab.Options());
  INFO(FormatDoctor(lines));
  auto crit = Of(lines, "journal", GateLevel::kCritical);
  REQUIRE(crit.size() == 1);
  CHECK(crit[0].message.find("nic_port_flap-4242 (nic_port_flap on node01.nic0)") !=
        std::string::npos);
  CHECK(crit[0].fix.find("faultline lab recover") != std::string::npos);
}

// A real sshd on a free loopback port with a fresh host key; stopped by pid.
struct Sshd {
  testing::TempDir dir{"fl_doctor_sshd"};
  int port = -1, pid = -1;
  std::string host_key_pub;
  Sshd() {
    const std::string d = dir.path();
    REQUIRE(
        Run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", d + "/host_key"})->exit_code ==
        0);
    host_key_pub = *ReadFile(d + "/host_key.pub");
    port = testing::FreeTcpPort("127.0.0.1");
    REQUIRE(port > 0);
    REQUIRE(WriteFileAtomic(d + "/sshd_config",
                            "ListenAddress 127.0.0.1\nPort " + std::to_string(port) + "\nHostKey " +
                                d + "/host_key\nPidFile " + d +
                                "/sshd.pid\nUsePAM no\nPasswordAuthentication no\n")
                .ok());
    MakeDirs("/run/sshd", 0755).IgnoreError();  // sshd's privilege separation folder
    ProcessSpec spec;
    spec.argv = {"/usr/sbin/sshd", "-D", "-e", "-f", d + "/sshd_config"};
    spec.out.kind = Stdio::kNull;
    spec.err = {Stdio::kFile, d + "/sshd.log"};
    auto p = Spawn(spec);
    REQUIRE(p.ok());
    pid = p->pid();
    REQUIRE(WaitUntil(
        [&] {
          auto r = Run({"ssh-keyscan", "-T", "1", "-p", std::to_string(port), "127.0.0.1"});
          return r.ok() && r->out.find("ssh-ed25519") != std::string::npos;
        },
        Deadline::After(10 * kNsPerSec), 50 * kNsPerMs));
  }
  ~Sshd() {
    if (pid > 0) Stop(pid, kNsPerSec);
  }
};

TEST_CASE(
    "doctor: a switch whose host key is unknown or changed is CRITICAL with its "
    "fingerprint, a known one OK",
    "[.root][integration]") {
  Sshd sshd;
  testing::TempDir keys("fl_doctor_keys");
  const std::string known = keys.path() + "/known_hosts", key = keys.path() + "/id";
  REQUIRE(WriteFileAtomic(known, "").ok());
  REQUIRE(WriteFileAtomic(key, "not used by the doctor\n").ok());
  REQUIRE(chmod(key.c_str(), 0600) == 0);
  Lab lab("switches:\n  - {name: leaf0, address: 127.0.0.1, port: " + std::to_string(sshd.port) +
          ", preset: sonic, user: admin, key_file: " + key + ", known_hosts: " + known + "}\n");
  auto fp = Run({"ssh-keygen", "-l", "-f", sshd.dir.path() + "/host_key.pub"});
  REQUIRE(fp.ok());
  const std::string fingerprint = fp->out.substr(
      fp->out.find(' ') + 1, fp->out.find(' ', fp->out.find(' ') + 1) - fp->out.find(' ') - 1);

  auto lines = RunDoctor(lab.Options());
  INFO(FormatDoctor(lines));
  auto crit = Of(lines, "switches", GateLevel::kCritical);
  REQUIRE(crit.size() == 1);
  CHECK(crit[0].message.find("host key " + fingerprint + " is unknown") != std::string::npos);
  CHECK(crit[0].message.find("not accepted") != std::string::npos);
  CHECK(*ReadFile(known) == "");  // never written

  // Known: OK.
  const std::string entry = "[127.0.0.1]:" + std::to_string(sshd.port) + " " + sshd.host_key_pub;
  REQUIRE(WriteFileAtomic(known, entry).ok());
  lines = RunDoctor(lab.Options());
  CHECK(Of(lines, "switches", GateLevel::kOk).size() == 1);
  CHECK(Of(lines, "switches", GateLevel::kCritical).empty());

  // Another key recorded for it: changed.
  REQUIRE(Run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", keys.path() + "/other"})
              ->exit_code == 0);
  REQUIRE(WriteFileAtomic(known, "[127.0.0.1]:" + std::to_string(sshd.port) + " " +
                                     *ReadFile(keys.path() + "/other.pub"))
              .ok());
  lines = RunDoctor(lab.Options());
  crit = Of(lines, "switches", GateLevel::kCritical);
  REQUIRE(crit.size() == 1);
  CHECK(crit[0].message.find("has CHANGED") != std::string::npos);
}

}  // namespace
}  // namespace fl::harness::suite
