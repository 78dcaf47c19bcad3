#include "reports/compare/repeats.h"

#include <nlohmann/json.hpp>

#include <map>

#include "reports/compare/format.h"

namespace fl::reports::compare {

StatusOr<RepeatSummary> SummariseRepeats(RunReader& reader, const std::vector<RunMetricSet>& runs,
                                         const PolicyTable& policies,
                                         const analysis::BootstrapOptions& bootstrap) {
  RepeatSummary s;
  s.confidence = bootstrap.confidence;
  std::map<std::string, RepeatedMetric> metrics;
  std::map<std::pair<std::string, std::string>, RepeatedVerdict> verdicts;
  for (const auto& r : runs) {
    s.run_ids.push_back(r.run.id);
    for (const auto& [key, value] : r.values) {
      RepeatedMetric& m = metrics[key];
      m.key = key;
      auto unit = r.units.find(key);
      if (unit != r.units.end()) m.unit = unit->second;
      m.values.push_back(value);
    }
    FL_ASSIGN_OR_RETURN(auto vs, reader.Verdicts(r.run.id));
    for (const auto& v : vs) {
      RepeatedVerdict& rv = verdicts[{v.fault_id.value_or(""), v.expectation}];
      rv.expectation = v.expectation;
      rv.fault_id = v.fault_id.value_or("");
      ++rv.runs;
      if (v.passed) ++rv.met;
    }
  }
  for (auto& [key, m] : metrics) {
    m.direction = policies.Get(BareName(key)).direction;
    m.median = analysis::Median(m.values);
    m.p25 = analysis::Quantile(m.values, 0.25);
    m.p75 = analysis::Quantile(m.values, 0.75);
    m.interval = analysis::BootstrapMedian(m.values, bootstrap);
    s.metrics.push_back(std::move(m));
  }
  for (auto& [key, v] : verdicts) s.verdicts.push_back(std::move(v));
  return s;
}

std::string RenderRepeatsText(const RepeatSummary& s) {
  const size_t n = s.run_ids.size();
  std::string out = "  " + std::to_string(n) + " repeat(s):";
  std::string sep = " ";
  for (const auto& v : s.verdicts) {
    out += sep + std::to_string(v.met) + "/" + std::to_string(v.runs) + " met " + v.expectation +
           (v.fault_id.empty() ? "" : " " + v.fault_id);
    sep = "; ";
  }
  if (s.verdicts.empty()) out += " no verdicts";
  out += "\n";
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f%%", 100 * s.confidence);
  for (const auto& m : s.metrics) {
    if (m.direction == Direction::kNeutral) continue;
    out += "    " + m.key + ": median " + FormatQuantity(m.median, m.unit) + " (IQR " +
           FormatQuantity(m.p25, m.unit) + " to " + FormatQuantity(m.p75, m.unit) + "), " + pct +
           " interval [" + FormatQuantity(m.interval.lo, m.unit) + ", " +
           FormatQuantity(m.interval.hi, m.unit) + "], " + std::to_string(m.values.size()) +
           " value(s)\n";
  }
  return out;
}

std::string RepeatsJson(const RepeatSummary& s) {
  using nlohmann::json;
  json metrics = json::array();
  for (const auto& m : s.metrics)
    metrics.push_back({{"key", m.key},
                       {"unit", m.unit},
                       {"direction", std::string(DirectionName(m.direction))},
                       {"values", m.values},
                       {"median", m.median},
                       {"p25", m.p25},
                       {"p75", m.p75},
                       {"interval", {m.interval.lo, m.interval.hi}}});
  json verdicts = json::array();
  for (const auto& v : s.verdicts)
    verdicts.push_back({{"expectation", v.expectation},
                        {"fault", v.fault_id.empty() ? json(nullptr) : json(v.fault_id)},
                        {"met", v.met},
                        {"runs", v.runs}});
  json j = {{"runs", s.run_ids},
            {"confidence", s.confidence},
            {"metrics", metrics},
            {"verdicts", verdicts}};
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace fl::reports::compare
