#include "reports/compare/ledger_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "reports/analysis/stats.h"
#include "reports/compare/format.h"
#include "reports/metrics/ledger.h"
#include "reports/render/escape.h"

namespace fl::reports::compare {
namespace {

// The ledger's layer order (reports/metrics/ledger.h), then any other name.
size_t LayerRank(const std::string& layer) {
  const auto& order = kLedgerLayers;
  return static_cast<size_t>(std::find(std::begin(order), std::end(order), layer) -
                             std::begin(order));
}

struct Acc {
  size_t applies = 0;
  std::vector<double> latencies;
};

Status Add(RunReader& reader, const std::vector<RunMetricSet>& runs,
           std::map<std::pair<std::string, std::string>, Acc>& out) {
  for (const auto& r : runs) {
    FL_ASSIGN_OR_RETURN(auto faults, reader.store().LoadFaults(r.run.id));
    std::map<std::string, std::string> kind_of;
    for (const auto& f : faults) kind_of[f.fault_id] = f.kind;
    FL_ASSIGN_OR_RETURN(auto rows, reader.store().LoadDetections(r.run.id));
    for (const auto& d : rows) {
      auto it = kind_of.find(d.fault_id);
      if (it == kind_of.end()) continue;
      Acc& acc = out[{it->second, d.layer}];
      ++acc.applies;
      if (d.latency_ms) acc.latencies.push_back(*d.latency_ms);
    }
  }
  return OkStatus();
}

LedgerSide Side(const Acc& acc) {
  LedgerSide s;
  s.applies = acc.applies;
  s.noticed = acc.latencies.size();
  if (!acc.latencies.empty()) s.median_ms = analysis::Median(acc.latencies);
  return s;
}

std::string SideText(const LedgerSide& s) {
  if (s.applies == 0) return "-";
  std::string t = std::to_string(s.noticed) + "/" + std::to_string(s.applies);
  if (s.median_ms) t += ", median " + FormatQuantity(*s.median_ms, "ms");
  return t;
}

}  // namespace

StatusOr<std::vector<LedgerSummaryRow>> SummariseLedgers(RunReader& reader,
                                                         const std::vector<RunMetricSet>& a,
                                                         const std::vector<RunMetricSet>& b) {
  std::map<std::pair<std::string, std::string>, Acc> in_a, in_b;
  FL_RETURN_IF_ERROR(Add(reader, a, in_a));
  FL_RETURN_IF_ERROR(Add(reader, b, in_b));
  std::map<std::pair<std::string, std::string>, LedgerSummaryRow> rows;
  for (auto* side : {&in_a, &in_b})
    for (const auto& [key, acc] : *side) {
      LedgerSummaryRow& row = rows[key];
      row.kind = key.first;
      row.layer = key.second;
      (side == &in_a ? row.a : row.b) = Side(acc);
    }
  std::vector<LedgerSummaryRow> out;
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return std::make_pair(x.kind, LayerRank(x.layer)) < std::make_pair(y.kind, LayerRank(y.layer));
  });
  return out;
}

std::string RenderLedgerSummary(const std::vector<LedgerSummaryRow>& rows) {
  if (rows.empty()) return "";
  std::string out =
      "detection ledger by fault kind (noticed/applies, median latency; docs/metrics.md):\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-20s %-10s %-28s %s\n", "kind", "layer", "A", "B");
  out += line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "  %-20s %-10s %-28s %s\n", r.kind.c_str(), r.layer.c_str(),
                  SideText(r.a).c_str(), SideText(r.b).c_str());
    out += line;
  }
  return out;
}

std::string RenderLedgerSummaryHtml(const std::vector<LedgerSummaryRow>& rows) {
  if (rows.empty()) return "";
  std::string out =
      "<h2>Detection ledger</h2>\n<p>Per fault kind and layer: faults noticed of those where "
      "the layer applies, and the median latency of noticing (docs/metrics.md).</p>\n"
      "<table class=\"fl-ledger\"><tr><th>kind</th><th>layer</th><th>A</th><th>B</th></tr>\n";
  for (const auto& r : rows)
    out += "<tr><td class=\"l\">" + render::HtmlEscape(r.kind) + "</td><td class=\"l\">" +
           render::HtmlEscape(r.layer) + "</td><td>" + render::HtmlEscape(SideText(r.a)) +
           "</td><td>" + render::HtmlEscape(SideText(r.b)) + "</td></tr>\n";
  return out + "</table>\n";
}

}  // namespace fl::reports::compare
