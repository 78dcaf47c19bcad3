#include "reports/compare/metric_policy.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/enum_names.h"

namespace fl::reports::compare {
namespace {

struct Entry {
  std::string_view name;
  Direction direction;
  std::optional<double> relative;
  std::optional<double> absolute;
};

constexpr auto kLower = Direction::kLowerIsBetter;
constexpr auto kHigher = Direction::kHigherIsBetter;

// Defaults sized for runs on a shared machine: a few runs vary by 10-20% in their timings
// and by a few percent in throughput. The absolute floors keep millisecond jitter of fast
// events from counting as a regression. Keep in step with docs/metrics.md.
constexpr Entry kTable[] = {
    // run level
    {"baseline_algbw", kHigher, 0.10, std::nullopt},
    {"baseline_progress", kHigher, 0.10, std::nullopt},
    {"mismatches", kLower, std::nullopt, 0},
    {"lost_iterations", kLower, std::nullopt, 0},
    {"duplicated_iterations", kLower, std::nullopt, 0},
    {"outcome", kLower, std::nullopt, 0},
    {"stuck_ranks", kLower, std::nullopt, 0},
    // per fault
    {"fault_applied", kHigher, std::nullopt, 0},
    {"injection_error_ms", kLower, std::nullopt, 50},
    {"detected", kHigher, std::nullopt, 0},
    {"detection_latency_ms", kLower, 0.25, 50},
    {"failover_ms", kLower, 0.25, 50},
    {"time_to_first_progress_ms", kLower, 0.25, 100},
    {"degraded_algbw", kHigher, 0.15, std::nullopt},
    {"degraded_ratio", kHigher, std::nullopt, 0.1},
    {"recovered", kHigher, std::nullopt, 0},
    {"recovery_ms", kLower, 0.25, 200},
    {"failed_back", kHigher, std::nullopt, 0},
    {"failback_ms", kLower, 0.25, 200},
    {"path_restored_ms", kLower, 0.25, 200},
    {"restart_cost_ms", kLower, 0.25, 500},
    {"throughput_loss_s", kLower, 0.25, 0.2},
    {"throughput_loss_gpu_s", kLower, 0.25, 0.8},
    // neutral: ranks, baseline_iterations, verified_collectives, complete_iterations,
    // fault_iterations, hang_timeout_ms (they describe the run's shape, not its quality)
};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

StatusOr<double> ParseNonNegative(std::string_view s, std::string_view whole) {
  std::string str(s);
  char* end = nullptr;
  double v = std::strtod(str.c_str(), &end);
  if (str.empty() || end != str.c_str() + str.size() || !std::isfinite(v) || v < 0)
    return InvalidArgumentError("tolerance '" + std::string(whole) +
                                "': expected a non-negative number, e.g. 20% or 50 or 20%,50");
  return v;
}

}  // namespace

constexpr NamedValue<Direction> kDirectionNames[] = {{Direction::kLowerIsBetter, "lower"},
                                                     {Direction::kHigherIsBetter, "higher"},
                                                     {Direction::kNeutral, "neutral"}};

std::string_view DirectionName(Direction d) { return NameIn(kDirectionNames, d, "neutral"); }

double Tolerance::Allowed(double baseline) const {
  double a = absolute.value_or(0);
  double r = relative ? *relative * std::fabs(baseline) : 0;
  return std::max(a, r);
}

std::string Tolerance::ToString() const {
  std::string s;
  if (relative) s = Num(*relative * 100) + "%";
  if (absolute) s += (s.empty() ? "" : " or ") + Num(*absolute);
  return s.empty() ? "0" : s;
}

MetricPolicy DefaultPolicy(std::string_view metric_name) {
  for (const auto& e : kTable)
    if (e.name == metric_name) return {e.direction, {e.relative, e.absolute}};
  return {};
}

MetricPolicy PolicyTable::Get(std::string_view metric_name) const {
  MetricPolicy p = DefaultPolicy(metric_name);
  auto it = overrides_.find(std::string(metric_name));
  if (it != overrides_.end()) p.tolerance = it->second;
  return p;
}

StatusOr<Tolerance> ParseTolerance(std::string_view text) {
  Tolerance t;
  std::string_view rest = text;
  if (rest.empty()) return InvalidArgumentError("empty tolerance");
  while (true) {
    size_t comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    if (!part.empty() && part.back() == '%') {
      if (t.relative)
        return InvalidArgumentError("tolerance '" + std::string(text) + "': two relative parts");
      FL_ASSIGN_OR_RETURN(double v, ParseNonNegative(part.substr(0, part.size() - 1), text));
      t.relative = v / 100;
    } else {
      if (t.absolute)
        return InvalidArgumentError("tolerance '" + std::string(text) + "': two absolute parts");
      FL_ASSIGN_OR_RETURN(double v, ParseNonNegative(part, text));
      t.absolute = v;
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return t;
}

Status ParseToleranceFlag(std::string_view flag, PolicyTable& table) {
  size_t eq = flag.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return InvalidArgumentError(
        "--tolerance wants METRIC=VALUE (e.g. detection_latency_ms=20%,50)"
        ", got '" +
        std::string(flag) + "'");
  FL_ASSIGN_OR_RETURN(Tolerance t, ParseTolerance(flag.substr(eq + 1)));
  table.SetTolerance(std::string(flag.substr(0, eq)), t);
  return OkStatus();
}

}  // namespace fl::reports::compare
