#include "harness/suite/regression.h"

#include <algorithm>
#include <set>

#include "reports/compare/history.h"
#include "reports/serve/trends.h"

namespace fl::harness::suite {
namespace {

std::map<std::string, std::string> Identity(std::map<std::string, std::string> tags) {
  tags.erase(kSuiteRunTag);
  return tags;
}

namespace cmp = reports::compare;

// The judged metrics' level shifts that began in the last spec.shift_nights nights.
StatusOr<std::vector<LevelShift>> FindShifts(cmp::RunReader& reader,
                                             const reports::RunRecord& first,
                                             const std::map<std::string, std::string>& identity,
                                             const std::vector<std::string>& metrics,
                                             const RegressionSpec& spec,
                                             const cmp::PolicyTable& policies) {
  cmp::HistoryOptions ho;
  ho.metrics = metrics;
  ho.tags = identity;
  ho.limit = 2000;  // as the trends page reads
  auto history = cmp::LoadHistory(reader, first.scenario_name, ho);
  if (!history.ok() && history.status().code() == Code::kNotFound) return std::vector<LevelShift>{};
  FL_RETURN_IF_ERROR(history.status());
  for (auto& series : *history)  // exactly this configuration: no run with extra tags
    std::erase_if(series.points,
                  [&](const cmp::HistoryPoint& p) { return Identity(p.tags) != identity; });
  std::vector<LevelShift> out;
  for (const auto& t : reports::serve::BuildTrends(*history)) {
    if (t.changes.empty()) continue;
    const auto& c = t.changes.back();  // the level tonight's runs are on
    const size_t ago = t.nights.size() - 1 - c.night_index;
    if (ago >= spec.shift_nights) continue;
    const cmp::MetricPolicy policy = policies.Get(std::string(cmp::BareName(t.key)));
    const double allowed = policy.tolerance.Allowed(c.before);
    if (!cmp::IsWorse(policy.direction, c.shift) || std::fabs(c.shift) <= allowed) continue;
    out.push_back({t.key, t.unit, c.night, ago, c.before, c.after, allowed, c.changed});
  }
  return out;
}

}  // namespace

std::string LevelShift::Text() const {
  std::string s =
      key + ": level " + cmp::FormatQuantity(before, unit) + " -> " +
      cmp::FormatQuantity(after, unit) + " since " + night + " (" +
      (nights_ago == 0 ? std::string("tonight") : std::to_string(nights_ago) + " night(s) ago") +
      ", allowed " + cmp::FormatQuantity(allowed, unit) + ")";
  if (!changed.empty()) {
    s += "; changed that night:";
    for (const auto& c : changed) s += " " + c;
  }
  return s;
}

StatusOr<GroupRegression> CheckRegression(reports::compare::RunReader& reader,
                                          const std::string& group,
                                          const std::vector<reports::RunRecord>& current,
                                          const RegressionSpec& spec,
                                          const reports::compare::PolicyTable& policies) {
  GroupRegression out;
  out.group = group;
  const reports::RunRecord& first = *std::min_element(
      current.begin(), current.end(),
      [](const auto& a, const auto& b) { return a.start_wall_ns < b.start_wall_ns; });
  auto identity = Identity(first.tags);
  auto suite_run = first.tags.find(kSuiteRunTag);
  reports::RunFilter f;
  f.scenario_name = first.scenario_name;
  f.tags = identity;
  f.status = reports::RunStatus::kPassed;
  FL_ASSIGN_OR_RETURN(auto candidates, reader.store().ListRuns(f));  // newest first
  std::vector<reports::compare::RunMetricSet> a, b;
  for (const auto& r : candidates) {
    if (a.size() >= spec.baseline_runs) break;
    if (Identity(r.tags) != identity) continue;  // extra tags: another configuration
    auto sr = r.tags.find(kSuiteRunTag);
    if (suite_run != first.tags.end() && sr != r.tags.end() && sr->second == suite_run->second)
      continue;
    if (r.start_wall_ns >= first.start_wall_ns) continue;
    FL_ASSIGN_OR_RETURN(auto s, reader.Load(r));
    s.group = group;
    out.baseline_runs.push_back(r.id);
    a.push_back(std::move(s));
  }
  for (const auto& r : current) {
    FL_ASSIGN_OR_RETURN(auto s, reader.Load(r));
    s.group = group;
    out.current_runs.push_back(r.id);
    b.push_back(std::move(s));
  }
  reports::compare::CompareOptions o;
  o.policies = policies;
  o.bootstrap.confidence = spec.confidence;
  o.bootstrap.resamples = spec.resamples;
  if (!spec.metrics.empty()) {
    o.metrics = spec.metrics;
  } else {
    // every metric with a direction
    std::set<std::string> names;
    for (const auto* side : {&a, &b})
      for (const auto& s : *side)
        for (const auto& [k, v] : s.values) {
          std::string name(reports::compare::BareName(k));
          if (policies.Get(name).direction != reports::compare::Direction::kNeutral)
            names.insert(name);
        }
    o.metrics.assign(names.begin(), names.end());
    if (o.metrics.empty()) o.metrics.push_back("-");  // nothing to judge
  }
  if (!a.empty()) out.comparison = reports::compare::Compare(a, b, o, "baseline", "this suite");
  if (spec.shift_nights == 0 || o.metrics == std::vector<std::string>{"-"}) return out;
  FL_ASSIGN_OR_RETURN(auto shifts, FindShifts(reader, first, identity, o.metrics, spec, policies));
  std::set<std::string> flagged;
  for (const auto* m : out.Regressed()) flagged.insert(m->key);
  for (auto& sh : shifts)
    if (!flagged.count(sh.key)) out.shifts.push_back(std::move(sh));
  return out;
}

}  // namespace fl::harness::suite
