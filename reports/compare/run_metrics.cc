#include "reports/compare/run_metrics.h"

#include <unistd.h>

#include <set>

namespace fl::reports::compare {

std::string MetricKey(const MetricRecord& m) {
  return m.fault_id ? *m.fault_id + "/" + m.name : m.name;
}

std::string_view BareName(std::string_view key) {
  size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? key : key.substr(slash + 1);
}

std::string GroupOf(const RunRecord& run) {
  auto it = run.tags.find("ccl");
  return it == run.tags.end() ? run.scenario_name : run.scenario_name + " [" + it->second + "]";
}

RunMetricSet ToMetricSet(RunRecord run, const std::vector<MetricRecord>& metrics) {
  RunMetricSet s;
  run.scenario_text.clear();
  s.group = GroupOf(run);
  s.run = std::move(run);
  for (const auto& m : metrics) {
    std::string key = MetricKey(m);
    s.values[key] = m.value;
    s.units[key] = m.unit;
  }
  return s;
}

StatusOr<std::unique_ptr<RunReader>> RunReader::Open(const std::string& db_path) {
  if (!sql::IsPostgresTarget(db_path) && access(db_path.c_str(), F_OK) != 0)
    return NotFoundError("results database '" + db_path + "' does not exist");
  FL_ASSIGN_OR_RETURN(auto store, Store::Open(db_path, {.create = false}));
  return std::unique_ptr<RunReader>(new RunReader(std::move(store)));
}

StatusOr<std::vector<MetricRecord>> RunReader::Metrics(const std::string& run_id) {
  return store_->LoadMetrics(run_id);
}

StatusOr<std::vector<VerdictRecord>> RunReader::Verdicts(const std::string& run_id) {
  return store_->LoadVerdicts(run_id);
}

StatusOr<RunMetricSet> RunReader::Load(const RunRecord& run) {
  FL_ASSIGN_OR_RETURN(auto metrics, Metrics(run.id));
  return ToMetricSet(run, metrics);
}

StatusOr<std::vector<RunMetricSet>> RunReader::SelectAll(
    const std::vector<std::string>& selectors, const std::optional<std::string>& scenario) {
  std::vector<RunMetricSet> runs;
  std::set<std::string> seen;
  for (const auto& sel : selectors) {
    auto got = Select(sel, scenario);
    if (!got.ok()) return Status(got.status()).Prepend(sel);
    for (auto& r : *got)
      if (seen.insert(r.run.id).second) runs.push_back(std::move(r));
  }
  return runs;
}

StatusOr<std::vector<RunMetricSet>> RunReader::Select(const std::string& selector,
                                                      const std::optional<std::string>& scenario) {
  std::vector<RunRecord> runs;
  if (selector.rfind("tag:", 0) == 0 || selector.rfind("date:", 0) == 0) {
    RunFilter f;
    FL_RETURN_IF_ERROR(selector[0] == 't' ? ParseTagSelector(selector, f)
                                          : ParseDateSelector(selector, f));
    f.scenario_name = scenario;
    FL_ASSIGN_OR_RETURN(auto all, store_->ListRuns(f));
    for (auto& r : all)
      if (r.status == RunStatus::kPassed || r.status == RunStatus::kFailed)
        runs.push_back(std::move(r));
    if (runs.empty())
      return NotFoundError("no finished run matches '" + selector + "'" +
                           (scenario ? " for scenario " + *scenario : ""));
  } else {
    FL_ASSIGN_OR_RETURN(RunRecord r, store_->GetRun(selector));
    runs.push_back(std::move(r));
  }
  std::vector<RunMetricSet> out;
  for (const auto& r : runs) {
    FL_ASSIGN_OR_RETURN(auto s, Load(r));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace fl::reports::compare
