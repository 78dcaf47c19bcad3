// faultline shrink: the reducer on a fake "still fails" ([unit]), and on real runs of a local
// lab: a 6-fault scenario that fails because of one fault shrinks to that fault ([.root]).
#include "harness/suite/shrink.h"

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "common/units.h"
#include "reports/store/store.h"
#include "tests/harness/run_testing.h"
#include "tests/test_util.h"

namespace fl::harness::suite {
namespace {

const char* kSixFaults = R"(name: six
seed: 7
faults:
  - {kind: bandwidth_throttle, target: h0.nic0, at: 300ms, duration: 300ms}
  - {kind: bandwidth_throttle, target: h0.nic1, at: 700ms, duration: 300ms}
  - {kind: nic_port_flap, target_class: nic, at: 3s, duration: 4s, every: 10s, count: 3}
  - {kind: bandwidth_throttle, target: h1.nic0, at: 1100ms, duration: 300ms}
  - {kind: bandwidth_throttle, target: h1.nic1, at: 1900ms, duration: 300ms}
  - {kind: bandwidth_throttle, target: h0.nic0, at: 2300ms, duration: 300ms}
expectations: {survives: true}
)";

// "Fails" while a nic_port_flap of at least 400 ms is in the scenario.
StatusOr<bool> FlapOfAtLeast400ms(const std::string& yaml) {
  YAML::Node n = YAML::Load(yaml);
  for (const auto& f : n["faults"]) {
    if (f["kind"].as<std::string>() != "nic_port_flap") continue;
    auto d = ParseDuration(f["duration"].as<std::string>());
    if (d.ok() && *d >= 400 * kNsPerMs) return true;
  }
  return false;
}

TEST_CASE("shrink: fewer faults, a target for the class, one firing, shorter and earlier",
          "[unit]") {
  int calls = 0;
  FailsSame fails = [&](const std::string& yaml, const std::string&) {
    ++calls;
    return FlapOfAtLeast400ms(yaml);
  };
  auto r = ShrinkScenario(kSixFaults, {{2, "h1.nic0"}}, fails, {});
  REQUIRE(r.ok());
  CHECK(r->faults_before == 6);
  CHECK(r->faults_after == 1);
  CHECK_FALSE(r->budget_spent);
  CHECK(r->runs == calls);
  YAML::Node n = YAML::Load(r->yaml);
  REQUIRE(n["faults"].size() == 1);
  YAML::Node f = n["faults"][0];
  CHECK(f["kind"].as<std::string>() == "nic_port_flap");
  CHECK(f["target"].as<std::string>() == "h1.nic0");
  CHECK_FALSE(f["target_class"]);
  CHECK(f["count"].as<int>() == 1);
  // 4s halved while >= 400 ms: 2000, 1000, 500 ms (250 no longer fails)
  CHECK(f["duration"].as<std::string>() == "500ms");
  // 3s halved four times: 1500, 750, 375, 187 ms (each still fails)
  CHECK(f["at"].as<std::string>() == "187ms");
  CHECK(n["name"].as<std::string>() == "six");
  CHECK(n["expectations"]["survives"].as<bool>());
  // The result still fails; no candidate was asked about twice (fewer calls than edits tried
  // naively: 6 single removals + 2 + 1 + 4 + 4).
  CHECK(*FlapOfAtLeast400ms(r->yaml));
  CHECK(calls < 20);
}

TEST_CASE(
    "shrink: anchors (after_event / during) are renumbered as faults go, and no variant keeps "
    "a fault whose anchor it dropped",
    "[unit]") {
  const char* yaml = R"(name: anchored
faults:
  - {kind: bandwidth_throttle, target: h0.nic0, at: 300ms, duration: 300ms}
  - {kind: nic_port_flap, target: h1.nic0, at: 3s, duration: 2s}
  - {kind: nic_port_flap, target: h2.nic0, during: f1, duration: 1s}
  - kind: link_blackhole
    target: h3.nic0
    after_event: {event: reverted, fault: f1, delay: 10ms}
expectations: {survives: true}
)";
  // "Fails" while a fault timed during another one is in the scenario; every variant asked
  // about must be a scenario whose anchors name earlier faults of it.
  std::vector<std::string> asked;
  FailsSame fails = [&](const std::string& y, const std::string&) -> StatusOr<bool> {
    asked.push_back(y);
    YAML::Node n = YAML::Load(y);
    bool nested = false;
    for (size_t i = 0; i < n["faults"].size(); ++i) {
      YAML::Node f = n["faults"][i];
      for (const char* key : {"during", "after_event"}) {
        if (!f[key]) continue;
        const std::string a =
            f[key].IsMap() ? f[key]["fault"].as<std::string>() : f[key].as<std::string>();
        CHECK(std::stoul(a.substr(1)) < i);
        nested = nested || std::string(key) == "during";
      }
    }
    return nested;
  };
  auto r = ShrinkScenario(yaml, {}, fails, {});
  REQUIRE(r.ok());
  CHECK_FALSE(asked.empty());
  YAML::Node n = YAML::Load(r->yaml);
  // The throttle and the blackhole go; the flap and the fault during it stay, renumbered.
  REQUIRE(n["faults"].size() == 2);
  CHECK(n["faults"][0]["target"].as<std::string>() == "h1.nic0");
  CHECK(n["faults"][1]["target"].as<std::string>() == "h2.nic0");
  CHECK(n["faults"][1]["during"].as<std::string>() == "f0");
}

TEST_CASE("shrink: a spent budget keeps the smallest failing scenario found so far", "[unit]") {
  FailsSame fails = [&](const std::string& yaml, const std::string&) {
    return FlapOfAtLeast400ms(yaml);
  };
  ShrinkBudget budget;
  budget.max_runs = 2;
  auto r = ShrinkScenario(kSixFaults, {}, fails, budget);
  REQUIRE(r.ok());
  CHECK(r->runs == 2);
  CHECK(r->budget_spent);
  CHECK(*FlapOfAtLeast400ms(r->yaml));
  CHECK(YAML::Load(r->yaml)["faults"].size() < 6);
  // A predicate that errs ends the shrink with its error; a scenario without faults is refused.
  FailsSame broken = [](const std::string&, const std::string&) -> StatusOr<bool> {
    return UnavailableError("lab gone");
  };
  CHECK(ShrinkScenario(kSixFaults, {}, broken, {}).status().code() == Code::kUnavailable);
  CHECK(ShrinkScenario("name: x\n", {}, fails, {}).status().code() == Code::kInvalidArgument);
}

TEST_CASE("faultline shrink: a failing 6-fault scenario shrinks to the one fault that fails it",
          "[.root][serial][integration]") {
  testing::TempDir dir("fl_shrink");
  const std::string lab = testing::WriteLab(dir.path());
  const std::string scenario = dir.path() + "/six.yaml";
  const std::string throttle = ", duration: 300ms, params: {rate: 500mbit}}\n";
  REQUIRE(
      WriteFileAtomic(scenario,
                      "name: shrink_me\nseed: 7\nlab: {topology: " + lab +
                          "}\njob:\n  size: 256KiB\n  duration: 4s\n  warmup_iterations: 10\n"
                          "  collective_timeout: 5s\n  hang_timeout: 8s\nfaults:\n"
                          "  - {kind: bandwidth_throttle, target: h0.nic0, at: 300ms" +
                          throttle + "  - {kind: bandwidth_throttle, target: h0.nic1, at: 600ms" +
                          throttle + "  - {kind: bandwidth_throttle, target: h1.nic0, at: 900ms" +
                          throttle + "  - {kind: container_kill, target: h1.rank1, at: 1200ms}\n" +
                          "  - {kind: bandwidth_throttle, target: h1.nic1, at: 1500ms" + throttle +
                          "  - {kind: bandwidth_throttle, target: h0.nic0, at: 1800ms" + throttle +
                          "expectations:\n  survives: true\n")
          .ok());
  const std::string db = dir.path() + "/r.db";
  auto before = testing::Netns();
  testing::Faultline run({"run", scenario, "--db", db}, dir.path(), "run");
  auto rc = run.Wait(Deadline::After(120 * kNsPerSec));
  INFO(run.err());
  REQUIRE(rc == 1);  // survives failed: the killed rank

  const std::string out = dir.path() + "/small.yaml";
  testing::Faultline shrink({"shrink", "latest", "--db", db, "--out", out, "--max-runs", "10"},
                            dir.path(), "shrink");
  rc = shrink.Wait(Deadline::After(600 * kNsPerSec));
  INFO(shrink.err());
  REQUIRE(rc == 0);
  CHECK_THAT(shrink.out(), Catch::Contains("6 fault(s) -> 1"));
  CHECK_THAT(shrink.err(), Catch::Contains("[1/10] the run's own scenario, unchanged"));
  YAML::Node small = YAML::LoadFile(out);
  REQUIRE(small["faults"].size() == 1);
  CHECK(small["faults"][0]["kind"].as<std::string>() == "container_kill");
  CHECK(small["seed"].as<int>() == 7);
  CHECK(testing::Netns() == before);
  // Every replay is in the results, tagged with what it shrinks.
  auto store = reports::Store::Open(db, {.create = false});
  REQUIRE(store.ok());
  reports::RunFilter f;
  f.tags["shrink_of"] = (*store)->ListRuns({})->back().id;
  auto replays = (*store)->ListRuns(f);
  REQUIRE(replays.ok());
  CHECK(replays->size() >= 4);
  CHECK(replays->size() <= 10);

  // The shrunk file runs and fails the same way.
  testing::Faultline again({"run", out, "--db", db}, dir.path(), "again");
  CHECK(again.Wait(Deadline::After(120 * kNsPerSec)) == 1);
}

}  // namespace
}  // namespace fl::harness::suite
