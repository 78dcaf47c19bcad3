#include "reports/compare/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "reports/compare/compare.h"

namespace fl::reports::compare {
namespace {

const std::vector<std::string> kDefaultMetrics = {
    "detection_latency_ms", "recovery_ms", "degraded_ratio", "throughput_loss_s", "baseline_algbw"};

bool Wanted(const std::vector<std::string>& metrics, const std::string& key) {
  std::string_view bare = BareName(key);
  for (const auto& m : metrics)
    if (m == key || m == bare) return true;
  return false;
}

std::string TagText(const std::map<std::string, std::string>& tags) {
  std::string s;
  for (const auto& [k, v] : tags) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

std::string Num(double v, const char* fmt = "%.4g") {
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// One line chart, 720 x 220, runs evenly spaced along x in time order.
std::string Svg(const HistorySeries& s) {
  const double w = 720, h = 220, left = 70, right = 15, top = 15, bottom = 35;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& p : s.points)
    if (p.value) lo = std::min(lo, *p.value), hi = std::max(hi, *p.value);
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" + Num(w) +
                    "\" height=\"" + Num(h) + "\" viewBox=\"0 0 " + Num(w) + " " + Num(h) + "\">";
  out += "<rect x=\"" + Num(left) + "\" y=\"" + Num(top) + "\" width=\"" + Num(w - left - right) +
         "\" height=\"" + Num(h - top - bottom) + "\" fill=\"#fafafa\" stroke=\"#ccc\"/>";
  if (!std::isfinite(lo)) return out + "<text x=\"80\" y=\"100\">no values</text></svg>";
  if (hi == lo) {
    double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  } else {
    double pad = (hi - lo) * 0.08;
    lo -= pad;
    hi += pad;
  }
  size_t n = s.points.size();
  auto x = [&](size_t i) {
    return n <= 1 ? (left + w - right) / 2
                  : left + (w - left - right) * static_cast<double>(i) / static_cast<double>(n - 1);
  };
  auto y = [&](double v) { return top + (h - top - bottom) * (hi - v) / (hi - lo); };
  for (int t = 0; t <= 4; ++t) {
    double v = lo + (hi - lo) * t / 4;
    out += "<line x1=\"" + Num(left) + "\" x2=\"" + Num(w - right) + "\" y1=\"" + Num(y(v)) +
           "\" y2=\"" + Num(y(v)) + "\" stroke=\"#e4e4e4\"/><text x=\"" + Num(left - 5) +
           "\" y=\"" + Num(y(v) + 4) + "\" font-size=\"11\" text-anchor=\"end\">" +
           HtmlEscape(FormatValue(v)) + "</text>";
  }
  std::string path;
  for (size_t i = 0; i < n; ++i) {
    if (!s.points[i].value) continue;
    path +=
        (path.empty() ? "M" : " L") + Num(x(i), "%.1f") + "," + Num(y(*s.points[i].value), "%.1f");
  }
  out += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#3060c0\" stroke-width=\"1.5\"/>";
  for (size_t i = 0; i < n; ++i) {
    const auto& p = s.points[i];
    bool failed = p.status != RunStatus::kPassed;
    if (p.value) {
      out += "<circle class=\"pt\" cx=\"" + Num(x(i), "%.1f") + "\" cy=\"" +
             Num(y(*p.value), "%.1f") + "\" r=\"3.5\" fill=\"" + (failed ? "#d03030" : "#3060c0") +
             "\"><title>" +
             HtmlEscape(p.run_id + ": " + FormatQuantity(*p.value, s.unit) +
                        (failed ? " (failed)" : "")) +
             "</title></circle>";
    } else {
      out += "<text x=\"" + Num(x(i), "%.1f") + "\" y=\"" + Num(h - bottom - 4) +
             "\" font-size=\"11\" fill=\"#d03030\" text-anchor=\"middle\">&#215;<title>" +
             HtmlEscape(p.run_id + ": no value") + "</title></text>";
    }
  }
  size_t step = std::max<size_t>(1, n / 8);
  for (size_t i = 0; i < n; i += step)
    out += "<text x=\"" + Num(x(i), "%.1f") + "\" y=\"" + Num(h - bottom + 15) +
           "\" font-size=\"10\" text-anchor=\"" +
           (n > 1 && i + step >= n ? "end"
            : i == 0 && n > 1      ? "start"
                                   : "middle") +
           "\">" + HtmlEscape(FormatWallIso(s.points[i].start_wall_ns).substr(5, 11)) + "</text>";
  out += "<text x=\"" + Num(left) + "\" y=\"" + Num(h - 4) + "\" font-size=\"11\">runs, oldest " +
         "to newest (" + std::to_string(n) + ")</text></svg>";
  return out;
}

}  // namespace

StatusOr<std::vector<HistorySeries>> LoadHistory(RunReader& reader, const std::string& scenario,
                                                 const HistoryOptions& options) {
  RunFilter f;
  f.scenario_name = scenario;
  f.tags = options.tags;
  FL_ASSIGN_OR_RETURN(auto runs, reader.store().ListRuns(f));
  std::vector<RunRecord> finished;
  for (auto& r : runs)
    if (r.status == RunStatus::kPassed || r.status == RunStatus::kFailed)
      finished.push_back(std::move(r));
  if (options.limit > 0 && finished.size() > options.limit) finished.resize(options.limit);
  if (finished.empty())
    return NotFoundError("no finished run of scenario '" + scenario + "'" +
                         (options.tags.empty() ? "" : " with tags " + TagText(options.tags)));
  std::reverse(finished.begin(), finished.end());  // oldest first
  const auto& wanted = options.metrics.empty() ? kDefaultMetrics : options.metrics;
  std::vector<RunMetricSet> sets;
  std::set<std::string> keys;
  std::map<std::string, std::string> units;
  for (const auto& r : finished) {
    FL_ASSIGN_OR_RETURN(auto s, reader.Load(r));
    for (const auto& [k, v] : s.values)
      if (Wanted(wanted, k)) keys.insert(k), units[k] = s.units[k];
    sets.push_back(std::move(s));
  }
  std::vector<HistorySeries> out;
  for (const auto& key : keys) {
    HistorySeries series{key, units[key], {}};
    for (const auto& s : sets) {
      HistoryPoint p{s.run.id, s.run.start_wall_ns, s.run.status, s.run.tags, std::nullopt};
      auto it = s.values.find(key);
      if (it != s.values.end()) p.value = it->second;
      series.points.push_back(std::move(p));
    }
    out.push_back(std::move(series));
  }
  if (out.empty())
    return NotFoundError("scenario '" + scenario + "' has no metric named " + [&] {
      std::string s;
      for (const auto& m : wanted) s += (s.empty() ? "" : ", ") + m;
      return s;
    }());
  return out;
}

std::string RenderHistoryText(const std::string& scenario,
                              const std::vector<HistorySeries>& series) {
  std::string out = "history of " + scenario + "\n";
  char line[512];
  for (const auto& s : series) {
    out += "\n" + s.key + (s.unit.empty() ? "" : " [" + s.unit + "]") + "\n";
    std::snprintf(line, sizeof line, "  %-24s %-24s %-8s %12s  %s\n", "run", "started", "status",
                  "value", "tags");
    out += line;
    std::vector<double> vals;
    for (const auto& p : s.points) {
      if (p.value) vals.push_back(*p.value);
      std::snprintf(
          line, sizeof line, "  %-24s %-24s %-8s %12s  %s\n", p.run_id.c_str(),
          FormatWallIso(p.start_wall_ns).c_str(), std::string(RunStatusName(p.status)).c_str(),
          p.value ? FormatQuantity(*p.value, s.unit).c_str() : "-", TagText(p.tags).c_str());
      out += line;
    }
    if (!vals.empty()) {
      auto [mn, mx] = std::minmax_element(vals.begin(), vals.end());
      out += "  " + std::to_string(vals.size()) + " value(s): min " + FormatQuantity(*mn, s.unit) +
             ", median " + FormatQuantity(Median(vals), s.unit) + ", max " +
             FormatQuantity(*mx, s.unit) + "\n";
    }
  }
  return out;
}

std::string RenderHistoryHtml(const std::string& scenario,
                              const std::vector<HistorySeries>& series) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>faultline "
      "history: " +
      HtmlEscape(scenario) +
      "</title><style>body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}"
      "table{border-collapse:collapse;font-size:12px;margin-bottom:2em}"
      "th,td{border:1px solid #ccc;padding:2px 8px}td.v{text-align:right}"
      "tr.failed td{color:#b02020}</style></head><body>\n<h1>history of " +
      HtmlEscape(scenario) + "</h1>\n";
  for (const auto& s : series) {
    out += "<h2>" + HtmlEscape(s.key) + (s.unit.empty() ? "" : " [" + HtmlEscape(s.unit) + "]") +
           "</h2>\n" + Svg(s) +
           "\n<table><tr><th>run</th><th>started</th><th>status</th>"
           "<th>value</th><th>tags</th></tr>\n";
    for (const auto& p : s.points) {
      out += std::string("<tr class=\"") + (p.status == RunStatus::kPassed ? "" : "failed") +
             "\"><td>" + HtmlEscape(p.run_id) + "</td><td>" +
             HtmlEscape(FormatWallIso(p.start_wall_ns)) + "</td><td>" +
             HtmlEscape(RunStatusName(p.status)) + "</td><td class=\"v\">" +
             (p.value ? HtmlEscape(FormatQuantity(*p.value, s.unit)) : "&ndash;") + "</td><td>" +
             HtmlEscape(TagText(p.tags)) + "</td></tr>\n";
    }
    out += "</table>\n";
  }
  return out + "</body></html>\n";
}

}  // namespace fl::reports::compare
