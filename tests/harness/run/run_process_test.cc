// `faultline run` and the process layer: a run started from a directory that holds hostile
// executables, with '.' first in PATH, never runs them (the observed bug: an `rm` in the
// working directory ran as root during clean-up), and the run directory is gone afterwards.
// Root only.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "common/build_info.h"
#include "common/file_util.h"
#include "injectors/journal.h"
#include "reports/store/store.h"
#include "tests/child_process.h"
#include "tests/harness/run_testing.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using testing::ChildProcess;
using testing::Netns;
using testing::TempDir;
using testing::WriteLab;

TEST_CASE(
    "faultline run: an rm in the working directory and first in PATH is never run, the "
    "run directory is removed",
    "[.root][serial][integration]") {
  TempDir dir("fl_run_cwd");
  REQUIRE_FALSE(dir.path().empty());
  const std::string marker = dir.path() + "/marker";
  // Every tool the run or its clean-up could look up by name.
  for (const char* tool : {"rm", "ip", "tc", "nft", "sh", "faultline-agent", "faultline-worker"}) {
    std::string p = dir.path() + "/" + tool;
    REQUIRE(
        WriteFileAtomic(p, "#!/bin/sh\necho " + std::string(tool) + " >> " + marker + "\n").ok());
    REQUIRE(chmod(p.c_str(), 0755) == 0);
  }
  std::string lab = WriteLab(dir.path());
  std::string scenario = dir.path() + "/scenario.yaml";
  REQUIRE(WriteFileAtomic(scenario,
                          "name: hostile_cwd\nseed: 3\nlab: {topology: " + lab +
                              "}\n"
                              "job:\n  size: 64KiB\n  duration: 2s\n  warmup_iterations: 5\n"
                              "  collective_timeout: 20s\n"
                              "faults:\n  - kind: bandwidth_throttle\n    target: h0.nic0\n"
                              "    at: 300ms\n    duration: 500ms\n    params: {rate: 200mbit}\n"
                              "expectations:\n  survives: true\n")
              .ok());
  const char* old_path = std::getenv("PATH");
  std::string saved = old_path ? old_path : "";
  setenv("PATH", (".:" + dir.path() + ":" + saved).c_str(), 1);
  // A CI system's commit becomes a tag; the run stores the build's own git revision.
  setenv("GITHUB_SHA", "0123456789abcdef", 1);
  unsetenv("FAULTLINE_GIT_REVISION");
  auto before = Netns();
  std::optional<int> rc;
  {
    ChildProcess::Options o;
    o.out = dir.path() + "/out.txt";
    o.err = dir.path() + "/err.txt";
    o.cwd = dir.path();  // relative names would find the fakes here
    o.stop_signal = SIGINT;
    o.stop_grace = 90 * kNsPerSec;
    ChildProcess f({std::string(FL_BUILD_DIR) + "/bin/faultline", "run", scenario, "--db",
                    dir.path() + "/r.db"},
                   o);
    rc = f.Wait(Deadline::After(300 * kNsPerSec));
  }
  setenv("PATH", saved.c_str(), 1);
  unsetenv("GITHUB_SHA");
  INFO(ReadFile(dir.path() + "/err.txt").value_or(""));
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(access(marker.c_str(), F_OK) != 0);  // no fake was ever run
  INFO(ReadFile(marker).value_or(""));
  CHECK(Netns() == before);
  auto store = reports::Store::Open(dir.path() + "/r.db", {.create = false});
  REQUIRE(store.ok());
  auto runs = (*store)->ListRuns({});
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  std::string run_dir = injectors::StateDir() + "/runs/" + runs->front().id;
  CHECK(access(run_dir.c_str(), F_OK) != 0);
  // Built from a git clone (CI's is one): the revision is there, as `faultline --version` says.
  CHECK(runs->front().git_revision == BuildGitRevision());
  if (access((std::string(FL_SOURCE_DIR) + "/.git").c_str(), F_OK) == 0)
    CHECK_FALSE(runs->front().git_revision.empty());
  CHECK(runs->front().tags.count("GITHUB_SHA") == 1);
  if (runs->front().tags.count("GITHUB_SHA"))
    CHECK(runs->front().tags.at("GITHUB_SHA") == "0123456789abcdef");
}

// A run whose expectation fails (the job survives a throttle, the scenario says it must not)
// keeps its directory with --keep-run-dir, token removed; the test removes it.
TEST_CASE("faultline run --keep-run-dir: a failed run's directory is kept, without its token",
          "[.root][integration]") {
  TempDir dir("fl_run_keep");
  REQUIRE_FALSE(dir.path().empty());
  std::string scenario = dir.path() + "/scenario.yaml";
  REQUIRE(WriteFileAtomic(scenario,
                          "name: keep_dir\nseed: 3\nlab: {topology: " + WriteLab(dir.path()) +
                              "}\n"
                              "job:\n  size: 64KiB\n  duration: 2s\n  warmup_iterations: 5\n"
                              "  collective_timeout: 20s\n"
                              "faults:\n  - kind: bandwidth_throttle\n    target: h0.nic0\n"
                              "    at: 300ms\n    duration: 500ms\n    params: {rate: 200mbit}\n"
                              "expectations:\n  survives: false\n")
              .ok());
  std::optional<int> rc;
  {
    ChildProcess::Options o;
    o.out = dir.path() + "/out.txt";
    o.err = dir.path() + "/err.txt";
    o.stop_signal = SIGINT;
    o.stop_grace = 90 * kNsPerSec;
    ChildProcess f({std::string(FL_BUILD_DIR) + "/bin/faultline", "run", scenario, "--db",
                    dir.path() + "/r.db", "--keep-run-dir"},
                   o);
    rc = f.Wait(Deadline::After(300 * kNsPerSec));
  }
  INFO(ReadFile(dir.path() + "/err.txt").value_or(""));
  REQUIRE(rc.has_value());
  CHECK(*rc == 1);
  auto store = reports::Store::Open(dir.path() + "/r.db", {.create = false});
  REQUIRE(store.ok());
  auto runs = (*store)->ListRuns({});
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  std::string run_dir = injectors::StateDir() + "/runs/" + runs->front().id;
  struct Remove {
    std::string dir;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove{run_dir};
  CHECK(access(run_dir.c_str(), F_OK) == 0);
  CHECK(access((run_dir + "/token").c_str(), F_OK) != 0);
}

}  // namespace
}  // namespace fl::harness

namespace fl::harness {
namespace {

std::string Capture(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  return out;
}

TEST_CASE("faultline --version and faultline version print the version and git revision",
          "[unit]") {
  const std::string bin = std::string(FL_BUILD_DIR) + "/bin/faultline";
  const std::string rev = BuildGitRevision().empty() ? "unknown" : std::string(BuildGitRevision());
  const std::string want = "faultline " + std::string(BuildVersion()) + " (git " + rev + ")\n";
  CHECK(Capture(bin + " --version") == want);
  CHECK(Capture(bin + " version") == want);
}

}  // namespace
}  // namespace fl::harness
