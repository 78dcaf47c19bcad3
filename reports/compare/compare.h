// A/B comparison of two sets of runs (e.g. old and new NIC firmware): per group (scenario,
// CCL) and metric, the medians, spreads, a bootstrap confidence interval of the difference of
// medians, and a verdict against the metric's tolerance in its bad direction.
//
// A metric is flagged (kRegressed) only when both hold:
//   - the confidence interval of median(B) - median(A) excludes zero (the change is not
//     noise at this sample size), and
//   - the change of medians is in the metric's bad direction and larger than its tolerance
//     (max(absolute, relative * |median(A)|)).
// The method is documented in docs/suites.md.
//
// Thread-safety: pure functions on values.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "reports/analysis/stats.h"
#include "reports/compare/format.h"
#include "reports/compare/ledger_summary.h"
#include "reports/compare/metric_policy.h"
#include "reports/compare/run_metrics.h"
#include "reports/render/escape.h"

namespace fl::reports::compare {

// The statistics (reports/analysis/stats.h) compare is built on.
using analysis::BootstrapMedianDiff;
using analysis::BootstrapOptions;
using analysis::Interval;
using analysis::Iqr;
using analysis::Mad;
using analysis::Median;
using analysis::Quantile;

enum class Verdict {
  kSame,       // the interval contains zero
  kChanged,    // a real change, within tolerance
  kImproved,   // a real change beyond tolerance in the good direction
  kRegressed,  // a real change beyond tolerance in the bad direction: flagged
  kInfo,       // a neutral metric: reported, never judged
  kMissing,    // present on one side only
};
std::string_view VerdictName(Verdict v);  // "same", "changed", "improved", "REGRESSED", ...

struct MetricComparison {
  std::string group;  // scenario [ccl]
  std::string key;    // "f0/detection_latency_ms"
  std::string name;   // "detection_latency_ms"
  std::string unit;
  MetricPolicy policy;
  std::vector<double> a, b;  // the values, in run order
  double median_a = 0, median_b = 0;
  double iqr_a = 0, iqr_b = 0;
  double mad_a = 0, mad_b = 0;
  double diff = 0;                    // median_b - median_a
  std::optional<double> rel_diff;     // diff / |median_a|; unset when median_a is 0
  Interval ci;                        // of median(B) - median(A)
  std::optional<double> effect_size;  // Cliff's delta of B over A; unset on a missing row
  double allowed = 0;                 // tolerance.Allowed(median_a)
  Verdict verdict = Verdict::kSame;
};

struct CompareOptions {
  PolicyTable policies;
  // Only these metrics (bare names or full keys); empty: all.
  std::vector<std::string> metrics;
  BootstrapOptions bootstrap;
};

struct Comparison {
  std::string label_a, label_b;
  std::vector<std::string> runs_a, runs_b;  // run ids
  std::vector<MetricComparison> rows;       // by group, then key
  std::vector<std::string> notes;           // groups found on one side only
  std::vector<LedgerSummaryRow> ledger;     // per fault kind and layer (SummariseLedgers)
  double confidence = 0.95;

  int Count(Verdict v) const;
  std::vector<const MetricComparison*> Regressions() const;
};

// Judges one metric from its two samples. REQUIRES: !a.empty() && !b.empty().
MetricComparison CompareMetric(std::string group, std::string key, std::string unit,
                               std::vector<double> a, std::vector<double> b,
                               const MetricPolicy& policy, const BootstrapOptions& bootstrap);

Comparison Compare(std::span<const RunMetricSet> a, std::span<const RunMetricSet> b,
                   const CompareOptions& options, std::string label_a = "A",
                   std::string label_b = "B");

// Renderings: a fixed-width text table, a Markdown table (CI comments), a self-contained HTML
// page (no scripts, no external resources).
std::string RenderText(const Comparison& c);
std::string RenderMarkdown(const Comparison& c);
std::string RenderHtml(const Comparison& c);

// HTML escaping of the renderings: reports/render's.
using render::HtmlEscape;

}  // namespace fl::reports::compare
