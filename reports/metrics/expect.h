#pragma once
// What a scenario expects of its run (its `expect:` block), once: the scenario loader fills it
// and EvaluateExpectations (metrics.h) turns it into verdicts. docs/metrics.md, "Expectations
// and verdicts"; docs/scenarios.md for the YAML.
#include <optional>

namespace fl::reports {

struct Expectations {
  std::optional<bool> survives;
  std::optional<double> max_detection_ms;
  std::optional<double> max_recovery_ms;
  std::optional<double> min_degraded_ratio;
  std::optional<double> max_throughput_loss_s;
  bool exact_correctness = true;  // mismatches must be 0 (a scenario says false to waive it)
};

}  // namespace fl::reports
