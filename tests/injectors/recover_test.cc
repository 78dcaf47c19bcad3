// Root-gated: SIGKILL the process that applied a fault; `faultline lab recover` reverts it.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "injectors/journal.h"
#include "injectors/netlink.h"
#include "tests/injectors/lab_testing.h"

namespace fl::injectors {
namespace {

// Runs the faultline binary with argv; returns the child's pid (stdout/stderr to /dev/null).
pid_t Spawn(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {FL_FAULTLINE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c;
  for (auto& a : argv) c.push_back(a.data());
  c.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execv(c[0], c.data());
    _exit(127);
  }
  return pid;
}

int RunToEnd(const std::vector<std::string>& args) {
  pid_t pid = Spawn(args);
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
