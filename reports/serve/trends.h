// A scenario's metrics over nights, with their change points (`faultline serve`'s trends,
// docs/serve.md): the finished runs' values (compare/history.h) grouped by UTC night into
// median, min, max and count; the nightly medians searched for level shifts
// (analysis/change_points.h); each shift named by its first night and size, and by what
// changed between the night before it and its first night: the tags whose values on the two
// nights differ (the hosts' fingerprint tags: fw, nic.driver, kernel, nccl..., and any --tag;
// a night with several clusters' runs compares the sets of values).
//
// Thread-safety: BuildTrends is pure; LoadTrends reads through the reader (one thread).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "reports/compare/history.h"

namespace fl::reports::serve {

struct TrendNight {
  std::string night;  // "2026-12-07"
  double median = 0, min = 0, max = 0;
  size_t runs = 0;
  std::string last_run_id;
};

struct TrendChange {
  size_t night_index = 0;  // in TrendSeries::nights: the first night of the new level
  std::string night;
  double before = 0, after = 0, shift = 0, relative = 0, score = 0;
  std::vector<std::string> changed;  // "fw: 22.39 -> 22.41"; empty: nothing recorded changed
  // The last run of the night before and the first of the change's night.
  std::string before_run_id, after_run_id;
};

struct TrendSeries {
  std::string key;  // "f0/recovery_ms"
  std::string unit;
  std::vector<TrendNight> nights;  // oldest first; nights without a value are left out
  std::vector<TrendChange> changes;
};

// Tags that name a run rather than its set-up (suite_run, sweep ids) are not "changes".
std::vector<TrendSeries> BuildTrends(const std::vector<compare::HistorySeries>& history);

struct TrendOptions {
  std::vector<std::string> metrics;         // as HistoryOptions (empty: its defaults)
  std::map<std::string, std::string> tags;  // only runs with these tags
  size_t max_runs = 2000;                   // the newest finished runs read
};
[[nodiscard]] StatusOr<std::vector<TrendSeries>> LoadTrends(compare::RunReader& reader,
                                                            const std::string& scenario,
                                                            const TrendOptions& options);

}  // namespace fl::reports::serve
