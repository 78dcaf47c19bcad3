#include "reports/compare/run_metrics.h"

#include <unistd.h>

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
  if (access(db_path.c_str(), F_OK) != 0)
    return NotFoundError("results database '" + db_path + "' does not exist");
  FL_ASSIGN_OR_RETURN(auto store, Store::Open(db_path, {.create = false}));
  FL_ASSIGN_OR_RETURN(auto db, OpenStoreDb(db_path, false, 5 * kNsPerSec, 0));
  return std::unique_ptr<RunReader>(new RunReader(std::move(store), std::move(db)));
}

StatusOr<std::vector<MetricRecord>> RunReader::Metrics(const std::string& run_id) {
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT fault_id, name, value, unit FROM metrics "
                                            "WHERE run_id = ?1 ORDER BY rowid"));
  st.Bind(1, run_id);
  std::vector<MetricRecord> out;
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    MetricRecord m;
    m.run_id = run_id;
    m.fault_id = st.OptText(0);
    m.name = st.Text(1);
    m.value = st.Double(2);
    m.unit = st.Text(3);
    out.push_back(std::move(m));
  }
  return out;
}

StatusOr<std::vector<VerdictRecord>> RunReader::Verdicts(const std::string& run_id) {
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT fault_id, expectation, passed, observed, "
                                            "limit_value, message FROM verdicts "
                                            "WHERE run_id = ?1 ORDER BY rowid"));
  st.Bind(1, run_id);
  std::vector<VerdictRecord> out;
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    VerdictRecord v;
    v.run_id = run_id;
    v.fault_id = st.OptText(0);
    v.expectation = st.Text(1);
    v.passed = st.Int(2) != 0;
    v.observed = st.OptDouble(3);
    v.limit = st.OptDouble(4);
    v.message = st.Text(5);
    out.push_back(std::move(v));
  }
  return out;
}

StatusOr<RunMetricSet> RunReader::Load(const RunRecord& run) {
  FL_ASSIGN_OR_RETURN(auto metrics, Metrics(run.id));
  return ToMetricSet(run, metrics);
}

StatusOr<std::vector<RunMetricSet>> RunReader::Select(const std::string& selector,
                                                      const std::optional<std::string>& scenario) {
  std::vector<RunRecord> runs;
  if (selector.rfind("tag:", 0) == 0) {
    RunFilter f;
    FL_RETURN_IF_ERROR(ParseTagSelector(selector, f));
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
