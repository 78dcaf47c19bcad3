#include "reports/analysis/detector_score.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "common/ids.h"
#include "common/units.h"
#include "reports/analysis/stats.h"

namespace fl::reports::analysis {
namespace {

constexpr double kNsPerHour = 3600.0 * kNsPerSec;

std::string Secs(double s) {
  char buf[32];
  if (s > -1 && s < 1)
    std::snprintf(buf, sizeof buf, "%.0f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

std::string Observed(double hours) {
  char buf[32];
  if (hours < 1.0 / 60)
    std::snprintf(buf, sizeof buf, "%.1f s", hours * 3600);
  else if (hours < 1)
    std::snprintf(buf, sizeof buf, "%.1f min", hours * 60);
  else
    std::snprintf(buf, sizeof buf, "%.2f h", hours);
  return buf;
}

struct FaultRef {
  const TruthRun* run;
  const TruthFault* fault;
};

}  // namespace

bool TargetsMatch(std::string_view alert_target, std::string_view fault_target) {
  const auto a = TargetParts(alert_target), f = TargetParts(fault_target);
  if (a.empty()) return true;
  const size_t n = std::min(a.size(), f.size());
  if (n == 0) return false;
  for (size_t i = 0; i < n; ++i)
    if (a[i] != f[i]) return false;
  return true;
}

ScoreReport ScoreDetectors(const std::vector<TruthRun>& runs, const std::vector<Alert>& alerts,
                           const std::vector<std::string>& known, const ScoreOptions& o) {
  ScoreReport r;
  r.options = o;
  r.runs = runs.size();
  std::vector<FaultRef> faults;
  std::map<std::string, size_t> faults_of_kind;
  for (const auto& run : runs) {
    r.observed_hours +=
        static_cast<double>(std::max<Nanos>(0, run.end_ns - run.start_ns)) / kNsPerHour;
    for (const auto& f : run.faults) {
      faults.push_back({&run, &f});
      ++faults_of_kind[f.kind];
    }
  }
  r.faults = faults.size();

  std::set<std::string> names(known.begin(), known.end());
  for (const auto& a : alerts) names.insert(a.detector);
  std::map<std::string, DetectorScore> by_name;
  // per detector: fault index -> earliest latency (ns)
  std::map<std::string, std::map<size_t, Nanos>> first;
  for (const auto& n : names) by_name[n].name = n;

  for (const auto& a : alerts) {
    bool in_window = false, matched = false;
    for (const auto& run : runs)
      if (a.start_ns >= run.start_ns - o.skew_ns && a.start_ns <= run.end_ns + o.grace_ns)
        in_window = true;
    if (!in_window) {
      ++r.outside;
      continue;
    }
    auto& firsts = first[a.detector];
    for (size_t i = 0; i < faults.size(); ++i) {
      const TruthFault& f = *faults[i].fault;
      const Nanos end = f.reverted_ns.value_or(faults[i].run->end_ns);
      if (a.start_ns < f.effective_ns - o.skew_ns || a.start_ns > end + o.grace_ns) continue;
      if (!TargetsMatch(a.target, f.target)) continue;
      matched = true;
      const Nanos latency = a.start_ns - f.effective_ns;
      auto [it, fresh] = firsts.emplace(i, latency);
      if (!fresh) it->second = std::min(it->second, latency);
    }
    DetectorScore& d = by_name[a.detector];
    ++d.alerts;
    ++(matched ? d.true_alerts : d.false_alarms);
  }

  for (auto& [name, d] : by_name) {
    d.faults = faults.size();
    std::map<std::string, KindRecall> kinds;
    for (const auto& [kind, n] : faults_of_kind) kinds[kind] = {kind, n, 0};
    for (const auto& [i, latency] : first[name]) {
      ++d.detected;
      ++kinds[faults[i].fault->kind].detected;
      d.latencies_s.push_back(static_cast<double>(latency) / kNsPerSec);
    }
    for (auto& [kind, k] : kinds) d.by_kind.push_back(k);
    if (d.alerts > 0)
      d.precision = static_cast<double>(d.true_alerts) / static_cast<double>(d.alerts);
    d.recall = d.faults ? static_cast<double>(d.detected) / static_cast<double>(d.faults) : 0;
    const double p = d.precision.value_or(0);
    d.f1 = p + d.recall > 0 ? 2 * p * d.recall / (p + d.recall) : 0;
    if (!d.latencies_s.empty()) {
      d.latency_median_s = Median(d.latencies_s);
      d.latency_p90_s = Quantile(d.latencies_s, 0.9);
      d.latency_max_s = *std::max_element(d.latencies_s.begin(), d.latencies_s.end());
    }
    d.false_alarms_per_hour =
        r.observed_hours > 0 ? static_cast<double>(d.false_alarms) / r.observed_hours : 0;
    r.detectors.push_back(std::move(d));
  }
  return r;
}

std::string RenderScoreText(const ScoreReport& r) {
  std::string s = "detector scores: " + std::to_string(r.runs) + " run(s), " +
                  std::to_string(r.faults) + " fault(s), " + Observed(r.observed_hours) +
                  " observed (an alert counts from " + Secs(r.options.skew_ns / 1e9) +
                  " before a fault to " + Secs(r.options.grace_ns / 1e9) +
                  " after its revert; method: docs/detectors.md)\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-28s %6s %5s %5s %9s %7s %6s  %-28s %8s\n", "detector",
                "alerts", "true", "false", "precision", "recall", "F1",
                "latency: median (p90, max)", "false/h");
  s += line;
  for (const auto& d : r.detectors) {
    const std::string latency = d.latencies_s.empty()
                                    ? std::string("-")
                                    : Secs(d.latency_median_s) + " (" + Secs(d.latency_p90_s) +
                                          ", " + Secs(d.latency_max_s) + ")";
    std::snprintf(line, sizeof line, "  %-28s %6zu %5zu %5zu %9s %7s %6s  %-28s %8s\n",
                  d.name.c_str(), d.alerts, d.true_alerts, d.false_alarms,
                  d.precision ? FormatFixed(*d.precision, 3).c_str() : "-",
                  FormatFixed(d.recall, 3).c_str(), FormatFixed(d.f1, 3).c_str(), latency.c_str(),
                  FormatFixed(d.false_alarms_per_hour, 1).c_str());
    s += line;
    std::string kinds;
    for (const auto& k : d.by_kind)
      kinds += (kinds.empty() ? "" : ", ") + k.kind + " " + std::to_string(k.detected) + "/" +
               std::to_string(k.faults);
    if (!kinds.empty()) s += "      recall by kind: " + kinds + "\n";
  }
  if (r.detectors.empty()) s += "  (no detector: no alert read and none named)\n";
  if (r.outside > 0)
    s += "note: " + std::to_string(r.outside) +
         " alert(s) fell in no selected run's window and are not scored\n";
  return s;
}

// What ScoreJson writes of a detector under the fields' own names; it adds precision (null
// with no alert) and the latencies (latency_s).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KindRecall, kind, faults, detected)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DetectorScore, name, alerts, true_alerts, false_alarms, faults,
                                   detected, recall, f1, false_alarms_per_hour, by_kind)

std::string ScoreJson(const ScoreReport& r) {
  using nlohmann::json;
  json detectors = json::array();
  for (const auto& d : r.detectors) {
    json o = d;
    o["precision"] = d.precision ? json(*d.precision) : json(nullptr);
    o["latency_s"] = {{"each", d.latencies_s},
                      {"median", d.latencies_s.empty() ? json(nullptr) : json(d.latency_median_s)},
                      {"p90", d.latencies_s.empty() ? json(nullptr) : json(d.latency_p90_s)},
                      {"max", d.latencies_s.empty() ? json(nullptr) : json(d.latency_max_s)}};
    detectors.push_back(std::move(o));
  }
  json j = {{"runs", r.runs},
            {"faults", r.faults},
            {"observed_hours", r.observed_hours},
            {"grace_s", static_cast<double>(r.options.grace_ns) / kNsPerSec},
            {"skew_s", static_cast<double>(r.options.skew_ns) / kNsPerSec},
            {"outside", r.outside},
            {"detectors", detectors}};
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace fl::reports::analysis
