// Faults sent ahead (InjectFault.due_agent_wall_ns): a real faultline-agent on a real (small)
// lab, driven by an in-process ControlServer. A fault prepared ahead and reverted (the run
// interrupted) or left to the agent's exit before its time is cancelled: its NIC never goes
// down and no journal entry is left; one left to its time fires then and is acked then.
// Root only (namespaces, links). How close to its time a fault fires is a timing goal:
// bench/injection_timing.sh.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <future>

#include "common/file_util.h"
#include "harness/control/auth.h"
#include "harness/coordinator/control_server.h"
#include "harness/lab/local_lab.h"
#include "tests/child_process.h"
#include "tests/harness/agent/agent_testing.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

namespace pb = faultline::v1;
using testing::ChildProcess;
using testing::JournalEntries;
using testing::TempDir;

struct AheadSetup {
  TempDir dir{"fl_ahead"};
  std::unique_ptr<testing::TestLab> lab;
  std::unique_ptr<ControlServer> server;
  std::unique_ptr<ChildProcess> agent;

  AheadSetup() {
    lab = std::make_unique<testing::TestLab>(dir.path(), "ahd");
    auto token = CreateTokenFile(dir.path() + "/token");
    REQUIRE(token.ok());
    REQUIRE(WriteFileAtomic(dir.path() + "/policy.yaml",
                            "allow_kinds: [nic_port_flap]\nmax_fault_duration: 60s\n")
                .ok());
    ControlServerOptions so;
    so.token = *token;
    so.run_id = "ahead-run";
    so.lease_ns = 5 * kNsPerSec;
    so.heartbeat_interval_ns = 200 * kNsPerMs;
    auto s = ControlServer::Start(so);
    REQUIRE(s.ok());
    server = std::move(*s);
    REQUIRE(MakeDirs(run_dir(), 0700).ok());
    ChildProcess::Options ao;
    ao.out = dir.path() + "/agent.log";
    agent = std::make_unique<ChildProcess>(
        std::vector<std::string>{
            std::string(FL_BUILD_DIR) + "/bin/faultline-agent", "--coordinator", server->address(),
            "--token-file", dir.path() + "/token", "--host", "h0", "--lab", lab->name(), "--policy",
            dir.path() + "/policy.yaml", "--journal-dir", journal(), "--run-dir", run_dir()},
        ao);
    REQUIRE(server->WaitForAgents({"h0"}, Deadline::After(30 * kNsPerSec)).ok());
  }
  ~AheadSetup() {
    if (agent && !agent->Wait(Deadline::After(0)).has_value()) {
      kill(agent->pid(), SIGTERM);
      agent->Wait(Deadline::After(20 * kNsPerSec));
    }
    if (server) server->Shutdown();
  }
  std::string journal() const { return dir.path() + "/journal"; }
  std::string run_dir() const { return dir.path() + "/run"; }
  // Armed: fired when ranks 0 and 1 have both reported iteration `it`.
  std::future<StatusOr<pb::Ack>> Arm(uint64_t it) {
    pb::CoordinatorMessage m;
    m.mutable_inject()->set_fault_id("f0");
    m.mutable_inject()->set_kind("nic_port_flap");
    m.mutable_inject()->set_target("h0.nic0");
    m.mutable_inject()->set_duration_ms(30000);
    m.mutable_inject()->set_after_iteration(it);
    m.mutable_inject()->add_iteration_ranks(0);
    m.mutable_inject()->add_iteration_ranks(1);
    return std::async(std::launch::async,
                      [this, m] { return server->Call("h0", m, Deadline::After(60 * kNsPerSec)); });
  }
  std::string Log() const { return ReadFile(dir.path() + "/agent.log").value_or(""); }
  bool NicUp() const { return lab->NicUp(); }
  // A nic_port_flap on h0.nic0 due at due_wall (this machine's clock is the agent's), sent
  // now; its ack comes when it fired (or was cancelled).
  std::future<StatusOr<pb::Ack>> SendAhead(Nanos due_wall) {
    pb::CoordinatorMessage m;
    m.mutable_inject()->set_fault_id("f0");
    m.mutable_inject()->set_kind("nic_port_flap");
    m.mutable_inject()->set_target("h0.nic0");
    m.mutable_inject()->set_duration_ms(30000);
    m.mutable_inject()->set_due_agent_wall_ns(due_wall);
    return std::async(std::launch::async,
                      [this, m] { return server->Call("h0", m, Deadline::After(60 * kNsPerSec)); });
  }
  StatusOr<pb::Ack> Revert() {
    pb::CoordinatorMessage m;
    m.mutable_revert()->set_fault_id("f0");
    return server->Call("h0", m, Deadline::After(20 * kNsPerSec));
  }
  // Reverts f0 before it fired: the revert is acked, the inject answered "cancelled before its
  // time", and no journal entry is left.
  void RevertAndCheckCancelled(std::future<StatusOr<pb::Ack>>& inject) {
    auto revert = Revert();
    INFO(Log());
    REQUIRE(revert.ok());
    CHECK(revert->ok());
    REQUIRE(inject.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    auto ack = inject.get();
    REQUIRE(ack.ok());
    CHECK_FALSE(ack->ok());
    CHECK(ack->error().find("cancelled before its time") != std::string::npos);
    CHECK(JournalEntries(journal()) == 0);
  }
  // Reverts f0 now: acked, the NIC up again and the journal empty.
  void RevertAndCheckGone() {
    auto revert = Revert();
    REQUIRE(revert.ok());
    CHECK(revert->ok());
    CHECK(WaitUntil([&] { return NicUp(); }, Deadline::After(10 * kNsPerSec), 20 * kNsPerMs));
    CHECK(JournalEntries(journal()) == 0);
  }
  // f0's revert sent ahead, due at due_wall; answered when the agent reverted it.
  std::future<StatusOr<pb::Ack>> RevertAhead(Nanos due_wall) {
    pb::CoordinatorMessage m;
    m.mutable_revert()->set_fault_id("f0");
    m.mutable_revert()->set_due_agent_wall_ns(due_wall);
    return std::async(std::launch::async,
                      [this, m] { return server->Call("h0", m, Deadline::After(60 * kNsPerSec)); });
  }
  // Prepared: its "applying" journal entry is written, the NIC still up.
  void WaitPrepared() {
    INFO(Log());
    REQUIRE(WaitUntil([&] { return JournalEntries(journal()) == 1; },
                      Deadline::After(20 * kNsPerSec), 5 * kNsPerMs));
    CHECK(NicUp());
  }
};

TEST_CASE(
    "sent ahead: a fault reverted before its time (the run interrupted) is cancelled: "
    "nothing applied, no journal entry, its inject answered 'cancelled'",
    "[.root][integration]") {
  AheadSetup s;
  const Nanos due = WallNowNs() + 3 * kNsPerSec;
  auto inject = s.SendAhead(due);
  s.WaitPrepared();
  CHECK(inject.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  s.RevertAndCheckCancelled(inject);
  // Past its due time the NIC has stayed up: the cancelled fault never fires.
  CHECK_FALSE(WaitUntil([&] { return !s.NicUp(); },
                        Deadline::After(due - WallNowNs() + 500 * kNsPerMs), 20 * kNsPerMs));
  CHECK(JournalEntries(s.journal()) == 0);
}

TEST_CASE(
    "sent ahead: a prepared fault is cancelled when the agent exits before its time, and one "
    "left to its time fires then and is acked with its effective time",
    "[.root][integration]") {
  {
    AheadSetup s;
    const Nanos due = WallNowNs() + 20 * kNsPerSec;
    auto inject = s.SendAhead(due);
    s.WaitPrepared();
    kill(s.agent->pid(), SIGTERM);
    INFO(s.Log());
    CHECK(s.agent->Wait(Deadline::After(20 * kNsPerSec)) == 0);
    CHECK(JournalEntries(s.journal()) == 0);
    CHECK(s.NicUp());  // never went down
    REQUIRE(inject.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    auto ack = inject.get();
    CHECK_FALSE((ack.ok() && ack->ok()));  // cancelled (or the stream went first)
  }
  {
    AheadSetup s;
    const Nanos due = WallNowNs() + 1500 * kNsPerMs;
    auto inject = s.SendAhead(due);
    s.WaitPrepared();
    REQUIRE(inject.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    auto ack = inject.get();
    INFO(s.Log());
    REQUIRE(ack.ok());
    REQUIRE(ack->ok());
    CHECK(ack->requested_wall_ns() >= due);
    CHECK(ack->effective_wall_ns() >= ack->requested_wall_ns());
    CHECK_FALSE(s.NicUp());
    CHECK(JournalEntries(s.journal()) == 1);
    s.RevertAndCheckGone();
  }
}

TEST_CASE(
    "revert sent ahead: the fault stays until the revert's time, is reverted then and acked "
    "with that time - a plain revert that comes first reverts at once and answers both",
    "[.root][integration]") {
  AheadSetup s;
  auto fire = [&] {
    auto inject = s.SendAhead(WallNowNs() + 100 * kNsPerMs);
    REQUIRE(inject.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    auto ack = inject.get();
    REQUIRE(ack.ok());
    REQUIRE(ack->ok());
    REQUIRE_FALSE(s.NicUp());
  };
  fire();
  const Nanos due = WallNowNs() + 1200 * kNsPerMs;
  auto revert = s.RevertAhead(due);
  CHECK(revert.wait_for(std::chrono::milliseconds(700)) == std::future_status::timeout);
  CHECK_FALSE(s.NicUp());
  CHECK(JournalEntries(s.journal()) == 1);  // "reverting" already, the fault still applied
  REQUIRE(revert.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  auto ack = revert.get();
  INFO(s.Log());
  REQUIRE(ack.ok());
  REQUIRE(ack->ok());
  CHECK(ack->effective_wall_ns() >= due);
  CHECK(ack->effective_wall_ns() < due + 500 * kNsPerMs);
  CHECK(s.NicUp());
  CHECK(JournalEntries(s.journal()) == 0);

  // Again, with a plain revert (the run's end) before the revert's time.
  fire();
  auto later = s.RevertAhead(WallNowNs() + 20 * kNsPerSec);
  CHECK(later.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);
  const Nanos now = WallNowNs();
  auto plain = s.Revert();
  REQUIRE(plain.ok());
  CHECK(plain->ok());
  CHECK(s.NicUp());
  REQUIRE(later.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  auto both = later.get();
  REQUIRE(both.ok());
  CHECK(both->ok());
  CHECK(both->effective_wall_ns() == plain->effective_wall_ns());
  CHECK(plain->effective_wall_ns() >= now);
  CHECK(JournalEntries(s.journal()) == 0);
}

// A worker's end of the agent's telemetry socket: sample lines, as a rank writes them.
class FakeWorker {
 public:
  explicit FakeWorker(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
    ok_ = fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~FakeWorker() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return ok_; }
  bool Sample(int rank, uint64_t it) {
    const Nanos now = WallNowNs();
    const std::string line =
        "{\"t\":\"sample\",\"rank\":" + std::to_string(rank) + ",\"it\":" + std::to_string(it) +
        ",\"start\":" + std::to_string(now - 1000) + ",\"end\":" + std::to_string(now) +
        ",\"bytes\":1024,\"verified\":true,\"mismatch\":false}\n";
    return write(fd_, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

TEST_CASE(
    "armed: an iteration-triggered fault is prepared at once and fires when every one of its "
    "ranks has reported the iteration, acked with when that was",
    "[.root][integration]") {
  AheadSetup s;
  FakeWorker w(s.run_dir() + "/h0.sock");
  REQUIRE(w.ok());
  auto inject = s.Arm(10);
  s.WaitPrepared();
  // Rank 0 far past it, rank 1 one short: nothing fires.
  for (uint64_t it = 0; it <= 20; ++it) REQUIRE(w.Sample(0, it));
  for (uint64_t it = 0; it <= 9; ++it) REQUIRE(w.Sample(1, it));
  CHECK(inject.wait_for(std::chrono::milliseconds(500)) == std::future_status::timeout);
  CHECK(s.NicUp());
  const Nanos reached = WallNowNs();
  REQUIRE(w.Sample(1, 10));
  REQUIRE(inject.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto ack = inject.get();
  INFO(s.Log());
  REQUIRE(ack.ok());
  REQUIRE(ack->ok());
  CHECK(ack->triggered_wall_ns() >= reached);
  CHECK(ack->requested_wall_ns() >= ack->triggered_wall_ns());
  CHECK(ack->effective_wall_ns() >= ack->requested_wall_ns());
  CHECK_FALSE(s.NicUp());
  CHECK(s.Log().find("armed: fires when rank(s) 0,1 pass iteration 10") != std::string::npos);
  s.RevertAndCheckGone();
}

TEST_CASE(
    "armed: one armed on no rank is refused, and one whose ranks never get there is "
    "cancelled by its revert",
    "[.root][integration]") {
  AheadSetup s;
  // Armed on no rank at all: refused at once, nothing prepared.
  pb::CoordinatorMessage bad;
  bad.mutable_inject()->set_fault_id("f9");
  bad.mutable_inject()->set_kind("nic_port_flap");
  bad.mutable_inject()->set_target("h0.nic0");
  bad.mutable_inject()->set_after_iteration(5);
  auto refused = s.server->Call("h0", bad, Deadline::After(20 * kNsPerSec));
  REQUIRE(refused.ok());
  CHECK_FALSE(refused->ok());
  CHECK(refused->error_code() == static_cast<int>(Code::kInvalidArgument));
  CHECK(refused->error().find("iteration_ranks") != std::string::npos);
  CHECK(JournalEntries(s.journal()) == 0);
  auto inject = s.Arm(1000);
  s.WaitPrepared();
  s.RevertAndCheckCancelled(inject);
  CHECK(s.NicUp());
}

}  // namespace
}  // namespace fl::harness
