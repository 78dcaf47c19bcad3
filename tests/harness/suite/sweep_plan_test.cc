// Sweep plans: axes from text, the grid's point scenarios, the window's count, sweep files and
// their errors (harness/suite/sweep_plan.h).
#include "harness/suite/sweep_plan.h"

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "harness/scenario/scenario_loader.h"
#include "tests/test_util.h"

namespace fl::harness::suite {
namespace {

using testing::TempDir;

constexpr const char* kScenario = R"(name: flap
lab:
  topology: LAB
job:
  workload: allreduce_loop
  ccl: ftccl
  iterations: 100
faults:
  - kind: nic_port_flap
    target: h1.nic0
    at: 500ms
    every: 1s
    count: 2
    duration: 100ms
)";

struct Fixture {
  TempDir dir{"fl_sweep"};
  std::string scenario;
  const std::string lab = FL_SOURCE_DIR "/configs/labs/rail4.yaml";
  Fixture() {
    scenario = dir.path() + "/flap.yaml";
    std::string text = kScenario;
    text.replace(text.find("LAB"), 3, lab);
    REQUIRE(WriteFileAtomic(scenario, text).ok());
  }
};

TEST_CASE("sweep axes: log and linear ranges, lists, units and refusals", "[unit]") {
  auto log = ParseAxis("faults[0].every=100ms..10s:log:12", "--vary");
  REQUIRE(log.ok());
  CHECK(log->path == "faults[0].every");
  CHECK(log->label == "every");
  CHECK(log->unit == AxisUnit::kDuration);
  CHECK(log->log);
  REQUIRE(log->values.size() == 12);
  CHECK(log->values.front() == "100ms");
  CHECK(log->values[1] == "152ms");
  CHECK(log->values[6] == "1.23s");
  CHECK(log->values.back() == "10s");
  CHECK(log->numbers.front() == Approx(0.1));
  CHECK(log->numbers.back() == Approx(10));

  auto lin = ParseAxis("job.size=64KiB..256KiB:lin:4", "--vary");
  REQUIRE(lin.ok());
  CHECK(lin->unit == AxisUnit::kBytes);
  CHECK(lin->values == std::vector<std::string>{"64KiB", "128KiB", "192KiB", "256KiB"});

  auto num = ParseAxis("job.ccl_options.dead_timeout_ms=100..400:lin:4", "--vary");
  REQUIRE(num.ok());
  CHECK(num->unit == AxisUnit::kNone);
  CHECK(num->values == std::vector<std::string>{"100", "200", "300", "400"});

  auto list = ParseAxis("faults[0].duration=20ms,100ms,500ms", "--vary");
  REQUIRE(list.ok());
  CHECK(list->unit == AxisUnit::kDuration);
  CHECK(list->numbers[2] == Approx(0.5));
  auto words = ParseAxis("job.ccl=ftccl,gloo", "--vary");
  REQUIRE(words.ok());
  CHECK(std::isnan(words->numbers[0]));

  auto error = [](const char* text) {
    auto a = ParseAxis(text, "--vary 'x'");
    return a.ok() ? std::string() : a.status().message();
  };
  CHECK(error("faults[0].every").find("want PATH=") != std::string::npos);
  CHECK(error("faults[0.every=1s,2s").find("not a path of scenario keys") != std::string::npos);
  CHECK(error("a=1s..2s:cubic:3").find("spacing 'cubic'") != std::string::npos);
  CHECK(error("a=1s..2s:log:1").find("from 2 to 100") != std::string::npos);
  CHECK(error("a=2s..1s:log:3").find("must go up") != std::string::npos);
  CHECK(error("a=0..1s:log:3").find("same kind of unit") != std::string::npos);
  CHECK(error("a=0s..1s:log:3").find("start above 0") != std::string::npos);
  CHECK(error("a=1s..1.001s:lin:50").find("repeat at 3 significant digits") != std::string::npos);
  CHECK(error("a=1s,1s").find("listed twice") != std::string::npos);
  CHECK(error("a=x: y").find("YAML punctuation") == std::string::npos);  // ':' is allowed
  CHECK(error("a={x}").find("YAML punctuation") != std::string::npos);
  CHECK(error("a=1s..2s:log:3").empty());
  CHECK(error("a=1s..2s:log:3").rfind("", 0) == 0);
}

TEST_CASE(
    "sweep points: each point's scenario has its values, the window's count and an "
    "absolute lab path - the scenario refuses what it must",
    "[unit]") {
  Fixture f;
  auto spec = SweepOfScenario(f.scenario);
  REQUIRE(spec.ok());
  REQUIRE(ApplyVaryFlags({"faults[0].every=100ms,1s,4s", "faults[0].duration=50ms,200ms"}, &*spec)
              .ok());
  spec->window_ns = 2 * kNsPerSec;
  auto points = PlanPoints(*spec);
  REQUIRE(points.ok());
  REQUIRE(points->size() == 6);
  // Row-major, the last axis fastest.
  CHECK((*points)[1].label == "every=100ms duration=200ms");
  CHECK((*points)[2].label == "every=1s duration=50ms");
  CHECK((*points)[2].coords == std::vector<size_t>{1, 0});
  YAML::Node p = YAML::Load((*points)[0].yaml);
  CHECK(p["faults"][0]["every"].as<std::string>() == "100ms");
  CHECK(p["faults"][0]["duration"].as<std::string>() == "50ms");
  CHECK(p["faults"][0]["count"].as<int>() == 20);                             // 2 s / 100 ms
  CHECK(YAML::Load((*points)[4].yaml)["faults"][0]["count"].as<int>() == 1);  // 4 s > window
  CHECK(p["lab"]["topology"].as<std::string>() == f.lab);
  CHECK(p["faults"][0]["at"].as<std::string>() == "500ms");  // untouched
  // Each point loads as a scenario but the one whose down time is not under its period.
  auto ok = ParseScenario((*points)[2].yaml, f.scenario);
  CHECK(ok.ok());
  auto bad = ParseScenario((*points)[1].yaml, f.scenario);  // 200 ms down every 100 ms
  CHECK_FALSE(bad.ok());

  // A later --vary of the same path replaces the axis.
  REQUIRE(ApplyVaryFlags({"faults[0].every=2s,3s"}, &*spec).ok());
  CHECK(spec->axes.size() == 2);
  CHECK(spec->axes[0].values == std::vector<std::string>{"2s", "3s"});

  // A missing key at the end is added; a missing one on the way is an error naming it.
  SweepSpec s2 = *spec;
  s2.axes.clear();
  REQUIRE(ApplyVaryFlags({"faults[0].jitter=1ms,2ms"}, &s2).ok());
  auto added = PlanPoints(s2);
  REQUIRE(added.ok());
  CHECK(YAML::Load((*added)[1].yaml)["faults"][0]["jitter"].as<std::string>() == "2ms");
  s2.axes.clear();
  REQUIRE(ApplyVaryFlags({"faults[3].every=1s,2s"}, &s2).ok());
  auto missing = PlanPoints(s2);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("'faults' has no element 3") != std::string::npos);
  s2.axes.clear();
  CHECK(CheckSweep(s2).message().find("nothing to sweep") != std::string::npos);
}

TEST_CASE("sweep file: keys, the CCLs' own settings, the plan hash, errors with their place",
          "[unit]") {
  Fixture f;
  const std::string path = f.dir.path() + "/sweep.yaml";
  auto parse = [&](const std::string& text) { return ParseSweep(text, path); };
  auto s = parse(R"(name: flaps
scenario: flap.yaml
vary:
  - faults[0].every=100ms..1s:log:3
  - faults[0].duration=20ms,50ms
window: 1500ms
ccls:
  - ftccl
  - name: gloo
    set:
      restart.max_restarts: 2
repeats: 3
seed: 7
)");
  REQUIRE(s.ok());
  CHECK(s->name == "flaps");
  CHECK(s->scenario_path == f.scenario);
  CHECK(s->axes.size() == 2);
  CHECK(s->repeats == 3);
  CHECK(s->window_ns == 1500 * kNsPerMs);
  CHECK(s->seed == 7u);
  REQUIRE(s->ccls.size() == 2);
  CHECK(s->ccls[1].name == "gloo");
  REQUIRE(s->ccl_sets.size() == 2);
  CHECK(s->ccl_sets[0].empty());
  REQUIRE(s->ccl_sets[1].size() == 1);
  CHECK(s->ccl_sets[1][0].first == "restart.max_restarts");
  // A set: path not in the scenario is made.
  auto applied = ApplySets("job: {ccl: gloo}\n", s->ccl_sets[1], "x");
  REQUIRE(applied.ok());
  CHECK(YAML::Load(*applied)["restart"]["max_restarts"].as<int>() == 2);
  // The hash tells plans apart.
  SweepSpec other = *s;
  other.repeats = 2;
  CHECK(PlanHash(*s) == PlanHash(*s));
  CHECK(PlanHash(*s) != PlanHash(other));

  auto error = [&](const std::string& text) {
    auto r = parse(text);
    return r.ok() ? std::string() : r.status().message();
  };
  CHECK(error("scenario: flap.yaml\nvary: [a=1s..2s:cubic:3]\n").rfind(path + ":2:8:", 0) == 0);
  CHECK(error("scenario: flap.yaml\nrepeats: 0\n").find("repeats must be between 1 and 100") !=
        std::string::npos);
  CHECK(error("scenario: nope.yaml\n").rfind(path + ":1:11:", 0) == 0);
  CHECK(error("scenario: flap.yaml\nvary:\n  - a=1s,2s\n  - a=3s,4s\n").find("varied twice") !=
        std::string::npos);
  CHECK(error("scenario: flap.yaml\nccls: [{name: gloo, set: {'x[': 1}}]\n")
            .find("not a path of scenario keys") != std::string::npos);
  CHECK(error("scenario: flap.yaml\nspeed: 3\n").find("unknown key 'speed'") != std::string::npos);
  CHECK(LooksLikeSweepFile(f.scenario) == false);
  REQUIRE(WriteFileAtomic(path, "scenario: flap.yaml\nvary: [a=1s,2s]\n").ok());
  CHECK(LooksLikeSweepFile(path));
}

}  // namespace
}  // namespace fl::harness::suite
