// `--json` for `faultline compare` and `faultline history` (docs/reports.md, "JSON"): the
// same numbers as the text tables, in the metrics' stored units (the unit is a field).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "reports/compare/compare.h"
#include "reports/compare/history.h"

namespace fl::reports::compare {

// {"a": {"label", "runs"}, "b": {...}, "confidence", "rows": [{group, key, name, unit,
// direction, a: [...], b: [...], median_a, median_b, iqr_a, iqr_b, diff, rel_diff (null
// when median_a is 0), ci: [lo, hi], effect_size (Cliff's delta of B over A), effect
// ("negligible", "small", "medium", "large"; both null on a missing row), allowed, verdict}],
// "notes", "ledger", "regressed": N}
std::string ComparisonJson(const Comparison& c);

// {"scenario", "series": [{key, unit, points: [{run_id, started, status, tags, value (null:
// the run has no such metric)}]}]}
std::string HistoryJson(const std::string& scenario, const std::vector<HistorySeries>& series);

}  // namespace fl::reports::compare
