// One run at a time on a lab of real hosts (harness/run/lab_claim.h): the claim refuses a
// second holder naming the first, goes with its holder (also a holder killed -9), and leaves
// no file.
#include "harness/run/lab_claim.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "tests/test_util.h"

namespace fl::harness::run {
namespace {

// FAULTLINE_STATE_DIR pointed at a folder of the test's for the scope.
struct StateDirScope {
  explicit StateDirScope(const std::string& dir) { setenv("FAULTLINE_STATE_DIR", dir.c_str(), 1); }
  ~StateDirScope() { unsetenv("FAULTLINE_STATE_DIR"); }
};

TEST_CASE("lab claim: a second run on a held lab is refused naming the holder", "[unit]") {
  testing::TempDir dir("fl_claim");
  StateDirScope state(dir.path());
  auto first = LabClaim::Take("inventory", "rack7");
  REQUIRE(first.ok());
  CHECK(std::filesystem::exists((*first)->path()));
  auto second = LabClaim::Take("inventory", "rack7");
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == Code::kFailedPrecondition);
  CHECK(second.status().message().find("lab rack7 is in use by pid " + std::to_string(getpid())) !=
        std::string::npos);
  REQUIRE((*first)->SetRun("r20261204-1").ok());
  auto third = LabClaim::Take("inventory", "rack7");
  REQUIRE_FALSE(third.ok());
  CHECK(third.status().message().find("in use by run r20261204-1 (pid ") != std::string::npos);
  // Another lab, or the same name of another kind, is free.
  CHECK(LabClaim::Take("inventory", "rack8").ok());
  CHECK(LabClaim::Take("slurm", "rack7").ok());
  const std::string path = (*first)->path();
  first->reset();
  CHECK_FALSE(std::filesystem::exists(path));  // nothing left
  CHECK(LabClaim::Take("inventory", "rack7").ok());
  CHECK(LabClaim::Take("inventory", "../etc").status().code() == Code::kInvalidArgument);
}

TEST_CASE("lab claim: a holder killed -9 holds nothing", "[unit]") {
  testing::TempDir dir("fl_claim");
  StateDirScope state(dir.path());
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto c = LabClaim::Take("inventory", "rack7");
    char b = c.ok() ? 'y' : 'n';
    (void)!write(ready[1], &b, 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char b = 0;
  REQUIRE(read(ready[0], &b, 1) == 1);
  close(ready[0]);
  REQUIRE(b == 'y');
  CHECK_FALSE(LabClaim::Take("inventory", "rack7").ok());
  auto other = LabClaim::Take("inventory", "rack8");  // a live holder's claim
  REQUIRE(other.ok());
  kill(child, SIGKILL);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  // Its file stays behind, unlocked: the clean-up removes it and leaves the held one.
  const std::string stale = dir.path() + "/claims/inventory-rack7.claim";
  CHECK(std::filesystem::exists(stale));
  auto removed = RemoveStaleClaims();
  REQUIRE(removed.ok());
  CHECK(*removed == 1);
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists((*other)->path()));
  auto after = LabClaim::Take("inventory", "rack7");
  INFO((after.ok() ? "" : after.status().message()));
  CHECK(after.ok());
  other->reset();
  after->reset();
  CHECK(std::filesystem::is_empty(dir.path() + "/claims"));  // nothing left
}

}  // namespace
}  // namespace fl::harness::run
