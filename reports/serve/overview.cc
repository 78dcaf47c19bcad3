#include "reports/serve/overview.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace fl::reports::serve {

std::string_view CellStateName(CellState s) {
  switch (s) {
    case CellState::kNewFailure:
      return "new_failure";
    case CellState::kFailed:
      return "failed";
    case CellState::kRunning:
      return "running";
    case CellState::kNotRun:
      return "not_run";
    case CellState::kPassed:
      return "passed";
  }
  return "passed";
}

size_t OverviewGroup::Count(CellState s) const {
  return static_cast<size_t>(std::count_if(cells.begin(), cells.end(),
                                           [s](const OverviewCell& c) { return c.state == s; }));
}

std::string ClusterOf(const RunRecord& run) {
  if (auto t = run.tags.find("cluster"); t != run.tags.end() && !t->second.empty())
    return t->second;
  // The lab file's own top-level `name:` (a topology's or an inventory's).
  std::istringstream in(run.lab_text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("name:", 0) != 0) continue;
    std::string v = line.substr(5);
    if (auto hash = v.find('#'); hash != std::string::npos) v = v.substr(0, hash);
    while (!v.empty() && (v.front() == ' ' || v.front() == '"' || v.front() == '\'')) v.erase(0, 1);
    while (!v.empty() &&
           (v.back() == ' ' || v.back() == '"' || v.back() == '\'' || v.back() == '\r'))
      v.pop_back();
    if (!v.empty()) return v;
  }
  return "local";
}

std::string NightOf(Nanos wall_ns) { return FormatWallIso(wall_ns).substr(0, 10); }

namespace {

bool Failed(RunStatus s) {
  return s == RunStatus::kFailed || s == RunStatus::kAborted || s == RunStatus::kError;
}

}  // namespace

std::vector<OverviewGroup> BuildOverview(const std::vector<RunRecord>& runs) {
  // Runs per group, newest first (the input's order).
  std::map<std::pair<std::string, std::string>, std::vector<const RunRecord*>> groups;
  for (const auto& r : runs) {
    auto s = r.tags.find("suite");
    groups[{ClusterOf(r), s == r.tags.end() ? std::string() : s->second}].push_back(&r);
  }
  std::vector<OverviewGroup> out;
  for (auto& [key, list] : groups) {
    std::stable_sort(list.begin(), list.end(), [](const RunRecord* a, const RunRecord* b) {
      return a->start_wall_ns > b->start_wall_ns;
    });
    OverviewGroup g;
    g.cluster = key.first;
    g.suite = key.second;
    g.newest_wall_ns = list.front()->start_wall_ns;
    g.night = NightOf(g.newest_wall_ns);
    std::map<std::string, OverviewCell> cells;
    std::set<std::string> earlier_seen;
    for (const RunRecord* r : list) {
      const bool latest = NightOf(r->start_wall_ns) == g.night;
      auto it = cells.find(r->scenario_name);
      if (latest) {
        if (it != cells.end()) continue;  // its newest run of the night counts
        OverviewCell c;
        c.scenario = r->scenario_name;
        c.run_id = r->id;
        c.status = std::string(RunStatusName(r->status));
        c.message = r->message;
        c.state = r->status == RunStatus::kRunning ? CellState::kRunning
                  : Failed(r->status)              ? CellState::kNewFailure
                                                   : CellState::kPassed;
        cells.emplace(c.scenario, c);
        continue;
      }
      // An earlier night: the scenario's previous run decides whether a failure is new.
      if (it == cells.end()) {
        if (earlier_seen.insert(r->scenario_name).second) {
          OverviewCell c;
          c.scenario = r->scenario_name;
          c.state = CellState::kNotRun;
          c.previous_id = r->id;
          cells.emplace(c.scenario, c);
        }
        continue;
      }
      if (!it->second.previous_id.empty() || it->second.state == CellState::kNotRun) continue;
      it->second.previous_id = r->id;
      if (it->second.state == CellState::kNewFailure && Failed(r->status))
        it->second.state = CellState::kFailed;  // it failed the night before too
    }
    for (auto& [name, c] : cells) g.cells.push_back(std::move(c));
    std::stable_sort(g.cells.begin(), g.cells.end(),
                     [](const OverviewCell& a, const OverviewCell& b) {
                       return std::tie(a.state, a.scenario) < std::tie(b.state, b.scenario);
                     });
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const OverviewGroup& a, const OverviewGroup& b) {
    return std::tie(b.night, a.cluster, a.suite) < std::tie(a.night, b.cluster, b.suite);
  });
  return out;
}

}  // namespace fl::reports::serve
