#include "reports/serve/trends.h"

#include <algorithm>
#include <set>

#include "reports/analysis/change_points.h"
#include "reports/analysis/stats.h"
#include "reports/serve/overview.h"

namespace fl::reports::serve {
namespace {

// Tags that differ per run by construction, not set-up.
bool NamesTheRun(const std::string& key) {
  return key == "suite_run" || key.rfind("sweep", 0) == 0;
}

using TagValues = std::map<std::string, std::set<std::string>>;

std::string Join(const std::set<std::string>& v) {
  if (v.empty()) return "(none)";
  std::string o;
  for (const auto& x : v) o += (o.empty() ? "" : ",") + x;
  return o;
}

// The tags whose values on the night before differ from those on the change's night (a night
// of several clusters has each cluster's value: the set is what is compared).
std::vector<std::string> ChangedTags(const TagValues& a, const TagValues& b) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  std::vector<std::string> out;
  for (const auto& k : keys) {
    if (NamesTheRun(k)) continue;
    auto x = a.find(k), y = b.find(k);
    const std::string before = x == a.end() ? "(none)" : Join(x->second);
    const std::string after = y == b.end() ? "(none)" : Join(y->second);
    if (before != after) out.push_back(k + ": " + before + " -> " + after);
  }
  return out;
}

}  // namespace

std::vector<TrendSeries> BuildTrends(const std::vector<compare::HistorySeries>& history) {
  std::vector<TrendSeries> out;
  for (const auto& h : history) {
    TrendSeries s;
    s.key = h.key;
    s.unit = h.unit;
    // Points are oldest first; a night's points are consecutive.
    struct Night {
      std::vector<double> values;
      TagValues tags;
      const compare::HistoryPoint* first = nullptr;
      const compare::HistoryPoint* last = nullptr;
    };
    std::vector<std::pair<std::string, Night>> nights;
    for (const auto& p : h.points) {
      if (!p.value) continue;
      const std::string night = NightOf(p.start_wall_ns);
      if (nights.empty() || nights.back().first != night) nights.push_back({night, {}});
      Night& n = nights.back().second;
      n.values.push_back(*p.value);
      for (const auto& [k, v] : p.tags) n.tags[k].insert(v);
      if (!n.first) n.first = &p;
      n.last = &p;
    }
    std::vector<double> medians;
    for (const auto& [night, n] : nights) {
      TrendNight t;
      t.night = night;
      t.median = analysis::Median(n.values);
      t.min = *std::min_element(n.values.begin(), n.values.end());
      t.max = *std::max_element(n.values.begin(), n.values.end());
      t.runs = n.values.size();
      t.last_run_id = n.last->run_id;
      s.nights.push_back(t);
      medians.push_back(t.median);
    }
    for (const auto& cp : analysis::FindChangePoints(medians)) {
      TrendChange c;
      c.night_index = cp.index;
      c.night = s.nights[cp.index].night;
      c.before = cp.before;
      c.after = cp.after;
      c.shift = cp.shift;
      c.relative = cp.relative;
      c.score = cp.score;
      const auto* before = nights[cp.index - 1].second.last;
      const auto* after = nights[cp.index].second.first;
      c.before_run_id = before->run_id;
      c.after_run_id = after->run_id;
      c.changed = ChangedTags(nights[cp.index - 1].second.tags, nights[cp.index].second.tags);
      s.changes.push_back(std::move(c));
    }
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<std::vector<TrendSeries>> LoadTrends(compare::RunReader& reader,
                                              const std::string& scenario,
                                              const TrendOptions& options) {
  compare::HistoryOptions ho;
  ho.metrics = options.metrics;
  ho.tags = options.tags;
  ho.limit = options.max_runs;
  FL_ASSIGN_OR_RETURN(auto history, compare::LoadHistory(reader, scenario, ho));
  return BuildTrends(history);
}

}  // namespace fl::reports::serve
