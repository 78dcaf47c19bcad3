#include <catch2/catch.hpp>

#include "reports/metrics/metrics.h"

namespace fl::reports {
namespace {

// Verdicts are pure functions of RunMetrics: build those directly.
RunMetrics Survived() {
  RunMetrics m;
  m.run_id = "r1";
  m.num_ranks = 2;
  m.baseline_algbw = 1e9;
  m.correctness.verified_collectives = 82;
  FaultMetrics f;
  f.fault_id = "f0";
  f.applied = true;
  f.detection_latency_ms = 250;
  f.recovery_ms = 3000;
  f.fault_iterations = 21;
  f.degraded_algbw = 0.5e9;
  f.degraded_ratio = 0.5;
  f.throughput_loss_s = 22.5;
  m.faults.push_back(f);
  return m;
}

const VerdictRecord& Get(const std::vector<VerdictRecord>& v, const std::string& name) {
  for (const auto& r : v) {
    if (r.expectation == name) return r;
  }
  FAIL("no verdict " << name);
  return v.front();
}

TEST_CASE("expectations: each becomes a verdict with observed and limit", "[unit]") {
  Expectations x;
  x.survives = true;
  x.max_detection_ms = 300;
  x.max_recovery_ms = 2000;
  x.min_degraded_ratio = 0.4;
  x.max_throughput_loss_s = 30;
  x.exact_correctness = true;
  auto v = EvaluateExpectations(Survived(), x);
  REQUIRE(v.size() == 6);

  CHECK(Get(v, "survives") ==
        VerdictRecord{"r1", std::nullopt, "survives", true, 1.0, 1.0, "outcome survived"});
  const auto& det = Get(v, "max_detection_ms");
  CHECK(det.passed);
  CHECK(det.fault_id == "f0");
  CHECK(det.observed == 250);
  CHECK(det.limit == 300);
  CHECK(det.message == "250 ms <= 300 ms");
  const auto& rec = Get(v, "max_recovery_ms");
  CHECK_FALSE(rec.passed);
  CHECK(rec.message == "3000 ms > 2000 ms");
  CHECK(Get(v, "min_degraded_ratio").passed);
  CHECK(Get(v, "max_throughput_loss_s").passed);
  const auto& cor = Get(v, "exact_correctness");
  CHECK(cor.passed);
  CHECK(cor.observed == 0);
  CHECK(cor.limit == 0);
}

TEST_CASE("expectations: missing metrics fail with the reason", "[unit]") {
  RunMetrics m = Survived();
  m.faults[0].detection_latency_ms.reset();
  m.faults[0].recovery_ms.reset();
  m.baseline_algbw.reset();
  m.faults[0].degraded_ratio.reset();
  m.faults[0].throughput_loss_s.reset();
  FaultMetrics never;
  never.fault_id = "f1";
  m.faults.push_back(never);
  Expectations x;
  x.max_detection_ms = 300;
  x.max_recovery_ms = 2000;
  x.min_degraded_ratio = 0.4;
  x.max_throughput_loss_s = 30;
  x.exact_correctness = false;
  auto v = EvaluateExpectations(m, x);
  REQUIRE(v.size() == 8);  // four per fault
  for (const auto& r : v) {
    INFO(r.expectation << " " << *r.fault_id);
    CHECK_FALSE(r.passed);
    CHECK_FALSE(r.observed);
    CHECK(r.limit);
  }
  CHECK_THAT(v[0].message, Catch::Contains("no fault_detected event"));
  CHECK_THAT(v[1].message, Catch::Contains("never recovered"));
  CHECK_THAT(v[2].message, Catch::Contains("no baseline"));
  CHECK_THAT(v[3].message, Catch::Contains("no baseline"));
  for (size_t i = 4; i < 8; ++i) CHECK_THAT(v[i].message, Catch::Contains("never took effect"));

  m.faults[0].degraded_algbw.reset();
  m.faults[0].fault_iterations = 3;
  v = EvaluateExpectations(m, x);
  CHECK_THAT(v[1].message, Catch::Contains("too few"));
}

TEST_CASE("expectations: hang, mismatch and expected failure", "[unit]") {
  RunMetrics m = Survived();
  m.outcome.kind = OutcomeKind::kHung;
  m.outcome.reason = "rank 1 idle";
  m.correctness.mismatches = 2;
  Expectations x;
  x.survives = true;
  x.exact_correctness = true;
  auto v = EvaluateExpectations(m, x);
  REQUIRE(v.size() == 2);
  CHECK_FALSE(v[0].passed);
  CHECK(v[0].observed == 0);
  CHECK(v[0].message == "outcome hung: rank 1 idle");
  CHECK_FALSE(v[1].passed);
  CHECK(v[1].observed == 2);

  // A fail-stop baseline is expected not to survive.
  x.survives = false;
  x.exact_correctness = false;
  v = EvaluateExpectations(m, x);
  REQUIRE(v.size() == 1);
  CHECK(v[0].passed);

  // Nothing verified: correctness cannot be claimed.
  m.correctness = {};
  x = {};
  x.exact_correctness = true;
  v = EvaluateExpectations(m, x);
  CHECK_FALSE(v[0].passed);
  CHECK(v[0].message == "no collective was verified");
}

}  // namespace
}  // namespace fl::reports
