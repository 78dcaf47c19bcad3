#include "reports/compare/json.h"

#include <nlohmann/json.hpp>

namespace fl::reports::compare {
namespace {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

}  // namespace

// The fields a row of ComparisonJson writes as they are; ComparisonJson adds the ones it
// derives (direction, verdict, the interval, the optional ones). mad_a and mad_b stay out.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MetricComparison, group, key, name, unit, a, b, median_a,
                                   median_b, iqr_a, iqr_b, diff, allowed)

std::string ComparisonJson(const Comparison& c) {
  json rows = json::array();
  for (const auto& r : c.rows) {
    json row = r;
    row["direction"] = std::string(DirectionName(r.policy.direction));
    row["rel_diff"] = r.rel_diff ? json(*r.rel_diff) : json(nullptr);
    row["ci"] = {r.ci.lo, r.ci.hi};
    row["effect_size"] = r.effect_size ? json(*r.effect_size) : json(nullptr);
    row["effect"] = r.effect_size ? json(analysis::EffectMagnitude(*r.effect_size)) : json(nullptr);
    row["verdict"] = std::string(VerdictName(r.verdict));
    rows.push_back(std::move(row));
  }
  json ledger = json::array();
  for (const auto& l : c.ledger) {
    auto side = [](const LedgerSide& s) {
      return json{{"applies", s.applies},
                  {"noticed", s.noticed},
                  {"median_ms", s.median_ms ? json(*s.median_ms) : json(nullptr)}};
    };
    ledger.push_back({{"kind", l.kind}, {"layer", l.layer}, {"a", side(l.a)}, {"b", side(l.b)}});
  }
  json j = {{"a", {{"label", c.label_a}, {"runs", c.runs_a}}},
            {"b", {{"label", c.label_b}, {"runs", c.runs_b}}},
            {"confidence", c.confidence},
            {"rows", rows},
            {"notes", c.notes},
            {"ledger", ledger},
            {"regressed", c.Count(Verdict::kRegressed)}};
  return Dump(j);
}

std::string HistoryJson(const std::string& scenario, const std::vector<HistorySeries>& series) {
  json s = json::array();
  for (const auto& h : series) {
    json points = json::array();
    for (const auto& p : h.points)
      points.push_back({{"run_id", p.run_id},
                        {"started", FormatWallIso(p.start_wall_ns)},
                        {"status", std::string(RunStatusName(p.status))},
                        {"tags", p.tags},
                        {"value", p.value ? json(*p.value) : json(nullptr)}});
    s.push_back({{"key", h.key}, {"unit", h.unit}, {"points", points}});
  }
  return Dump(json{{"scenario", scenario}, {"series", s}});
}

}  // namespace fl::reports::compare
