// Expectations -> verdicts (docs/metrics.md, "Expectations and verdicts").
#include <cstdio>

#include "reports/metrics/metrics.h"

namespace fl::reports {

namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// Why a per-fault metric is missing, for the verdict message.
std::string MissingReason(const RunMetrics& m, const FaultMetrics& f, std::string_view metric) {
  if (!f.applied) return "the fault never took effect (no effective or requested time)";
  if (metric == "detection") return "no fault_detected event after the injection";
  if (metric == "recovery") {
    if (!f.degraded_algbw) {
      return "only " + std::to_string(f.fault_iterations) +
             " complete iterations under the fault: too few for a steady state";
    }
    return "never recovered: no window of iterations stayed within tolerance of the degraded "
           "steady state";
  }
  if (metric == "ratio" || metric == "loss") {
    if (!m.baseline_algbw) return "no baseline: no complete iteration before the first fault";
    if (metric == "ratio") {
      return "only " + std::to_string(f.fault_iterations) +
             " complete iterations under the fault: too few for a steady state";
    }
  }
  return "metric not computed";
}

}  // namespace

std::vector<VerdictRecord> EvaluateExpectations(const RunMetrics& m, const Expectations& x) {
  std::vector<VerdictRecord> out;
  const std::optional<std::string> run_level;

  if (x.survives) {
    bool survived = m.outcome.kind == OutcomeKind::kSurvived;
    VerdictRecord v{m.run_id,
                    run_level,
                    "survives",
                    survived == *x.survives,
                    survived ? 1.0 : 0.0,
                    *x.survives ? 1.0 : 0.0,
                    ""};
    v.message = "outcome " + std::string(OutcomeName(m.outcome.kind));
    if (!m.outcome.reason.empty()) v.message += ": " + m.outcome.reason;
    out.push_back(std::move(v));
  }
  if (x.exact_correctness) {
    const Correctness& c = m.correctness;
    VerdictRecord v{
        m.run_id, run_level, "exact_correctness", false, static_cast<double>(c.mismatches),
        0.0,      ""};
    if (c.verified_collectives == 0) {
      v.message = "no collective was verified";
    } else {
      v.passed = c.mismatches == 0;
      v.message = std::to_string(c.mismatches) + " mismatches in " +
                  std::to_string(c.verified_collectives) + " verified collectives";
    }
    out.push_back(std::move(v));
  }

  // Per fault: upper bounds (observed <= limit) and lower bounds (observed >= limit).
  auto check = [&](const FaultMetrics& f, const char* name, const std::optional<double>& limit,
                   const std::optional<double>& observed, bool upper, std::string_view what,
                   const char* unit) {
    if (!limit) return;
    VerdictRecord v{m.run_id, f.fault_id, name, false, observed, *limit, ""};
    if (!observed) {
      v.message = MissingReason(m, f, what);
    } else {
      v.passed = upper ? *observed <= *limit : *observed >= *limit;
      v.message = Num(*observed) + unit +
                  (v.passed ? (upper ? " <= " : " >= ") : (upper ? " > " : " < ")) + Num(*limit) +
                  unit;
    }
    out.push_back(std::move(v));
  };
  for (const auto& f : m.faults) {
    check(f, "max_detection_ms", x.max_detection_ms, f.detection_latency_ms, true, "detection",
          " ms");
    check(f, "max_recovery_ms", x.max_recovery_ms, f.recovery_ms, true, "recovery", " ms");
    check(f, "min_degraded_ratio", x.min_degraded_ratio, f.degraded_ratio, false, "ratio", "");
    check(f, "max_throughput_loss_s", x.max_throughput_loss_s, f.throughput_loss_s, true, "loss",
          " s");
  }
  return out;
}

}  // namespace fl::reports
