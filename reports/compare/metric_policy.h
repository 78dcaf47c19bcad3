// Which direction of change is worse for each metric, and how much change is tolerated before
// a comparison flags it. The table of defaults is documented in docs/metrics.md ("Which
// direction is worse") and docs/suites.md; suite files and command-line flags override it.
//
// Thread-safety: values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace fl::reports::compare {

enum class Direction {
  kLowerIsBetter,   // latencies, losses, error counts
  kHigherIsBetter,  // throughput, ratios, "detected"
  kNeutral,         // counts that describe the run (ranks, iterations): reported, never flagged
};

std::string_view DirectionName(Direction d);  // "lower", "higher", "neutral"
// Whether a change (new minus old) goes the bad way; never for a neutral metric.
inline bool IsWorse(Direction d, double change) {
  return d == Direction::kLowerIsBetter ? change > 0
                                        : d == Direction::kHigherIsBetter && change < 0;
}

// A change is within tolerance when its size is at most max(absolute, relative * |baseline|)
// (unset parts count as 0): the absolute part is a floor for metrics whose baseline is near 0
// (a 3 ms detection that becomes 5 ms is +67% but no news).
struct Tolerance {
  std::optional<double> relative;  // fraction of the baseline median, e.g. 0.2
  std::optional<double> absolute;  // in the metric's unit

  double Allowed(double baseline) const;
  std::string ToString() const;  // "20%", "50", "20% or 50"
  bool operator==(const Tolerance&) const = default;
};

struct MetricPolicy {
  Direction direction = Direction::kNeutral;
  Tolerance tolerance;
};

// The built-in policy of a metric name (bare name: "detection_latency_ms"). Unknown names are
// neutral.
MetricPolicy DefaultPolicy(std::string_view metric_name);

// Defaults plus overrides by metric name. An override replaces the tolerance (both parts) of
// that metric; its direction stays the built-in one.
class PolicyTable {
 public:
  MetricPolicy Get(std::string_view metric_name) const;
  void SetTolerance(const std::string& metric_name, const Tolerance& t) {
    overrides_[metric_name] = t;
  }
  const std::map<std::string, Tolerance>& overrides() const { return overrides_; }

 private:
  std::map<std::string, Tolerance> overrides_;
};

// Parses a tolerance value: "20%" (relative), "50" (absolute, in the metric's unit), or both
// separated by a comma ("20%,50"). Negative values and empty parts are InvalidArgument.
[[nodiscard]] StatusOr<Tolerance> ParseTolerance(std::string_view text);

// Parses a --tolerance flag "NAME=VALUE" into table. InvalidArgument on bad syntax.
[[nodiscard]] Status ParseToleranceFlag(std::string_view flag, PolicyTable& table);

}  // namespace fl::reports::compare
