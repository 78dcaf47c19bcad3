#include "reports/serve/results_site.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>

#include "common/name_chars.h"
#include "reports/compare/acceptance.h"
#include "reports/compare/json.h"
#include "reports/compare/ledger_summary.h"
#include "reports/render/escape.h"
#include "reports/render/html.h"
#include "reports/render/json_view.h"
#include "reports/render/openmetrics.h"
#include "reports/render/run_view.h"
#include "reports/render/web_assets.h"
#include "reports/serve/overview.h"
#include "reports/serve/trends.h"

namespace fl::reports::serve {

// The trends JSON (/api/v1/trends) writes nights and change points under their fields' names.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrendNight, night, median, min, max, runs, last_run_id)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrendChange, night, night_index, before, after, shift, relative,
                                   score, changed, before_run_id, after_run_id)

namespace {

using nlohmann::json;
using render::HtmlEscape;

constexpr size_t kMaxTarget = 2048;
constexpr size_t kMaxLimit = 1000;

SiteReply Text(int status, std::string body) {
  return {status, "text/plain; charset=utf-8", std::move(body)};
}
SiteReply Json(int status, const json& j) {
  return {status, "application/json", j.dump(2, ' ', false, json::error_handler_t::replace) + "\n"};
}
SiteReply ApiError(int status, const std::string& what) { return Json(status, {{"error", what}}); }

// A bad request (400) as the API or a page says it.
SiteReply Bad(bool as_json, const std::string& what) {
  return as_json ? ApiError(400, what) : Text(400, what + "\n");
}

// A store or selection error: 404 for what is not there, 400 for a bad selector, 503 else.
SiteReply Failed(bool as_json, const Status& st) {
  const int http = st.code() == Code::kNotFound          ? 404
                   : st.code() == Code::kInvalidArgument ? 400
                                                         : 503;
  return as_json ? ApiError(http, st.message()) : Text(http, st.message() + "\n");
}

// A run id as NewRunId makes them: [A-Za-z0-9_-], at most 64 (anything else is 400, never a
// query).
bool IsRunId(std::string_view s) { return IsNameOf(s, 64, "-_"); }

// "a=1&b=2&b=3" -> {a: [1], b: [2, 3]}; nullopt for a malformed escape.
std::optional<std::multimap<std::string, std::string>> ParseQuery(std::string_view q) {
  std::multimap<std::string, std::string> out;
  while (!q.empty()) {
    const size_t amp = q.find('&');
    std::string_view part = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    auto k = UrlDecode(part.substr(0, eq));
    auto v = UrlDecode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
    if (!k || !v) return std::nullopt;
    out.emplace(*k, *v);
  }
  return out;
}

const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse}td,th{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:left}
.new_failure{background:#f8b4b4;font-weight:bold}.failed{background:#fbd5d5}
.running{background:#fdf6b2}.not_run{background:#e5e7eb;color:#555}.passed{background:#def7ec}
.muted{color:#666}a{color:#1a56db}
@media print{a{color:#000;text-decoration:none}}
)";

std::string Page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
         HtmlEscape(title) + "</title><style>" + kStyle + "</style></head><body>\n" + body +
         "</body></html>\n";
}

json OverviewJson(const std::vector<OverviewGroup>& groups) {
  json a = json::array();
  for (const auto& g : groups) {
    json cells = json::array();
    for (const auto& c : g.cells)
      cells.push_back(
          {{"scenario", c.scenario},
           {"state", CellStateName(c.state)},
           {"run_id", c.run_id.empty() ? json(nullptr) : json(c.run_id)},
           {"status", c.status.empty() ? json(nullptr) : json(c.status)},
           {"message", c.message},
           {"previous_run_id", c.previous_id.empty() ? json(nullptr) : json(c.previous_id)}});
    a.push_back({{"cluster", g.cluster},
                 {"suite", g.suite},
                 {"night", g.night},
                 {"newest_wall_ns", g.newest_wall_ns},
                 {"counts",
                  {{"new_failure", g.Count(CellState::kNewFailure)},
                   {"failed", g.Count(CellState::kFailed)},
                   {"running", g.Count(CellState::kRunning)},
                   {"not_run", g.Count(CellState::kNotRun)},
                   {"passed", g.Count(CellState::kPassed)}}},
                 {"cells", cells}});
  }
  return {{"groups", a}};
}

// A query value %-escaped (RFC 3986 unreserved characters kept).
std::string Escape(const std::string& v) {
  std::string o;
  for (unsigned char c : v) {
    if (IsNameChar(static_cast<char>(c), "-_.~")) {
      o += static_cast<char>(c);
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      o += b;
    }
  }
  return o;
}

std::string OverviewHtml(const std::vector<OverviewGroup>& groups, const std::string& db) {
  std::string b = "<h1>faultline: the latest night</h1>\n<p class=\"muted\">" + HtmlEscape(db) +
                  " &middot; <a href=\"/api/v1/overview\">JSON</a></p>\n";
  size_t cells = 0;
  if (groups.empty()) b += "<p>No runs in this store yet.</p>\n";
  for (const auto& g : groups) {
    b += "<h2>" + HtmlEscape(g.cluster) +
         (g.suite.empty() ? "" : " &middot; " + HtmlEscape(g.suite)) + " &middot; " + g.night +
         "</h2>\n<p class=\"muted\">" + std::to_string(g.Count(CellState::kNewFailure)) +
         " new failures, " + std::to_string(g.Count(CellState::kFailed)) + " failed, " +
         std::to_string(g.Count(CellState::kNotRun)) + " not run, " +
         std::to_string(g.Count(CellState::kPassed)) + " passed</p>\n";
    b += "<table "
         "class=\"fl-night\"><tr><th>scenario</th><th>state</th><th>run</th><th>why</th></tr>\n";
    for (const auto& c : g.cells) {
      ++cells;
      const std::string state(CellStateName(c.state));
      b += "<tr class=\"fl-cell " + state + "\" data-state=\"" + state + "\"><td>" +
           "<a href=\"/trends?scenario=" + HtmlEscape(Escape(c.scenario)) + "\">" +
           HtmlEscape(c.scenario) + "</a></td><td>" + state + "</td><td>";
      if (!c.run_id.empty())
        b += "<a href=\"/runs/" + HtmlEscape(c.run_id) + "\">" + HtmlEscape(c.run_id) + "</a>";
      else if (!c.previous_id.empty())
        b += "<span class=\"muted\">last: <a href=\"/runs/" + HtmlEscape(c.previous_id) + "\">" +
             HtmlEscape(c.previous_id) + "</a></span>";
      b += "</td><td>" + HtmlEscape(c.message) + "</td></tr>\n";
    }
    b += "</table>\n";
  }
  b += "<div id=\"fl-render-status\" data-groups=\"" + std::to_string(groups.size()) +
       "\" data-cells=\"" + std::to_string(cells) + "\"></div>\n";
  return Page("faultline: the latest night", b);
}

std::string Label(const std::string& v) { return render::EscapeLabelValue(render::ValidUtf8(v)); }

json TrendsJson(const std::string& scenario, const std::vector<TrendSeries>& series) {
  json a = json::array();
  for (const auto& s : series)
    a.push_back({{"key", s.key},
                 {"unit", s.unit},
                 {"nights", json(s.nights)},
                 {"change_points", json(s.changes)}});
  return {{"scenario", scenario}, {"series", a}};
}

std::string TrendsHtml(const std::string& scenario, const std::vector<TrendSeries>& series) {
  std::string data =
      TrendsJson(scenario, series).dump(-1, ' ', false, json::error_handler_t::replace);
  for (size_t p = 0; (p = data.find("</", p)) != std::string::npos; p += 3)
    data.replace(p, 2, "<\\/");
  std::string b = render::ErrorCaptureScript() + "<style>" + std::string(render::kUplotCss) +
                  "</style>\n<h1>" + HtmlEscape(scenario) +
                  " over nights</h1>\n<p class=\"muted\"><a href=\"/\">overview</a> &middot; "
                  "<a href=\"/api/v1/trends?scenario=" +
                  HtmlEscape(scenario) + "\">JSON</a></p>\n";
  for (size_t i = 0; i < series.size(); ++i) {
    const TrendSeries& s = series[i];
    b += "<h2>" + HtmlEscape(s.key) + (s.unit.empty() ? "" : " (" + HtmlEscape(s.unit) + ")") +
         "</h2>\n<div id=\"fl-trend-" + std::to_string(i) + "\"></div>\n";
    if (s.changes.empty()) {
      b += "<p class=\"muted\">no change point over " + std::to_string(s.nights.size()) +
           " nights</p>\n";
      continue;
    }
    b += "<table class=\"fl-changes\"><tr><th>first night</th><th>before</th><th>after</th>"
         "<th>shift</th><th>what changed</th></tr>\n";
    for (const auto& c : s.changes) {
      std::string changed;
      for (const auto& x : c.changed) changed += (changed.empty() ? "" : "; ") + x;
      char shift[64];
      std::snprintf(shift, sizeof shift, "%+.1f%%", 100 * c.relative);
      b += "<tr class=\"fl-change\"><td>" + c.night + "</td><td>" + render::FormatNumber(c.before) +
           "</td><td>" + render::FormatNumber(c.after) + "</td><td>" + shift + "</td><td>" +
           (changed.empty() ? std::string("nothing recorded") : HtmlEscape(changed)) +
           " (<a href=\"/runs/" + HtmlEscape(c.before_run_id) + "\">before</a>, <a href=\"/runs/" +
           HtmlEscape(c.after_run_id) + "\">after</a>)</td></tr>\n";
    }
    b += "</table>\n";
  }
  if (series.empty()) b += "<p>No finished run of this scenario has these metrics.</p>\n";
  b += "<div id=\"fl-render-status\" data-state=\"pending\"></div>\n";
  b += "<script type=\"application/json\" id=\"fl-trends-data\">" + data + "</script>\n";
  b += render::UplotScripts();
  b += render::InlineScriptElement(render::kTrendsJs);
  return Page(scenario + " over nights", b);
}

}  // namespace

std::optional<std::string> UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(s[i + 2])))
        return std::nullopt;
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

SiteReply ResultsSite::Handle(const std::string& method, const std::string& target) {
  if (target.size() > kMaxTarget || target.empty() || target[0] != '/')
    return Text(400, "bad request target\n");
  const size_t qm = target.find('?');
  const std::string path = target.substr(0, qm);
  const std::string query = qm == std::string::npos ? "" : target.substr(qm + 1);
  const bool api = path.rfind("/api/", 0) == 0;
  if (method != "GET" && method != "HEAD") {
    const std::string what = "only GET and HEAD: this server writes nothing";
    return api ? ApiError(405, what) : Text(405, what + "\n");
  }
  // The overview, /metrics and /healthz take no parameters: one given is a mistake, said so.
  if (!query.empty() && (path == "/" || path == "/index.html" || path == "/api/v1/overview" ||
                         path == "/metrics" || path == "/healthz"))
    return Bad(api, render::ValidUtf8(path) + " takes no parameters");
  try {
    if (path == "/healthz") {
      auto v = store_.SchemaVersion();
      if (!v.ok()) return Text(503, "store: " + v.status().message() + "\n");
      return Text(200, "ok\n");
    }
    if (path == "/" || path == "/index.html") return Overview(false);
    if (path == "/api/v1/overview") return Overview(true);
    if (path == "/api/v1/runs") return Runs(query);
    if (path == "/metrics") return Metrics();
    if (path == "/trends") return Trends(query, false);
    if (path == "/api/v1/trends") return Trends(query, true);
    if (path == "/accept") return Accept(query, false);
    if (path == "/api/v1/accept") return Accept(query, true);
    if (path == "/compare") return CompareSets(query, false);
    if (path == "/api/v1/compare") return CompareSets(query, true);
    const std::pair<std::string, bool> run_pages[] = {{"/api/v1/runs/", true}, {"/runs/", false}};
    for (const auto& [p, as_json] : run_pages) {
      if (path.rfind(p, 0) != 0) continue;
      auto id = UrlDecode(path.substr(p.size()));
      if (!id || !IsRunId(*id))
        return as_json ? ApiError(400, "not a run id: '" +
                                           render::ValidUtf8(path.substr(p.size())) + "'")
                       : Text(400, "not a run id\n");
      return Run(*id, as_json);
    }
  } catch (const std::exception& e) {  // a bug, said as one, the server goes on
    return Text(500, std::string("internal error: ") + e.what() + "\n");
  }
  if (api) return ApiError(404, "no such endpoint: " + render::ValidUtf8(path));
  return Text(404, "not found\n");
}

SiteReply ResultsSite::Overview(bool as_json) {
  RunFilter f;
  f.limit = options_.overview_runs;
  auto runs = store_.ListRuns(f);
  if (!runs.ok())
    return as_json ? ApiError(503, runs.status().message())
                   : Text(503, "store: " + runs.status().message() + "\n");
  auto groups = BuildOverview(*runs);
  if (as_json) return Json(200, OverviewJson(groups));
  return {200, "text/html; charset=utf-8", OverviewHtml(groups, options_.db_label)};
}

SiteReply ResultsSite::Runs(const std::string& query) {
  auto q = ParseQuery(query);
  if (!q) return ApiError(400, "malformed query string (a bad %-escape)");
  RunFilter f;
  f.limit = 100;
  for (const auto& [k, v] : *q) {
    if (k == "scenario") {
      f.scenario_name = v;
    } else if (k == "status") {
      auto s = ParseRunStatus(v);
      if (!s.ok())
        return ApiError(400, "status: '" + render::ValidUtf8(v) +
                                 "' is not one of running, passed, failed, aborted, error");
      f.status = *s;
    } else if (k == "tag") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0)
        return ApiError(400, "tag: want KEY=VALUE, got '" + render::ValidUtf8(v) + "'");
      f.tags[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (k == "limit") {
      size_t used = 0;
      long n = -1;
      try {
        n = std::stol(v, &used);
      } catch (const std::exception&) {
        n = -1;
      }
      if (used != v.size() || n < 1 || n > static_cast<long>(kMaxLimit))
        return ApiError(400, "limit: want 1 to " + std::to_string(kMaxLimit) + ", got '" +
                                 render::ValidUtf8(v) + "'");
      f.limit = static_cast<size_t>(n);
    } else {
      return ApiError(
          400, "unknown parameter '" + render::ValidUtf8(k) + "' (scenario, status, tag, limit)");
    }
  }
  auto runs = store_.ListRuns(f);
  if (!runs.ok()) return ApiError(503, runs.status().message());
  return {200, "application/json", render::RunListJson(*runs)};
}

SiteReply ResultsSite::Run(const std::string& id, bool as_json) {
  auto data = store_.LoadRun(id);
  if (!data.ok()) return Failed(as_json, data.status());
  if (as_json) return {200, "application/json", render::RunJson(*data)};
  render::HtmlOptions ho;
  ho.db_path = options_.db_label;
  return {200, "text/html; charset=utf-8", render::RenderHtml(*data, ho)};
}

SiteReply ResultsSite::Trends(const std::string& query, bool as_json) {
  auto q = ParseQuery(query);
  if (!q) return Bad(as_json, "malformed query string (a bad %-escape)");
  std::string scenario;
  TrendOptions o;
  for (const auto& [k, v] : *q) {
    if (k == "scenario") {
      scenario = v;
    } else if (k == "metric") {
      if (v.empty() || v.size() > 128) return Bad(as_json, "metric: want a metric name");
      o.metrics.push_back(v);
    } else if (k == "tag") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0)
        return Bad(as_json, "tag: want KEY=VALUE, got '" + render::ValidUtf8(v) + "'");
      o.tags[v.substr(0, eq)] = v.substr(eq + 1);
    } else {
      return Bad(as_json,
                 "unknown parameter '" + render::ValidUtf8(k) + "' (scenario, metric, tag)");
    }
  }
  if (scenario.empty()) return Bad(as_json, "scenario: which scenario (?scenario=NAME)");
  auto trends = LoadTrends(reader_, scenario, o);
  if (!trends.ok()) return Failed(as_json, trends.status());
  if (as_json) return Json(200, TrendsJson(scenario, *trends));
  return {200, "text/html; charset=utf-8", TrendsHtml(scenario, *trends)};
}

SiteReply ResultsSite::Accept(const std::string& query, bool as_json) {
  auto q = ParseQuery(query);
  if (!q) return Bad(as_json, "malformed query string (a bad %-escape)");
  compare::AcceptanceOptions o;  // compare's defaults: the CLI's without flags
  for (const auto& [k, v] : *q) {
    if (k == "baseline") {
      o.baseline = v;
    } else if (k == "candidate") {
      o.candidate = v;
    } else if (k == "scenario") {
      o.scenario = v;
    } else {
      return Bad(as_json, "unknown parameter '" + render::ValidUtf8(k) +
                              "' (baseline, candidate, scenario)");
    }
  }
  if (o.baseline.empty() || o.candidate.empty())
    return Bad(as_json, "baseline and candidate: run selectors (tag:fw=22.39, a run id, latest)");
  auto a = compare::RunAcceptance(reader_, o);
  if (!a.ok()) return Failed(as_json, a.status());
  if (as_json) return {200, "application/json", compare::AcceptanceJson(*a)};
  return {200, "text/html; charset=utf-8", compare::AcceptanceHtml(*a)};
}

SiteReply ResultsSite::CompareSets(const std::string& query, bool as_json) {
  auto q = ParseQuery(query);
  if (!q) return Bad(as_json, "malformed query string (a bad %-escape)");
  std::string a, b;
  std::optional<std::string> scenario;
  for (const auto& [k, v] : *q) {
    if (k == "a") {
      a = v;
    } else if (k == "b") {
      b = v;
    } else if (k == "scenario") {
      scenario = v;
    } else {
      return Bad(as_json, "unknown parameter '" + render::ValidUtf8(k) + "' (a, b, scenario)");
    }
  }
  if (a.empty() || b.empty())
    return Bad(as_json,
               "a and b: run selectors (a run id, latest, tag:k=v, date:YYYY-MM-DD[..YYYY-MM-DD])");

  auto ra = reader_.Select(a, scenario);
  if (!ra.ok()) return Failed(as_json, ra.status());
  auto rb = reader_.Select(b, scenario);
  if (!rb.ok()) return Failed(as_json, rb.status());
  compare::Comparison c = compare::Compare(*ra, *rb, {}, a, b);
  if (c.rows.empty())
    return Failed(as_json,
                  InvalidArgumentError("nothing to compare: no scenario has runs on both sides"));
  auto ledger = compare::SummariseLedgers(reader_, *ra, *rb);  // as `faultline compare` does
  if (!ledger.ok()) return Failed(as_json, ledger.status());
  c.ledger = std::move(*ledger);
  if (as_json) return {200, "application/json", compare::ComparisonJson(c) + "\n"};
  return {200, "text/html; charset=utf-8", compare::RenderHtml(c)};
}

SiteReply ResultsSite::Metrics() {
  RunFilter f;
  f.limit = options_.overview_runs;
  auto runs = store_.ListRuns(f);
  if (!runs.ok()) return Text(503, "store: " + runs.status().message() + "\n");
  std::map<std::string, size_t> by_status;
  for (const char* s : {"running", "passed", "failed", "aborted", "error"}) by_status[s] = 0;
  for (const auto& r : *runs) ++by_status[std::string(RunStatusName(r.status))];
  std::string m;
  m += "# HELP faultline_serve_runs Runs in the store by status (the newest " +
       std::to_string(options_.overview_runs) + " at most).\n# TYPE faultline_serve_runs gauge\n";
  for (const auto& [s, n] : by_status)
    m += "faultline_serve_runs{status=\"" + s + "\"} " + std::to_string(n) + "\n";
  const auto groups = BuildOverview(*runs);
  m += "# HELP faultline_night_start_seconds When the latest run of each cluster and suite "
       "started.\n# TYPE faultline_night_start_seconds gauge\n# UNIT faultline_night_start_seconds "
       "seconds\n";
  for (const auto& g : groups)
    m += "faultline_night_start_seconds{cluster=\"" + Label(g.cluster) + "\",suite=\"" +
         Label(g.suite) + "\"} " + std::to_string(g.newest_wall_ns / kNsPerSec) + "\n";
  m += "# HELP faultline_night_scenarios Scenarios of each cluster and suite's latest night, by "
       "state.\n# TYPE faultline_night_scenarios gauge\n";
  for (const auto& g : groups)
    for (auto s : {CellState::kNewFailure, CellState::kFailed, CellState::kRunning,
                   CellState::kNotRun, CellState::kPassed})
      m += "faultline_night_scenarios{cluster=\"" + Label(g.cluster) + "\",suite=\"" +
           Label(g.suite) + "\",state=\"" + std::string(CellStateName(s)) + "\"} " +
           std::to_string(g.Count(s)) + "\n";
  m += "# EOF\n";
  return {200, "application/openmetrics-text; version=1.0.0; charset=utf-8", m};
}

}  // namespace fl::reports::serve
