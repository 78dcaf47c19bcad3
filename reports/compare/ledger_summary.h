// The detection ledgers of two sets of runs, summarised per fault kind and layer for
// `faultline compare` (the ledger: reports/metrics/ledger.h): how often the layer noticed a
// fault of that kind where it applies, and its median latency, on each side.
//
// Thread-safety: uses the reader (one thread at a time). Blocking: the store's reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/compare/run_metrics.h"

namespace fl::reports::compare {

struct LedgerSide {
  size_t applies = 0, noticed = 0;
  std::optional<double> median_ms;  // of the latencies of those that noticed
};

struct LedgerSummaryRow {
  std::string kind;
  std::string layer;
  LedgerSide a, b;
};

// Rows by fault kind, then in the ledger's layer order; a kind and layer with rows on neither
// side is left out. Runs stored before the ledger (schema 8) have none.
[[nodiscard]] StatusOr<std::vector<LedgerSummaryRow>> SummariseLedgers(
    RunReader& reader, const std::vector<RunMetricSet>& a, const std::vector<RunMetricSet>& b);

// A fixed-width text table ("" when there are no rows).
std::string RenderLedgerSummary(const std::vector<LedgerSummaryRow>& rows);
// The same as an HTML section (<h2> and a table; "" when there are no rows).
std::string RenderLedgerSummaryHtml(const std::vector<LedgerSummaryRow>& rows);

}  // namespace fl::reports::compare
