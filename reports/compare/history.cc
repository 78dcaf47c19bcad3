#include "reports/compare/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "reports/compare/compare.h"
#include "reports/render/escape.h"
#include "reports/render/html.h"
#include "reports/render/web_assets.h"

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

}  // namespace

StatusOr<std::vector<HistorySeries>> LoadHistory(RunReader& reader, const std::string& scenario,
                                                 const HistoryOptions& options) {
  RunFilter f;
  f.scenario_name = scenario;
  f.tags = options.tags;
  f.finished_only = true;
  f.limit = options.limit;  // the newest, in the query
  FL_ASSIGN_OR_RETURN(auto finished, reader.store().ListRuns(f));
  if (finished.empty())
    return NotFoundError("no finished run of scenario '" + scenario + "'" +
                         (options.tags.empty() ? "" : " with tags " + TagText(options.tags)));
  std::reverse(finished.begin(), finished.end());  // oldest first
  const auto& wanted = options.metrics.empty() ? kDefaultMetrics : options.metrics;
  std::vector<RunMetricSet> sets;
  std::set<std::string> keys;
  std::map<std::string, std::string> units;
  std::vector<std::string> ids;
  for (const auto& r : finished) ids.push_back(r.id);
  FL_ASSIGN_OR_RETURN(auto metrics, reader.store().LoadMetricsOf(ids));
  for (size_t i = 0; i < finished.size(); ++i) {
    RunMetricSet s = ToMetricSet(finished[i], metrics[i]);
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
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"generator\" content=\"faultline history\"><title>faultline "
      "history: " +
      HtmlEscape(scenario) + "</title>\n" + render::ErrorCaptureScript() + "<style>";
  out += render::kUplotCss;
  out += "\n";
  out += render::kReportCss;
  out +=
      "\ntr.failed td{color:#b02020}td.v{text-align:right}</style></head><body>\n"
      "<header><h1>history of " +
      HtmlEscape(scenario) +
      "</h1><p>finished runs, oldest to newest: passed runs in blue, failed runs in red, a "
      "run without a value as a red &#215; at the bottom</p></header>\n<main>\n";
  // The data the page's script draws (render/web/history.js); JsonString is safe in <script>.
  std::string data = "{\"series\":[";
  for (size_t i = 0; i < series.size(); ++i) {
    const HistorySeries& s = series[i];
    if (i) data += ',';
    data += "{\"key\":" + render::JsonString(s.key) + ",\"unit\":" + render::JsonString(s.unit);
    std::string runs, started, failed, y, text;
    for (size_t k = 0; k < s.points.size(); ++k) {
      const HistoryPoint& p = s.points[k];
      const char* sep = k ? "," : "";
      runs += sep + render::JsonString(p.run_id);
      started += sep + render::JsonString(FormatWallIso(p.start_wall_ns));
      failed += sep + std::string(p.status == RunStatus::kPassed ? "false" : "true");
      y += sep + (p.value && std::isfinite(*p.value) ? Num(*p.value, "%.9g") : std::string("null"));
      text += sep + render::JsonString(p.value ? FormatQuantity(*p.value, s.unit) : "");
    }
    data += ",\"runs\":[" + runs + "],\"started\":[" + started + "],\"failed\":[" + failed +
            "],\"y\":[" + y + "],\"text\":[" + text + "]}";
    out += "<section><h2>" + HtmlEscape(s.key) +
           (s.unit.empty() ? "" : " <small>" + HtmlEscape(s.unit) + "</small>") +
           "</h2>\n<div id=\"history-chart-" + std::to_string(i) +
           "\" class=\"chart\"></div>\n<table><thead><tr><th>run</th><th>started</th>"
           "<th>status</th><th>value</th><th>tags</th></tr></thead><tbody>\n";
    for (const auto& p : s.points) {
      out += std::string("<tr class=\"") + (p.status == RunStatus::kPassed ? "" : "failed") +
             "\"><td>" + HtmlEscape(p.run_id) + "</td><td>" +
             HtmlEscape(FormatWallIso(p.start_wall_ns)) + "</td><td>" +
             HtmlEscape(RunStatusName(p.status)) + "</td><td class=\"v\">" +
             (p.value ? HtmlEscape(FormatQuantity(*p.value, s.unit)) : "&ndash;") + "</td><td>" +
             HtmlEscape(TagText(p.tags)) + "</td></tr>\n";
    }
    out += "</tbody></table></section>\n";
  }
  data += "]}";
  out +=
      "</main>\n<div id=\"fl-render-status\" data-state=\"pending\" hidden></div>\n"
      "<script type=\"application/json\" id=\"fl-data\">" +
      data + "</script>\n";
  out += render::UplotScripts();
  out += render::InlineScriptElement(render::kHistoryJs);
  return out + "</body></html>\n";
}

}  // namespace fl::reports::compare
