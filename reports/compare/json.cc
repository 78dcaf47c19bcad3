#include "reports/compare/json.h"

#include <nlohmann/json.hpp>

namespace fl::reports::compare {
namespace {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string ComparisonJson(const Comparison& c) {
  json rows = json::array();
  for (const auto& r : c.rows)
    rows.push_back({{"group", r.group},
                    {"key", r.key},
                    {"name", r.name},
                    {"unit", r.unit},
                    {"direction", std::string(DirectionName(r.policy.direction))},
                    {"a", r.a},
                    {"b", r.b},
                    {"median_a", r.median_a},
                    {"median_b", r.median_b},
                    {"iqr_a", r.iqr_a},
                    {"iqr_b", r.iqr_b},
                    {"diff", r.diff},
                    {"rel_diff", r.rel_diff ? json(*r.rel_diff) : json(nullptr)},
                    {"ci", {r.ci.lo, r.ci.hi}},
                    {"effect_size", r.effect_size ? json(*r.effect_size) : json(nullptr)},
                    {"effect", r.effect_size ? json(analysis::EffectMagnitude(*r.effect_size))
                                             : json(nullptr)},
                    {"allowed", r.allowed},
                    {"verdict", std::string(VerdictName(r.verdict))}});
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
