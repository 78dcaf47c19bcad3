// Suite files: the schema, defaults, and errors that point at the offending line.
#include "harness/suite/suite_file.h"

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "tests/test_util.h"

namespace fl::harness::suite {
namespace {

using testing::TempDir;

struct Fixture {
  TempDir dir{"fl_suite"};
  std::string path;
  Fixture() {
    REQUIRE(WriteFileAtomic(dir.path() + "/a.yaml", "name: a\n").ok());
    REQUIRE(WriteFileAtomic(dir.path() + "/b.yaml", "name: b\n").ok());
    path = dir.path() + "/suite.yaml";
  }
  StatusOr<Suite> Parse(const std::string& text) { return ParseSuite(text, path); }
  // The error message, or "" when it parsed.
  std::string Error(const std::string& text) {
    auto s = Parse(text);
    return s.ok() ? "" : s.status().message();
  }
};

TEST_CASE("suite file: every key parsed - defaults filled", "[unit]") {
  Fixture f;
  auto s = f.Parse(R"(name: nightly
description: every scenario, every night
repeat: 3
tags: {lab: rail4, kind: nightly}
run_timeout: 10m
ccls:
  - ftccl
  - name: ftccl
    options: {dead_timeout_ms: 900}
scenarios:
  - a.yaml
  - path: b.yaml
    ccls: [gloo]
    repeat: 2
    seed: 7
    tags: {extra: "1"}
tolerances:
  detection_latency_ms: 20%,50
  recovery_ms: {relative: 0.3}
  baseline_algbw: {absolute: 1e6}
regression:
  baseline_runs: 3
  metrics: [detection_latency_ms, recovery_ms]
  confidence: 0.9
  resamples: 2000
)");
  REQUIRE(s.ok());
  CHECK(s->name == "nightly");
  CHECK(s->repeat == 3);
  CHECK(s->tags == std::map<std::string, std::string>{{"lab", "rail4"}, {"kind", "nightly"}});
  CHECK(s->run_timeout_ns == 600 * kNsPerSec);
  REQUIRE(s->ccls.size() == 2);
  CHECK(s->ccls[0] == CclSpec{"ftccl", {}});
  CHECK(s->ccls[1] == CclSpec{"ftccl", {{"dead_timeout_ms", "900"}}});
  REQUIRE(s->scenarios.size() == 2);
  CHECK(s->scenarios[0].path == f.dir.path() + "/a.yaml");
  CHECK(s->scenarios[0].ccls.empty());
  CHECK(s->scenarios[0].repeat == 0);
  CHECK(s->scenarios[1].ccls == std::vector<CclSpec>{{"gloo", {}}});
  CHECK(s->scenarios[1].repeat == 2);
  CHECK(s->scenarios[1].seed == 7u);
  CHECK(s->scenarios[1].tags.at("extra") == "1");
  CHECK(s->policies.Get("detection_latency_ms").tolerance == reports::compare::Tolerance{0.2, 50});
  CHECK(s->policies.Get("recovery_ms").tolerance == reports::compare::Tolerance{0.3, std::nullopt});
  CHECK(s->policies.Get("baseline_algbw").tolerance ==
        reports::compare::Tolerance{std::nullopt, 1e6});
  CHECK(s->regression.baseline_runs == 3);
  CHECK(s->regression.metrics == std::vector<std::string>{"detection_latency_ms", "recovery_ms"});
  CHECK(s->regression.confidence == 0.9);
  CHECK(s->regression.resamples == 2000);

  auto minimal = f.Parse("name: m\nscenarios: [a.yaml]\n");
  REQUIRE(minimal.ok());
  CHECK(minimal->repeat == 1);
  CHECK(minimal->ccls.empty());
  CHECK(minimal->regression.enabled);
  CHECK(minimal->regression.baseline_runs == 1);
  CHECK(minimal->regression.metrics.empty());
}

TEST_CASE("suite file: errors carry file:line:col", "[unit]") {
  Fixture f;
  const std::string p = f.path;
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\nrepaet: 3\n") ==
        p + ":3:1: unknown key 'repaet' in suite (allowed: name, description, repeat, tags, "
            "ccls, scenarios, run_timeout, tolerances, regression)");
  CHECK(f.Error("name: x\nscenarios:\n  - path: a.yaml\n    sed: 3\n")
            .rfind(p + ":4:5: unknown key 'sed' in scenario", 0) == 0);
  CHECK(f.Error("name: x\nscenarios:\n  - nope.yaml\n")
            .rfind(p + ":3:5: scenario file 'nope.yaml' not found", 0) == 0);
  CHECK(f.Error("name: x\nccls: [mpi]\nscenarios: [a.yaml]\n") ==
        p + ":2:8: unknown ccl 'mpi' (known: ftccl, gloo, nccl)");
  // Options against the CCL's schema: an unknown name at the name, a bad value at the value.
  CHECK(f.Error("name: x\nccls:\n  - name: ftccl\n    options: {dead_ms: 5}\n"
                "scenarios: [a.yaml]\n")
            .rfind(p + ":4:15: unknown ftccl option 'dead_ms' (known: chunk_bytes, ", 0) == 0);
  CHECK(f.Error("name: x\nccls:\n  - name: ftccl\n    options: {channels_per_nic: 0}\n"
                "scenarios: [a.yaml]\n") ==
        p + ":4:33: ftccl option channels_per_nic must be within 1..64, not 0");
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\nrepeat: 0\n") ==
        p + ":3:9: repeat must be between 1 and 1000, not 0");
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\ntolerances:\n  ranks: 10%\n")
            .rfind(p + ":4:3: metric 'ranks' has no worse direction", 0) == 0);
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\ntolerances:\n  recovery_ms: fast\n")
            .rfind(p + ":4:16: tolerance 'fast'", 0) == 0);
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\ntolerances:\n  recovery_ms: {relativ: 1}\n")
            .rfind(p + ":4:17: unknown key 'relativ' in tolerance", 0) == 0);
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\nregression: {confidence: 2}\n") ==
        p + ":3:26: confidence must be between 0.5 and 1, not 2");
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\nregression: {confidence: 1}\n") ==
        p + ":3:26: confidence must be in (0.5, 1), e.g. 0.95");
  // Every number is bounded (NaN included), with its location.
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\nregression: {confidence: .nan}\n") ==
        p + ":3:26: confidence must be between 0.5 and 1, not nan");
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\nregression: {baseline_runs: 4000000000}\n") ==
        p + ":3:29: baseline_runs must be between 1 and 1000, not 4000000000");
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\nregression: {resamples: 10}\n") ==
        p + ":3:25: resamples must be between 100 and 1000000, not 10");
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\nrun_timeout: 9999h\n") ==
        p + ":3:14: run_timeout must be between 1s and 168h, not 9999h");
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\nrepeat: 4000000000\n") ==
        p + ":3:9: repeat must be between 1 and 1000, not 4000000000");
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\ntolerances:\n  recovery_ms: {relative: .inf}\n")
            .rfind(p + ":4:27: relative must be between 0 and 10, not inf", 0) == 0);
  CHECK(f.Error("name: x\nscenarios: []\n") ==
        p + ":2:12: scenarios must list 1 to 1000 scenario files");
  CHECK(f.Error("scenarios: [a.yaml]\n") == p + ":1:1: missing required key 'name'");
  CHECK(f.Error("name: x\ntags: {suite_run: 1}\nscenarios: [a.yaml]\n")
            .rfind(p + ":2:8: tag 'suite_run' is set by faultline suite itself", 0) == 0);
  CHECK(f.Error("name: x\nscenarios: [a.yaml]\nrun_timeout: soon\n").rfind(p + ":3:14: ", 0) == 0);
}

TEST_CASE("suite file: the shipped suites load", "[unit]") {
  for (const char* name : {"nightly.yaml", "firmware_acceptance.yaml"}) {
    INFO(name);
    // scenario paths in them are relative to the repository root
    std::string path = std::string(FL_SOURCE_DIR) + "/configs/suites/" + name;
    auto text = ReadFile(path);
    REQUIRE(text.ok());
    char cwd[4096];
    REQUIRE(getcwd(cwd, sizeof cwd));
    REQUIRE(chdir(FL_SOURCE_DIR) == 0);
    auto s = LoadSuiteFile(path);
    REQUIRE(chdir(cwd) == 0);
    INFO((s.ok() ? "" : s.status().message()));
    REQUIRE(s.ok());
    CHECK_FALSE(s->scenarios.empty());
  }
}

}  // namespace
}  // namespace fl::harness::suite
