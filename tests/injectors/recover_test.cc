// Root-gated: SIGKILL the process that applied a fault; `faultline lab recover` reverts it.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "injectors/journal.h"
#include "injectors/netlink.h"
#include "tests/injectors/lab_testing.h"

namespace fl::injectors {
namespace {

// Runs the faultline binary with argv; returns the child's pid (stdout to /dev/null, stderr
// there too or to err_path).
pid_t Spawn(const std::vector<std::string>& args, const std::string& err_path = "") {
  std::vector<std::string> argv = {FL_FAULTLINE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c;
  for (auto& a : argv) c.push_back(a.data());
  c.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    int err = err_path.empty() ? null : open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(null, 1);
    dup2(err >= 0 ? err : null, 2);
    execv(c[0], c.data());
    _exit(127);
  }
  return pid;
}

int RunToEnd(const std::vector<std::string>& args, const std::string& err_path = "") {
  pid_t pid = Spawn(args, err_path);
  if (pid <= 0) return -1;
  int status = 0;
  bool done = WaitUntil([&] { return waitpid(pid, &status, WNOHANG) == pid; },
                        Deadline::After(20 * kNsPerSec), 5 * kNsPerMs);
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_CASE("lab recover: reverts a fault whose owner was SIGKILLed", "[.root][integration]") {
  testing::ScopedStateDir state;  // the child inherits FAULTLINE_STATE_DIR
  auto l = testing::TestLab::Up(testing::kSmallRail);
  REQUIRE(l.ok());
  auto& lab = (*l)->lab();
  FaultJournal journal;
  // `lab inject` without --for holds the fault until interrupted.
  pid_t owner = Spawn({"lab", "inject", lab.name(), "tor_port_down", "--target", "tor0.h0"});
  REQUIRE(owner > 0);
  struct Guard {
    pid_t pid;
    ~Guard() {
      if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } guard{owner};
  bool applied = WaitUntil(
      [&] {
        auto e = journal.List();
        return e.ok() && e->size() == 1 && (*e)[0].phase == "applied";
      },
      Deadline::After(10 * kNsPerSec), 5 * kNsPerMs);
  REQUIRE(applied);
  REQUIRE(kill(owner, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(owner, &status, 0) == owner);
  guard.pid = -1;
  CHECK(WTERMSIG(status) == SIGKILL);
  // The fault outlived its owner...
  auto st = GetLink(lab.NetnsOf("tor0"), "h0");
  REQUIRE(st.ok());
  CHECK_FALSE(st->admin_up);
  CHECK(journal.List()->size() == 1);
  // ...until recovery.
  CHECK(RunToEnd({"lab", "recover"}) == 0);
  st = GetLink(lab.NetnsOf("tor0"), "h0");
  REQUIRE(st.ok());
  CHECK(st->admin_up);
  CHECK(journal.List()->empty());
  CHECK(testing::TcpWorks(lab.NetnsOf("h0"), lab.NetnsOf("h1"), (*l)->Addr("h1", "nic0"),
                          5 * kNsPerSec)
            .ok());
  CHECK(RunToEnd({"lab", "recover"}) == 0);  // nothing left: harmless
}

// Regression: one entry with a string where a number belongs made `lab recover` abort (exit
// 134) before it reverted anything. Now that entry is moved aside and named, and the good
// one beside it is still reverted.
TEST_CASE("lab recover: a corrupt journal entry is moved aside, the others are still reverted",
          "[.root][integration]") {
  testing::ScopedStateDir state;
  auto l = testing::TestLab::Up(testing::kSmallRail);
  REQUIRE(l.ok());
  auto& lab = (*l)->lab();
  FaultJournal journal;
  pid_t owner = Spawn({"lab", "inject", lab.name(), "tor_port_down", "--target", "tor0.h0"});
  REQUIRE(owner > 0);
  struct Guard {
    pid_t pid;
    ~Guard() {
      if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } guard{owner};
  bool applied = WaitUntil(
      [&] {
        auto e = journal.List();
        return e.ok() && e->size() == 1 && (*e)[0].phase == "applied";
      },
      Deadline::After(10 * kNsPerSec), 5 * kNsPerMs);
  REQUIRE(applied);
  REQUIRE(kill(owner, SIGKILL) == 0);
  REQUIRE(waitpid(owner, nullptr, 0) == owner);
  guard.pid = -1;
  REQUIRE_FALSE(GetLink(lab.NetnsOf("tor0"), "h0")->admin_up);
  // Sorted before the good entry, so that it is met first.
  const std::string bad = journal.dir() + "/a-corrupt.json";
  REQUIRE(WriteFileAtomic(bad, R"({"owner_pid": "x", "owner_start": 1, "phase": "applied",
                                   "handle": {"id": "a-corrupt", "kind": "tor_port_down",
                                              "target": "tor0.h1"}})")
              .ok());

  const std::string err = state.path() + "/recover.err";
  int rc = RunToEnd({"lab", "recover"}, err);
  CHECK(rc != 134);
  CHECK(rc == 3);  // something could not be recovered: the operator must look
  auto st = GetLink(lab.NetnsOf("tor0"), "h0");
  REQUIRE(st.ok());
  CHECK(st->admin_up);  // the good entry was reverted
  CHECK(journal.List()->empty());
  CHECK(access(bad.c_str(), F_OK) != 0);
  CHECK(access((bad + ".corrupt").c_str(), F_OK) == 0);
  std::string text = ReadFile(err).value_or("");
  INFO(text);
  CHECK(text.find(bad + ".corrupt") != std::string::npos);  // named in the message
  CHECK(RunToEnd({"lab", "recover"}) == 0);                 // nothing left: harmless
}

TEST_CASE("lab inject: holds for --for then reverts and leaves nothing", "[.root][integration]") {
  testing::ScopedStateDir state;
  auto l = testing::TestLab::Up(testing::kSmallRail);
  REQUIRE(l.ok());
  auto& lab = (*l)->lab();
  CHECK(RunToEnd({"lab", "inject", lab.name(), "nic_port_flap", "--target", "h0.nic0", "--for",
                  "100ms"}) == 0);
  CHECK(GetLink(lab.NetnsOf("h0"), "nic0")->admin_up);
  CHECK(FaultJournal().List()->empty());
  // Bad input: exit 2, nothing applied.
  CHECK(RunToEnd({"lab", "inject", lab.name(), "nic_port_flap", "--target", "h7.nic0"}) == 2);
  CHECK(RunToEnd({"lab", "inject", lab.name(), "nic_port_flap", "--target", "h0.nic0", "--for",
                  "-2s"}) == 2);
  CHECK(RunToEnd({"lab", "inject", lab.name(), "nic_port_flap", "--target", "h0.nic0", "--param",
                  "bogus=1"}) == 2);
  CHECK(FaultJournal().List()->empty());
}

}  // namespace
}  // namespace fl::injectors

namespace fl::injectors {
namespace {

TEST_CASE("lab inject: Ctrl-C reverts the held fault", "[.root][integration]") {
  testing::ScopedStateDir state;
  auto l = testing::TestLab::Up(testing::kSmallRail);
  REQUIRE(l.ok());
  auto& lab = (*l)->lab();
  FaultJournal journal;
  pid_t owner = Spawn({"lab", "inject", lab.name(), "link_blackhole", "--target", "h1.nic0"});
  REQUIRE(owner > 0);
  bool applied = WaitUntil(
      [&] {
        auto e = journal.List();
        return e.ok() && e->size() == 1 && (*e)[0].phase == "applied";
      },
      Deadline::After(10 * kNsPerSec), 5 * kNsPerMs);
  CHECK(applied);
  REQUIRE(kill(owner, SIGINT) == 0);
  int status = 0;
  bool exited = WaitUntil([&] { return waitpid(owner, &status, WNOHANG) == owner; },
                          Deadline::After(10 * kNsPerSec), 5 * kNsPerMs);
  if (!exited) {
    kill(owner, SIGKILL);
    waitpid(owner, &status, 0);
  }
  REQUIRE(exited);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(journal.List()->empty());
  CHECK(testing::TcpWorks(lab.NetnsOf("h0"), lab.NetnsOf("h1"), (*l)->Addr("h1", "nic0"),
                          5 * kNsPerSec)
            .ok());
}

}  // namespace
}  // namespace fl::injectors
