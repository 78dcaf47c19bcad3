#include "harness/suite/regression.h"

#include <algorithm>
#include <set>

namespace fl::harness::suite {
namespace {

std::map<std::string, std::string> Identity(std::map<std::string, std::string> tags) {
  tags.erase(kSuiteRunTag);
  return tags;
}

}  // namespace

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
  if (a.empty()) return out;
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
  out.comparison = reports::compare::Compare(a, b, o, "baseline", "this suite");
  return out;
}

}  // namespace fl::harness::suite
