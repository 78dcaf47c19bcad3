// Suite files (configs/suites/*.yaml): which scenarios `faultline suite` runs, on which CCLs,
// how often, with which tags, and how a regression against the run history is judged.
// The schema is documented in docs/suites.md.
//
// Every error is InvalidArgument "FILE:LINE:COL: message" (common/yaml_util.h); unknown keys
// are errors. Scenario paths are resolved beside the suite file, then from the current
// directory, and must exist; CCL names and options are checked as `faultline run --ccl` does.
//
// Thread-safety: stateless functions returning values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/yaml_util.h"
#include "reports/compare/metric_policy.h"

namespace fl::harness::suite {

// One CCL to run a scenario on: `faultline run --ccl NAME --ccl-option k=v ...`.
struct CclSpec {
  std::string name;                            // ftccl | gloo | nccl
  std::map<std::string, std::string> options;  // ftccl tuning, e.g. dead_timeout_ms: 900
  bool operator==(const CclSpec&) const = default;
};

struct SuiteScenario {
  std::string path;   // resolved
  std::string where;  // FILE:LINE:COL of the entry, for messages
  // Empty: the scenario's own job.ccl (no override).
  std::vector<CclSpec> ccls;
  uint32_t repeat = 0;  // 0: the suite's
  std::optional<uint64_t> seed;
  std::map<std::string, std::string> tags;
};

struct RegressionSpec {
  bool enabled = true;
  // Compare against the newest N passing runs with the same scenario and tags.
  uint32_t baseline_runs = 1;
  // Only these metrics (bare names); empty: every metric with a direction.
  std::vector<std::string> metrics;
  double confidence = 0.95;
  int resamples = 4000;
  // A level shift of a judged metric (reports/analysis/change_points.h, over the nightly
  // medians of the group's runs) in its worse direction, beyond its tolerance, whose first
  // night is one of the last shift_nights nights (tonight included), fails the group too:
  // the window comparison above stops seeing a shift once the new level is the baseline.
  // 0: no such check.
  uint32_t shift_nights = 7;
};

struct Suite {
  std::string path;
  std::string name;
  std::string description;
  uint32_t repeat = 1;
  std::map<std::string, std::string> tags;
  std::vector<CclSpec> ccls;  // default for every scenario
  std::vector<SuiteScenario> scenarios;
  Nanos run_timeout_ns = 30 * 60 * kNsPerSec;  // one `faultline run`, then it is stopped
  // Tolerance overrides by metric name (`faultline compare --suite` reads them too).
  reports::compare::PolicyTable policies;
  RegressionSpec regression;
};

// A `ccls:` sequence (a name, or {name, options}), each checked against its CCL's options;
// sweep files read the same (sweep_plan.h).
[[nodiscard]] Status ParseCcls(const YamlDoc& doc, const YAML::Node& n, std::vector<CclSpec>* out);

[[nodiscard]] StatusOr<Suite> LoadSuiteFile(const std::string& path);
// name: what errors call the input; relative scenario paths are resolved beside it.
[[nodiscard]] StatusOr<Suite> ParseSuite(std::string_view text, const std::string& name);

}  // namespace fl::harness::suite
