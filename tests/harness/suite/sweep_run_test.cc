// `faultline sweep` end to end on a real (small) local lab: one lab for every point, runs
// tagged with their point, an interrupted sweep resumed without running a point twice, and
// nothing left behind; `faultline run --on-lab` refusing a lab that is not as it was built.
// Root only.
#include <signal.h>
#include <unistd.h>

#include <dirent.h>
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "common/file_util.h"
#include "injectors/journal.h"
#include "reports/store/store.h"
#include "tests/harness/run_testing.h"
#include "tests/test_util.h"

namespace fl::harness::suite {
namespace {

using testing::Faultline;
using testing::TempDir;
using testing::WriteLab;

// Namespaces of labs named with `prefix` ("sw": a sweep's).
std::set<std::string> LabNetns(const std::string& prefix) {
  std::set<std::string> out;
  if (DIR* d = opendir("/run/netns")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind("fl-" + prefix, 0) == 0) out.insert(e->d_name);
    closedir(d);
  }
  return out;
}

std::string WriteFlapScenario(const std::string& dir, const std::string& lab) {
  const std::string p = dir + "/flap.yaml";
  REQUIRE(WriteFileAtomic(p, "name: sweep_flap\nseed: 2\nlab: {topology: " + lab +
                                 "}\njob:\n  size: 256KiB\n  iterations: 300\n"
                                 "  warmup_iterations: 10\n  collective_timeout: 5s\n"
                                 "faults:\n  - kind: nic_port_flap\n    target: h0.nic0\n"
                                 "    at: 300ms\n    every: 400ms\n    count: 2\n"
                                 "    duration: 50ms\nexpectations:\n  exact_correctness: true\n")
              .ok());
  return p;
}

bool WaitFor(const std::function<bool()>& cond, Nanos limit) {
  return WaitUntil(cond, Deadline::After(limit), 50 * kNsPerMs);
}

TEST_CASE(
    "sweep: one lab for every point, interrupted and resumed without a point run twice, "
    "nothing left behind",
    "[.root]") {
  TempDir dir("fl_sweep_run");
  const std::string lab = WriteLab(dir.path());
  const std::string scenario = WriteFlapScenario(dir.path(), lab);
  const std::string db = dir.path() + "/results.db";
  const std::vector<std::string> args = {
      "sweep", scenario, "--vary", "faults[0].duration=50ms,100ms", "--repeats", "2", "--db", db};
  const auto before = LabNetns("sw");
  {
    // A misspelt path is the sweep's mistake: exit 2 before any lab or run.
    Faultline bad({"sweep", scenario, "--vary", "faults[0].evry=1s,2s", "--db", db}, dir.path(),
                  "bad");
    REQUIRE(bad.Wait(Deadline::After(30 * kNsPerSec)) == std::optional<int>(2));
    CHECK(bad.err().find("unknown key 'evry'") != std::string::npos);
    CHECK(access(db.c_str(), F_OK) != 0);
  }
  std::string sweep_id;
  {
    Faultline first(args, dir.path(), "first");
    // Interrupted once its first run is in.
    REQUIRE(WaitFor(
        [&] {
          return first.err().find("[1/4] ") != std::string::npos &&
                 (first.err().find("rep 1/2: PASS") != std::string::npos ||
                  first.err().find("rep 1/2: FAIL") != std::string::npos);
        },
        120 * kNsPerSec));
    CHECK(first.err().find("is up for the sweep") != std::string::npos);
    CHECK(LabNetns("sw").size() > before.size());  // the sweep's lab, up between runs
    kill(first.pid(), SIGINT);
    auto rc = first.Wait(Deadline::After(120 * kNsPerSec));
    REQUIRE(rc.has_value());
    CHECK(*rc == 130);
    std::smatch m;
    const std::string err = first.err();
    REQUIRE(std::regex_search(err, m, std::regex("--resume (s[0-9a-f-]+)")));
    sweep_id = m[1];
  }
  CHECK(LabNetns("sw") == before);  // torn down on Ctrl-C
  {
    Faultline second(
        [&] {
          auto a = args;
          a.insert(a.end(), {"--resume", sweep_id, "--json", dir.path() + "/map.json", "--html",
                             dir.path() + "/map.html"});
          return a;
        }(),
        dir.path(), "second");
    auto rc = second.Wait(Deadline::After(240 * kNsPerSec));
    REQUIRE(rc.has_value());
    INFO(second.err());
    CHECK(*rc == 0);
    CHECK(second.err().find("done before") != std::string::npos);
    CHECK(second.err().find("point overhead") != std::string::npos);
  }
  CHECK(LabNetns("sw") == before);
  // Its record of the lab it kept up is gone with the lab.
  int owners = 0;
  if (DIR* d = opendir((injectors::StateDir() + "/sweeps").c_str())) {
    while (dirent* e = readdir(d)) owners += e->d_name[0] != '.';
    closedir(d);
  }
  CHECK(owners == 0);
  // Every point x repeat finished exactly once, tagged with its point and values.
  auto store = reports::Store::Open(db);
  REQUIRE(store.ok());
  reports::RunFilter f;
  f.tags["sweep"] = sweep_id;
  auto runs = (*store)->ListRuns(f);
  REQUIRE(runs.ok());
  std::map<std::pair<std::string, std::string>, int> finished;
  for (const auto& r : *runs)
    if (r.status == reports::RunStatus::kPassed || r.status == reports::RunStatus::kFailed) {
      ++finished[{r.tags.at("sweep.point"), r.tags.at("sweep.rep")}];
      CHECK(r.tags.at("sweep.duration") == (r.tags.at("sweep.point") == "0" ? "50ms" : "100ms"));
    }
  CHECK(finished.size() == 4);
  for (const auto& [k, n] : finished) CHECK(n == 1);
  // The map: both points with their two repeats.
  auto j = nlohmann::json::parse(ReadFile(dir.path() + "/map.json").value_or("{}"));
  REQUIRE(j["cells"].size() == 2);
  for (const auto& c : j["cells"]) CHECK(c["runs"].size() == 2);
  CHECK(ReadFile(dir.path() + "/map.html").value_or("").find("failovers") != std::string::npos);
}

TEST_CASE(
    "run --on-lab: a lab left as built is used and stays up - one changed is refused, "
    "naming the difference",
    "[.root]") {
  TempDir dir("fl_on_lab");
  const std::string lab = WriteLab(dir.path());
  const std::string scenario = WriteFlapScenario(dir.path(), lab);
  const std::string db = dir.path() + "/results.db";
  // Not "sw...": the sweep test beside this one counts the namespaces of "fl-sw" labs.
  const std::string name = "onlab" + std::to_string(getpid() % 10000);
  testing::LabUp lab_up(lab, name, dir.path());
  REQUIRE(lab_up.ok());
  {
    Faultline run({"run", scenario, "--db", db, "--on-lab", name, "-q"}, dir.path(), "run1");
    auto rc = run.Wait(Deadline::After(120 * kNsPerSec));
    INFO(run.out() + run.err());
    // Its verdicts are the scenario's business (0 or 1): the lab took the run.
    REQUIRE(rc.has_value());
    CHECK((*rc == 0 || *rc == 1));
    CHECK(run.out().find("results in") != std::string::npos);
  }
  CHECK(LabNetns(name).size() > 0);  // still up
  // A link left down: refused before anything runs.
  REQUIRE(system(("ip -n fl-" + name + "-h0 link set nic1 down").c_str()) == 0);
  {
    Faultline run({"run", scenario, "--db", db, "--on-lab", name, "-q"}, dir.path(), "run2");
    auto rc = run.Wait(Deadline::After(120 * kNsPerSec));
    CHECK(rc == std::optional<int>(3));
    CHECK(run.err().find("is not as it was built") != std::string::npos);
    CHECK(run.err().find("h0 links") != std::string::npos);
  }
  // Another topology than the lab's: refused.
  const std::string other = dir.path() + "/other.yaml";
  REQUIRE(
      WriteFileAtomic(other, "name: other\nhosts: 2\ngpus_per_host: 1\nnics_per_host: 2\n").ok());
  {
    Faultline run({"run", scenario, "--db", db, "--on-lab", name, "--lab", other, "-q"}, dir.path(),
                  "run3");
    auto rc = run.Wait(Deadline::After(60 * kNsPerSec));
    CHECK(rc == std::optional<int>(3));
    CHECK(run.err().find("was built from") != std::string::npos);
  }
}

}  // namespace
}  // namespace fl::harness::suite
