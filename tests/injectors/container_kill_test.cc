// Root-gated: container_kill takes a container's whole process tree down with SIGKILL.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include "injectors/container_runtime.h"
#include "injectors/injection.h"
#include "tests/injectors/lab_testing.h"

namespace fl::injectors {
namespace {

TEST_CASE("container_kill: the container's process tree is gone and was killed by signal 9",
          "[.root][integration]") {
  testing::ScopedStateDir state;
  InjectorRegistry registry("injector");
  REQUIRE(RegisterBuiltinInjectors(registry).ok());
  FaultJournal journal;
  auto l = testing::TestLab::Up(testing::kSmallRail);
  REQUIRE(l.ok());
  auto& lab = (*l)->lab();
  // pid 1 of the container plus two children.
  auto c = lab.StartContainer("h0", 0, {"sh", "-c", "sleep 60 & sleep 60 & wait"});
  REQUIRE(c.ok());
  struct Reaper {  // never leave the container behind, even when a check fails
    int pid;
    ~Reaper() {
      if (pid <= 0) return;  // never kill(-1, ...): that would signal every process
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reaper{c->init_pid};
  REQUIRE(WaitUntil([&] { return CgroupProcs(c->cgroup_path).size() == 3; },
                    Deadline::After(3 * kNsPerSec)));
  // It really is in its own pid namespace, inside the host's network namespace.
  auto pids = CgroupProcs(c->cgroup_path);
  std::string init_ns, child_ns;
  char buf[64] = {};
  ssize_t n =
      readlink(("/proc/" + std::to_string(c->init_pid) + "/ns/pid").c_str(), buf, sizeof buf - 1);
  REQUIRE(n > 0);
  init_ns.assign(buf, n);
  n = readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
  CHECK(init_ns != std::string(buf, n));

  auto inj = registry.Create("container_kill");
  REQUIRE(inj.ok());
  FaultSpec spec{"container_kill", "h0.rank0", {}, 0, 1};
  auto h = InjectFault(**inj, spec, lab.fabric(), &journal);
  REQUIRE(h.ok());
  int status = 0;
  REQUIRE(waitpid(c->init_pid, &status, 0) == c->init_pid);
  reaper.pid = -1;
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(CgroupProcs(c->cgroup_path).empty());
  for (int pid : pids) CHECK(kill(pid, 0) != 0);
  REQUIRE(RevertFault(**inj, *h, &journal).ok());
  CHECK(RevertFault(**inj, *h, &journal).ok());  // harmless
  CHECK(journal.List()->empty());
  // Overlap rule (docs/injectors.md): a second kill of a container that has no processes left
  // is refused before anything is journaled.
  auto again = InjectFault(**inj, spec, lab.fabric(), &journal);
  CHECK(again.status().code() == Code::kFailedPrecondition);
  CHECK(again.status().message().find("no processes") != std::string::npos);
  CHECK(journal.List()->empty());
  // The lab's traffic is unaffected.
  CHECK(testing::TcpWorks(lab.NetnsOf("h0"), lab.NetnsOf("h1"), (*l)->Addr("h1", "nic0"),
                          5 * kNsPerSec)
            .ok());
}

}  // namespace
}  // namespace fl::injectors
