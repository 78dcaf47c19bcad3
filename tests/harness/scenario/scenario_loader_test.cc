#include "harness/scenario/scenario_loader.h"

#include <catch2/catch.hpp>

namespace fl::harness {
namespace {

constexpr const char* kGood = R"(name: nic_flap
description: one NIC flaps during an allreduce loop
seed: 7
lab:
  topology: /labs/rail.yaml
job:
  workload: allreduce_loop
  ccl: ftccl
  size: 16MiB
  iterations: 400
faults:
  - kind: nic_port_flap
    target: h1/nic0
    at: 5s
    duration: 2s
    params: {period: 500ms}
  - kind: container_kill
    target_class: container
    after_iteration: 200
expectations:
  survives: true
  max_detection_ms: 100
  min_degraded_ratio: 0.4
)";

StaticFaultCatalog Catalog() {
  StaticFaultCatalog c;
  c.AddKind("nic_port_flap", {"nic"});
  c.AddKind("container_kill", {"container", "rank"});
  c.AddTargets("nic", {"h0/nic0", "h0/nic1", "h1/nic0", "h1/nic1"});
  c.AddTargets("container", {"h0/c0", "h0/c1", "h1/c0", "h1/c1"});
  c.AddTargets("rank", {"0", "1", "2", "3"});
  return c;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto p = s.find(from);
  REQUIRE(p != std::string::npos);
  return s.replace(p, from.size(), to);
}

TEST_CASE("scenario: a valid file loads with every field", "[unit]") {
  auto s = ParseScenario(kGood, "nic_flap.yaml");
  REQUIRE(s.ok());
  CHECK(s->name == "nic_flap");
  CHECK(s->seed == 7);
  CHECK(s->lab.topology == "/labs/rail.yaml");
  CHECK(s->job.size_bytes == 16ull << 20);
  CHECK(s->job.iterations == 400);
  REQUIRE(s->faults.size() == 2);
  CHECK(s->faults[0].timing.at_ns == 5 * kNsPerSec);
  CHECK(s->faults[0].duration_ns == 2 * kNsPerSec);
  CHECK(s->faults[0].params.at("period") == "500ms");
  CHECK(s->faults[0].where == "nic_flap.yaml:12:5");
  CHECK(s->faults[1].timing.kind == FaultTiming::Kind::kAfterIteration);
  CHECK(s->expect.survives == true);
  CHECK(*s->expect.max_detection_ms == 100.0);
  CHECK_FALSE(s->expect.max_recovery_ms.has_value());
  CHECK(s->text_hash.size() == 16);
  CHECK(ValidateAgainstCatalog(*s, Catalog()).ok());
}

TEST_CASE("scenario: malformed input fails with file:line:col", "[unit]") {
  SECTION("unknown key") {
    auto s = ParseScenario(Replace(kGood, "    duration: 2s", "    duraton: 2s"), "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().rfind("x.yaml:15:5: unknown key 'duraton' in fault", 0) == 0);
  }
  SECTION("bad duration") {
    auto s = ParseScenario(Replace(kGood, "at: 5s", "at: soon"), "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().rfind("x.yaml:14:9: at: not a valid duration", 0) == 0);
  }
  SECTION("negative duration") {
    auto s = ParseScenario(Replace(kGood, "duration: 2s", "duration: -2s"), "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("x.yaml:15:15: duration:") == 0);
    CHECK(s.status().message().find("negative") != std::string::npos);
  }
  SECTION("two triggers") {
    auto s = ParseScenario(
        Replace(kGood, "    after_iteration: 200", "    after_iteration: 200\n    at: 1s"),
        "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("exactly one of 'at', 'after_iteration' or 'every'") !=
          std::string::npos);
  }
  SECTION("unknown ccl") {
    auto s = ParseScenario(Replace(kGood, "ccl: ftccl", "ccl: mpi"), "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().rfind("x.yaml:8:8: unknown ccl 'mpi'", 0) == 0);
  }
  SECTION("missing job") {
    std::string text = kGood;
    text = Replace(text, "job:\n", "jobs:\n");
    auto s = ParseScenario(text, "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("unknown key 'jobs' in scenario") != std::string::npos);
  }
  SECTION("every with a duration longer than the period") {
    auto s = ParseScenario(Replace(kGood, "at: 5s", "every: 1s\n    count: 3"), "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("shorter than the period") != std::string::npos);
  }
  SECTION("restart on a failover job") {
    auto s = ParseScenario(std::string(kGood) + "restart:\n  max_restarts: 2\n", "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("fail-stop") != std::string::npos);
  }
}

TEST_CASE("scenario: kinds and targets are checked against the lab", "[unit]") {
  auto bad_target = ParseScenario(Replace(kGood, "target: h1/nic0", "target: h9/nic0"), "x.yaml");
  REQUIRE(bad_target.ok());
  Status st = ValidateAgainstCatalog(*bad_target, Catalog());
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(st.message().rfind("x.yaml:12:5: target 'h9/nic0' is not in the lab", 0) == 0);

  auto bad_kind =
      ParseScenario(Replace(kGood, "kind: nic_port_flap", "kind: nic_flapper"), "x.yaml");
  REQUIRE(bad_kind.ok());
  st = ValidateAgainstCatalog(*bad_kind, Catalog());
  CHECK(st.message().find(
            "unknown fault kind 'nic_flapper' (known: container_kill, nic_port_flap)") !=
        std::string::npos);

  auto bad_class =
      ParseScenario(Replace(kGood, "target_class: container", "target_class: nic"), "x.yaml");
  REQUIRE(bad_class.ok());
  st = ValidateAgainstCatalog(*bad_class, Catalog());
  CHECK(st.message().find("cannot aim at target class 'nic'") != std::string::npos);
}

TEST_CASE("scenario: ccl_options are checked and command-line overrides merge over them",
          "[unit]") {
  auto s = ParseScenario(
      Replace(kGood, "  iterations: 400\n",
              "  iterations: 400\n  ccl_options: {dead_timeout_ms: 900, keepalive_ms: 20}\n"),
      "x.yaml");
  REQUIRE(s.ok());
  CHECK(s->job.ccl_options ==
        std::map<std::string, std::string>{{"dead_timeout_ms", "900"}, {"keepalive_ms", "20"}});

  auto bad_key = ParseScenario(
      Replace(kGood, "  iterations: 400\n", "  iterations: 400\n  ccl_options: {dead_ms: 9}\n"),
      "x.yaml");
  REQUIRE_FALSE(bad_key.ok());
  CHECK(bad_key.status().message().rfind("x.yaml:11:17: unknown ftccl option 'dead_ms'", 0) == 0);

  auto bad_value =
      ParseScenario(Replace(kGood, "  iterations: 400\n",
                            "  iterations: 400\n  ccl_options: {dead_timeout_ms: 0.5s}\n"),
                    "x.yaml");
  REQUIRE_FALSE(bad_value.ok());
  CHECK(bad_value.status().message().find("wants a positive integer, got '0.5s'") !=
        std::string::npos);

  // ftccl's AllReduce algorithm is the one option that is a word.
  Scenario algo = *s;
  CHECK(ApplyCclOverrides(algo, "", {{"algorithm", "ring"}}).ok());
  CHECK(algo.job.ccl_options.at("algorithm") == "ring");
  CHECK(ApplyCclOverrides(algo, "", {{"algorithm", "tree"}}).message() ==
        "--ccl-option: ftccl option algorithm wants auto, ring or hier, got 'tree'");

  Scenario merged = *s;
  REQUIRE(ApplyCclOverrides(merged, "", {{"dead_timeout_ms", "1500"}}).ok());
  CHECK(merged.job.ccl_options.at("dead_timeout_ms") == "1500");
  CHECK(merged.job.ccl_options.at("keepalive_ms") == "20");

  Scenario gloo = *s;
  REQUIRE(ApplyCclOverrides(gloo, "gloo", {}).ok());
  CHECK(gloo.job.ccl == "gloo");
  CHECK(gloo.job.ccl_options.empty());  // ftccl's tuning does not carry over
  Status st = ApplyCclOverrides(gloo, "", {{"dead_timeout_ms", "10"}});
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(st.message() == "--ccl-option: ccl gloo takes no options (got 'dead_timeout_ms')");
  CHECK(ApplyCclOverrides(gloo, "mpi", {}).message().find("--ccl: unknown ccl 'mpi'") == 0);
}

}  // namespace
}  // namespace fl::harness
