#include "reports/render/html.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "common/json_util.h"
#include "reports/render/escape.h"
#include "reports/render/junit.h"
#include "reports/render/run_view.h"
#include "reports/render/throughput.h"
#include "reports/render/web_assets.h"

namespace fl::reports::render {
namespace {

std::string H(std::string_view s) { return HtmlEscape(s); }

// Seconds since t0 as a JSON number with millisecond resolution.
void JsonSeconds(std::string& o, Nanos ns, Nanos t0) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns - t0) / kNsPerSec);
  o += buf;
}

void JsonNumber(std::string& o, std::optional<double> v) {
  if (!v || !std::isfinite(*v)) {
    o += "null";
    return;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.5g", *v);
  o += buf;
}

// v / scale (a chart's unit), null when v is unset.
void JsonScaled(std::string& o, std::optional<double> v, double scale) {
  JsonNumber(o, v ? std::optional<double>(*v / scale) : std::nullopt);
}

using Bins = std::vector<std::optional<double>>;

// [v / scale, ...] over the bins of one line of a chart.
void JsonScaledRow(std::string& o, const Bins& row, double scale) {
  o += '[';
  for (size_t b = 0; b < row.size(); ++b) {
    if (b) o += ',';
    JsonScaled(o, row[b], scale);
  }
  o += ']';
}

// [[...], ...]: every line of a chart.
void JsonScaledRows(std::string& o, const std::vector<Bins>& rows, double scale) {
  o += '[';
  for (size_t r = 0; r < rows.size(); ++r) {
    if (r) o += ',';
    JsonScaledRow(o, rows[r], scale);
  }
  o += ']';
}

// The largest value of a chart's lines (0 when they have none): what its unit is chosen by.
double Peak(const std::vector<Bins>& rows) {
  double peak = 0;
  for (const auto& row : rows)
    for (const auto& v : row)
      if (v) peak = std::max(peak, *v);
  return peak;
}

// A binned chart's time axis, ,"bin_s":W,"x":[centre of each of the first `bins` bins]
// (ThroughputSeries, NicTrafficSeries).
template <typename Series>
void JsonBinAxis(std::string& o, const Series& series, size_t bins) {
  o += ",\"bin_s\":";
  JsonNumber(o, static_cast<double>(series.bin_ns) / kNsPerSec);
  o += ",\"x\":[";
  for (size_t b = 0; b < bins; ++b) {
    if (b) o += ',';
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", series.BinCenterSeconds(b));
    o += buf;
  }
  o += ']';
}

void JsonOptSeconds(std::string& o, std::optional<Nanos> ns, Nanos t0) {
  if (ns) {
    JsonSeconds(o, *ns, t0);
  } else {
    o += "null";
  }
}

std::string Relative(std::optional<Nanos> ns, Nanos t0) {
  if (!ns) return "—";
  return FormatSeconds(*ns - t0);
}

std::string StatusClass(bool ok) { return ok ? "pass" : "fail"; }

// ---- the data the page's script draws (JSON inside <script type="application/json">) ----

std::string ChartData(const RunView& view, const HtmlOptions& options) {
  const RunData& d = view.data();
  const Nanos t0 = view.t0(), t1 = view.t1();
  std::string o;
  o.reserve(64 * 1024);
  o += "{\"duration\":";
  JsonSeconds(o, t1, t0);

  // Per-rank throughput, binned.
  // The median sample duration, from a spread subset (enough to set a bin width).
  std::vector<Nanos> durations;
  const size_t stride = std::max<size_t>(1, d.samples.size() / 4096);
  for (size_t i = 0; i < d.samples.size(); i += stride)
    durations.push_back(d.samples[i].end_ns - d.samples[i].start_ns);
  Nanos min_bin = kNsPerMs;
  if (!durations.empty()) {
    std::nth_element(durations.begin(), durations.begin() + durations.size() / 2, durations.end());
    min_bin = std::max(
        min_bin, static_cast<Nanos>(options.min_bin_samples * durations[durations.size() / 2]));
  }
  ThroughputSeries tp = BinThroughput(d.samples, t0, t1, options.max_points, min_bin);
  double scale = Peak(tp.values) >= 1e9 ? 1e9 : 1e6;
  o += ",\"throughput\":{\"unit\":";
  o += scale == 1e9 ? "\"GB/s\"" : "\"MB/s\"";
  JsonBinAxis(o, tp, tp.bins);
  o += ",\"ranks\":[";
  for (size_t r = 0; r < tp.ranks.size(); ++r) {
    if (r) o += ',';
    o += std::to_string(tp.ranks[r]);
  }
  o += "],\"y\":";
  JsonScaledRows(o, tp.values, scale);
  // The job's line: the algbw of its iterations (BinJobThroughput), the quantity the baseline
  // and degraded levels are medians of.
  o += ",\"job\":";
  JsonScaledRow(o, BinJobThroughput(d.samples, tp), scale);
  o += ",\"baseline\":";
  JsonScaled(o, view.RunMetric("baseline_algbw"), scale);
  o += '}';

  // Fault windows.
  o += ",\"faults\":[";
  bool first = true;
  for (const auto& fv : view.faults()) {
    const FaultRecord& f = *fv.fault;
    if (!first) o += ',';
    first = false;
    o += "{\"id\":" + JsonString(f.fault_id) + ",\"kind\":" + JsonString(f.kind) +
         ",\"target\":" + JsonString(f.target) + ",\"requested\":";
    JsonOptSeconds(o, f.requested_wall_ns ? f.requested_wall_ns : fv.InjectionTime(), t0);
    o += ",\"effective\":";
    JsonOptSeconds(o, f.effective_wall_ns, t0);
    o += ",\"reverted\":";
    JsonOptSeconds(o, f.reverted_wall_ns, t0);
    o += ",\"degraded\":";
    JsonScaled(o, fv.Metric("degraded_algbw"), scale);
    o += '}';
  }
  o += ']';

  // Per-fault timeline: milestones in ms after the fault took effect, and the expectation
  // limits on them.
  o += ",\"timeline\":[";
  first = true;
  for (const auto& fv : view.faults()) {
    const FaultRecord& f = *fv.fault;
    if (!first) o += ',';
    first = false;
    const std::optional<Nanos> at = fv.InjectionTime();
    o += "{\"id\":" + JsonString(f.fault_id) +
         ",\"label\":" + JsonString(view.FaultLabel(f.fault_id)) + ",\"t\":";
    JsonOptSeconds(o, at, t0);
    o += ",\"marks\":[";
    bool first_mark = true;
    auto mark = [&](std::string_view name, std::optional<double> ms) {
      if (!ms || !std::isfinite(*ms)) return;
      if (!first_mark) o += ',';
      first_mark = false;
      o += "[\"";
      o += name;
      o += "\",";
      JsonNumber(o, std::max(0.0, *ms));
      o += ']';
    };
    std::optional<double> reverted_ms;
    if (at && f.reverted_wall_ns)
      reverted_ms = static_cast<double>(*f.reverted_wall_ns - *at) / kNsPerMs;
    if (at) {
      mark("detected", fv.Metric("detection_latency_ms"));
      mark("first progress", fv.Metric("time_to_first_progress_ms"));
      mark("recovered", fv.Metric("recovery_ms"));
      mark("reverted", reverted_ms);
      auto failback = fv.Metric("failback_ms");
      mark("failed back", reverted_ms && failback ? std::optional<double>(*reverted_ms + *failback)
                                                  : std::nullopt);
    }
    o += "],\"limits\":[";
    bool first_limit = true;
    for (const auto& v : d.verdicts) {
      if (v.fault_id != f.fault_id || !v.limit) continue;
      std::string_view name = v.expectation == "max_detection_ms"  ? "detection"
                              : v.expectation == "max_recovery_ms" ? "recovery"
                                                                   : "";
      if (name.empty()) continue;
      if (!first_limit) o += ',';
      first_limit = false;
      o += "{\"name\":\"";
      o += name;
      o += "\",\"ms\":";
      JsonNumber(o, *v.limit);
      o += std::string(",\"passed\":") + (v.passed ? "true" : "false") + '}';
    }
    o += "]}";
  }
  o += ']';

  // Per-NIC traffic (rx + tx) from the counters the agents sampled.
  NicTrafficSeries nic = BinNicTraffic(d.nics, t0, t1, options.max_points);
  const double nic_peak = Peak(nic.values);
  const double nic_scale = nic_peak >= 1e9   ? 1e9
                           : nic_peak >= 1e6 ? 1e6
                           : nic_peak >= 1e3 ? 1e3
                                             : 1;
  o += ",\"nics\":{\"unit\":";
  o += nic_scale == 1e9   ? "\"GB/s\""
       : nic_scale == 1e6 ? "\"MB/s\""
       : nic_scale == 1e3 ? "\"kB/s\""
                          : "\"B/s\"";
  JsonBinAxis(o, nic, nic.labels.empty() ? 0 : nic.bins);  // no NICs: no axis either
  o += ",\"labels\":[";
  for (size_t i = 0; i < nic.labels.size(); ++i) {
    if (i) o += ',';
    o += JsonString(nic.labels[i]);
  }
  o += "],\"y\":";
  JsonScaledRows(o, nic.values, nic_scale);
  o += '}';

  // Event markers: every kind but progress reports, thinned evenly per kind beyond max_markers.
  std::map<std::string, std::vector<const EventRecord*>> by_kind;
  size_t total = 0;
  for (const auto& e : d.events) {
    if (IsProgressEvent(e.kind)) continue;
    by_kind[e.kind].push_back(&e);
    ++total;
  }
  o += ",\"events\":{\"kinds\":[";
  first = true;
  for (const auto& [kind, list] : by_kind) {
    if (!first) o += ',';
    first = false;
    o += JsonString(kind);
  }
  o += "],\"t\":[";
  std::string ks = "],\"k\":[", rs = "],\"r\":[";
  size_t kind_index = 0;
  first = true;
  for (const auto& [kind, list] : by_kind) {
    size_t keep = total <= options.max_markers
                      ? list.size()
                      : std::max<size_t>(1, list.size() * options.max_markers / total);
    for (size_t i = 0; i < keep; ++i) {
      const EventRecord& e = *list[i * list.size() / keep];
      if (!first) {
        o += ',';
        ks += ',';
        rs += ',';
      }
      first = false;
      JsonSeconds(o, e.wall_ns, t0);
      ks += std::to_string(kind_index);
      rs += std::to_string(e.rank);
    }
    ++kind_index;
  }
  o += ks + rs + "]}";

  // Per-fault latencies (ms).
  static constexpr std::string_view kLatencies[][2] = {
      {"detection_latency_ms", "detection"},
      {"failover_ms", "failover"},
      {"time_to_first_progress_ms", "first progress"},
      {"recovery_ms", "recovery"},
      {"failback_ms", "failback"},
      {"path_restored_ms", "path restored"},
      {"restart_cost_ms", "restart cost"},
  };
  o += ",\"per_fault\":{\"ids\":[";
  first = true;
  for (const auto& fv : view.faults()) {
    if (!first) o += ',';
    first = false;
    o += JsonString(fv.fault->fault_id);
  }
  o += "],\"series\":[";
  first = true;
  for (const auto& [name, title] : kLatencies) {
    bool any = false;
    for (const auto& fv : view.faults()) any = any || fv.Metric(name).has_value();
    if (!any) continue;
    if (!first) o += ',';
    first = false;
    o += "{\"name\":" + JsonString(title) + ",\"values\":[";
    for (size_t i = 0; i < view.faults().size(); ++i) {
      if (i) o += ',';
      JsonNumber(o, view.faults()[i].Metric(name));
    }
    o += "]}";
  }
  o += "]}}";
  return o;
}

// ---- sections ----

void Summary(std::string& o, const RunView& view) {
  const RunRecord& r = view.data().run;
  o += "<section id=\"summary\"><h2>Run</h2><table class=\"kv\">";
  auto row = [&](std::string_view k, const std::string& v_html) {
    o += "<tr><th>";
    o += k;
    o += "</th><td>" + v_html + "</td></tr>";
  };
  row("run", "<code>" + H(r.id) + "</code>");
  row("scenario", H(r.scenario_name));
  std::string status(RunStatusName(r.status));
  row("status", "<span class=\"badge " + H(status) + "\">" + H(status) + "</span>" +
                    (r.message.empty() ? "" : " " + H(r.message)));
  row("seed", std::to_string(r.seed));
  row("started", H(FormatWallIso(r.start_wall_ns)));
  row("ended", r.end_wall_ns ? H(FormatWallIso(*r.end_wall_ns)) + " (" +
                                   H(FormatSeconds(*r.end_wall_ns - r.start_wall_ns)) + ")"
                             : std::string("—"));
  std::string tags;
  for (const auto& [k, v] : r.tags) tags += "<span class=\"tag\">" + H(k) + "=" + H(v) + "</span> ";
  row("tags", tags.empty() ? "—" : tags);
  row("git revision", r.git_revision.empty() ? "—" : "<code>" + H(r.git_revision) + "</code>");
  row("coordinator", r.coordinator_host.empty() ? "—" : H(r.coordinator_host));
  row("scenario hash", "<code>" + H(r.scenario_hash) + "</code>");
  std::string ranks = view.RunMetric("ranks") ? FormatNumber(*view.RunMetric("ranks"), 6) : "—";
  row("ranks / samples / events", ranks + " / " + std::to_string(view.data().samples.size()) +
                                      " / " + std::to_string(view.data().events.size()));
  if (auto outcome = view.RunMetric("outcome")) row("outcome", H(OutcomeName(*outcome)));
  o += "</table></section>\n";
}

void VerdictTable(std::string& o, const RunView& view, bool failed_only) {
  o += "<table><thead><tr><th></th><th>expectation</th><th>fault</th><th>expected</th>"
       "<th>measured</th><th>message</th></tr></thead><tbody>";
  for (const auto& v : view.data().verdicts) {
    if (failed_only && v.passed) continue;
    VerdictText t = ExplainVerdict(v);
    o += "<tr class=\"" + StatusClass(v.passed) + "\"><td class=\"badge " + StatusClass(v.passed) +
         "\">" + (v.passed ? "PASS" : "FAIL") + "</td><td>" + H(v.expectation) + "</td><td>" +
         H(view.FaultLabel(v.fault_id)) + "</td><td>" + H(t.expected) + "</td><td>" +
         H(t.measured) + "</td><td>" + H(v.message) + "</td></tr>";
  }
  o += "</tbody></table>";
}

// A long verdict list (many faults) would push the charts off the first screen: then the
// failed verdicts come first and the whole list folds out.
void Verdicts(std::string& o, const RunView& view) {
  constexpr size_t kLongList = 12;
  const size_t n = view.data().verdicts.size();
  o += "<section id=\"verdicts\"><h2>Verdicts <small>" + std::to_string(view.verdicts_passed()) +
       " passed, " + std::to_string(view.verdicts_failed()) + " failed</small></h2>";
  if (n == 0) {
    o += "<p>No verdicts stored for this run.</p>";
  } else if (n <= kLongList) {
    VerdictTable(o, view, false);
  } else {
    if (view.verdicts_failed() > 0) VerdictTable(o, view, true);
    o += "<details><summary>All " + std::to_string(n) + " verdicts</summary>";
    VerdictTable(o, view, false);
    o += "</details>";
  }
  o += "</section>\n";
}

void Charts(std::string& o, const RunView& view) {
  o += "<section id=\"charts\"><h2>Job throughput</h2>"
       "<p class=\"note\">The job's algorithm bandwidth: each iteration's bytes over its time "
       "from the first rank's start to the last rank's end, per time bin. Dashed: "
       "the baseline (median before the first fault) across the run, and each fault's degraded "
       "steady state over its window. Shaded: fault windows.</p>"
       "<div id=\"chart-job\" class=\"chart\"></div>"
       "<h2>Throughput per rank</h2>"
       "<p class=\"note\">Per rank: bytes moved per time bin / bin width (algorithm bandwidth). "
       "Shaded: fault windows from the request to the revert (the line marks when the fault "
       "took effect). Markers: events.</p>"
       "<div id=\"chart-throughput\" class=\"chart\"></div>"
       "<div id=\"event-legend\" class=\"legend\"></div>";
  if (!view.faults().empty()) {
    o += "<h2>Fault timelines</h2>"
         "<p class=\"note\">Per fault, from the moment it took effect (0): the time until it "
         "was detected, until the first progress, until the job settled at its degraded rate "
         "(recovered), degraded until the revert, and until the job was back at its baseline "
         "(failed back). Vertical lines: the expectation limits (red when exceeded). Time axis "
         "linear under 1 ms, logarithmic above.</p>"
         "<div id=\"chart-timeline\" class=\"chart\"></div>"
         "<div id=\"timeline-legend\" class=\"legend\"></div>";
    o += "<h2>Detection and recovery per fault</h2>"
         "<p class=\"note\">Milliseconds after the fault took effect (failback and path "
         "restored: after the revert), log scale.</p>"
         "<div id=\"chart-faults\" class=\"chart\"></div>";
  }
  o += "<h2>NIC traffic</h2>";
  if (view.data().nics.empty()) {
    o += "<p class=\"note\">No NIC counters stored for this run.</p>";
  } else {
    o += "<p class=\"note\">Per host and data NIC: received + sent bytes per second, from the "
         "counters the agents sampled. Shaded: fault windows.</p>"
         "<div id=\"chart-nics\" class=\"chart\"></div>";
  }
  o += "</section>\n";
}

void Faults(std::string& o, const RunView& view) {
  o += "<section id=\"faults\"><h2>Faults</h2>";
  if (view.faults().empty()) {
    o += "<p>No faults in this run.</p></section>\n";
    return;
  }
  const Nanos t0 = view.t0();
  const std::vector<MetricColumn> columns = PresentFaultColumns(view);
  o += "<p class=\"note\">Times in seconds since the run started.</p><table><thead><tr>"
       "<th>fault</th><th>kind</th><th>target</th><th>scheduled</th><th>requested</th>"
       "<th>effective</th><th>reverted</th><th>revert verified</th>";
  for (const auto& c : columns) o += "<th>" + std::string(c.title) + "</th>";
  o += "</tr></thead><tbody>";
  for (const auto& fv : view.faults()) {
    const FaultRecord& f = *fv.fault;
    o += "<tr class=\"fault-row\"><td>" + H(f.fault_id) + "</td><td>" + H(f.kind) + "</td><td>" +
         H(f.target) + "</td><td>" + Relative(f.scheduled_wall_ns, t0) + "</td><td>" +
         Relative(f.requested_wall_ns, t0) + "</td><td>" + Relative(f.effective_wall_ns, t0) +
         "</td><td>" + Relative(f.reverted_wall_ns, t0) + "</td><td>" +
         (f.revert_verified ? (*f.revert_verified ? "yes" : "<b class=\"fail\">no</b>") : "—") +
         "</td>";
    for (const auto& c : columns) {
      auto text = fv.MetricText(c.name);
      o += "<td>" + (text ? H(*text) : std::string("—")) + "</td>";
    }
    o += "</tr>";
  }
  o += "</tbody></table>";
  // Every metric of every fault, and the parameters, for the record.
  o += "<details><summary>All per-fault metrics and parameters</summary><table><thead><tr>"
       "<th>fault</th><th>metric</th><th>value</th></tr></thead><tbody>";
  for (const auto& fv : view.faults()) {
    o += "<tr><td>" + H(fv.fault->fault_id) + "</td><td>params</td><td><code>" +
         H(fv.fault->params_json) + "</code></td></tr>";
    for (const auto& [name, m] : fv.metrics)
      o += "<tr><td>" + H(fv.fault->fault_id) + "</td><td>" + H(name) + "</td><td>" +
           H(FormatMetric(m->value, m->unit)) + "</td></tr>";
  }
  o += "</tbody></table></details></section>\n";
}

// The detection ledger (reports/metrics/ledger.h): per fault, a ladder of the layers that
// noticed it, each bar as long as its latency on a log scale (microseconds to seconds).
void Ledger(std::string& o, const RunView& view) {
  const auto& rows = view.data().detections;
  if (rows.empty()) return;
  o += "<section id=\"ledger\"><h2>Detection ledger</h2><p class=\"note\">When each layer "
       "noticed each fault, after the fault was in place (docs/metrics.md, \"Detection "
       "ledger\"); a layer that applies and did not notice it says so.</p><table "
       "class=\"ledger\"><thead><tr><th>fault</th><th>layer</th><th>noticed after</th>"
       "<th></th><th>evidence</th></tr></thead><tbody>";
  std::map<std::string, double> longest;  // per fault, in us
  for (const auto& d : rows)
    if (d.latency_ms) longest[d.fault_id] = std::max(longest[d.fault_id], *d.latency_ms * 1e3);
  for (const auto& d : rows) {
    std::string bar;
    if (d.latency_ms) {
      const double us = std::max(0.0, *d.latency_ms * 1e3);
      const double full = std::log10(1 + std::max(1.0, longest[d.fault_id]));
      char width[32];
      std::snprintf(width, sizeof width, "%.1f", 100 * std::log10(1 + us) / full);
      bar = "<span class=\"ledger-bar\" style=\"width:" + std::string(width) + "%\"></span>";
    }
    o += "<tr class=\"ledger-row\"><td>" + H(view.FaultLabel(d.fault_id)) + "</td><td>" +
         H(d.layer) + "</td><td>" +
         (d.latency_ms ? H(FormatMetric(*d.latency_ms, "ms"))
                       : std::string("<b class=\"fail\">not noticed</b>")) +
         "</td><td class=\"ledger-cell\">" + bar + "</td><td>" + H(d.evidence) + "</td></tr>";
  }
  o += "</tbody></table></section>\n";
}

void RunMetrics(std::string& o, const RunView& view) {
  o += "<section id=\"metrics\"><h2>Run metrics</h2><table class=\"kv\">";
  bool any = false;
  for (const auto& m : view.data().metrics) {
    if (m.fault_id) continue;
    any = true;
    std::string v =
        m.name == "outcome" ? std::string(OutcomeName(m.value)) : FormatMetric(m.value, m.unit);
    o += "<tr><th>" + H(m.name) + "</th><td>" + H(v) + "</td></tr>";
  }
  if (!any) o += "<tr><td>No metrics stored for this run.</td></tr>";
  o += "</table></section>\n";
}

// "nics[0].firmware" -> value, for a fingerprint object of any shape.
void Flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out, int depth) {
  if (depth > 8) {
    out.emplace_back(prefix, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      Flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out, depth + 1);
  } else if (j.is_array()) {
    if (j.empty()) out.emplace_back(prefix, "[]");
    for (size_t i = 0; i < j.size(); ++i)
      Flatten(j[i], prefix + "[" + std::to_string(i) + "]", out, depth + 1);
  } else if (j.is_string()) {
    out.emplace_back(prefix, j.get<std::string>());
  } else {
    out.emplace_back(prefix, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}

void Hosts(std::string& o, const RunView& view) {
  const auto& hosts = view.data().hosts;
  constexpr size_t kMaxHosts = 64;
  const size_t shown = std::min(hosts.size(), kMaxHosts);
  // Rows: address, clock, then every fingerprint key of any host, in first-seen order.
  std::vector<std::map<std::string, std::string>> cells(shown);
  std::vector<std::string> keys;
  std::set<std::string> seen;
  auto add = [&](size_t host, const std::string& key, std::string value) {
    if (seen.insert(key).second) keys.push_back(key);
    cells[host].emplace(key, std::move(value));
  };
  for (size_t i = 0; i < shown; ++i) {
    const HostRecord& h = hosts[i];
    add(i, "address", h.address.empty() ? "—" : h.address);
    add(i, "clock offset",
        FormatNumber(static_cast<double>(h.clock_offset_ns) / 1e6, 4) + " ms ± " +
            FormatNumber(static_cast<double>(h.clock_uncertainty_ns) / 1e6, 3) + " ms");
    // From the database: bad or too deeply nested JSON is shown raw (escaped), never thrown.
    std::vector<std::pair<std::string, std::string>> flat;
    auto j = ParseJson(h.fingerprint_json, "fingerprint");
    if (!j.ok()) {
      flat.emplace_back("(raw)", h.fingerprint_json);
    } else {
      Flatten(*j, "", flat, 0);
    }
    for (auto& [k, v] : flat) add(i, k, std::move(v));
  }
  // A row whose value differs between hosts (or that some host lacks) is marked: a firmware or
  // kernel mismatch is what one looks for here. Not the ones that differ by nature, nor the
  // clock offsets.
  auto differs = [&](const std::string& key) {
    if (shown < 2 || key == "clock offset") return false;
    for (std::string_view own : {"mac", "name", "address"})
      if (key.size() >= own.size() && key.compare(key.size() - own.size(), own.size(), own) == 0)
        return false;
    std::set<std::string> values;
    for (const auto& c : cells) {
      auto it = c.find(key);
      values.insert(it == c.end() ? std::string("\x01"
                                                "absent")
                                  : it->second);
    }
    return values.size() > 1;
  };
  size_t differing = 0;
  for (const auto& k : keys) differing += differs(k);
  o += "<section id=\"hosts\"><h2>Environment <small>" + std::to_string(hosts.size()) +
       " host(s), " + std::to_string(differing) + " differing row(s)</small></h2>";
  if (hosts.empty()) {
    o += "<p>No hosts stored for this run.</p></section>\n";
    return;
  }
  o += "<p class=\"note\">One column per host. Rows marked ≠ differ between hosts (names, "
       "MACs and addresses excepted: they differ by nature); — : the host has no such entry."
       "</p><table class=\"env\"><thead><tr><th></th><th>key</th>";
  for (size_t i = 0; i < shown; ++i) o += "<th class=\"host\">" + H(hosts[i].name) + "</th>";
  o += "</tr></thead><tbody>";
  for (const auto& k : keys) {
    const bool d = differs(k);
    o += std::string(d ? "<tr class=\"differs\"><td class=\"mark\">≠</td>" : "<tr><td></td>") +
         "<th>" + H(k) + "</th>";
    for (const auto& c : cells) {
      auto it = c.find(k);
      o += it == c.end() ? std::string("<td class=\"absent\">—</td>")
                         : "<td>" + H(it->second) + "</td>";
    }
    o += "</tr>";
  }
  o += "</tbody></table>";
  if (hosts.size() > kMaxHosts)
    o += "<p>… and " + std::to_string(hosts.size() - kMaxHosts) +
         " more hosts (all are in the results database).</p>";
  o += "</section>\n";
}

void EventsTable(std::string& o, const RunView& view) {
  struct Kind {
    size_t count = 0;
    Nanos first = 0;
    std::set<int32_t> ranks;
  };
  std::map<std::string, Kind> kinds;
  for (const auto& e : view.data().events) {
    Kind& k = kinds[e.kind];
    if (k.count++ == 0) k.first = e.wall_ns;
    k.ranks.insert(e.rank);
  }
  o += "<section id=\"events\"><h2>Events</h2>";
  if (kinds.empty()) {
    o += "<p>No events stored for this run.</p></section>\n";
    return;
  }
  o += "<table><thead><tr><th>kind</th><th>count</th><th>first at</th><th>ranks</th></tr>"
       "</thead><tbody>";
  for (const auto& [name, k] : kinds) {
    std::string ranks;
    size_t shown = 0;
    for (int32_t r : k.ranks) {
      if (shown++ == 16) {
        ranks += " …";
        break;
      }
      ranks += (ranks.empty() ? "" : " ") + (r < 0 ? std::string("-") : std::to_string(r));
    }
    o += "<tr><td>" + H(name) + "</td><td>" + std::to_string(k.count) + "</td><td>" +
         FormatSeconds(k.first - view.t0()) + "</td><td>" + ranks + "</td></tr>";
  }
  o += "</tbody></table></section>\n";
}

// Writes js as an inline script. Only "</script" (any case) could end the element early; the
// assets are ours and uPlot's and contain none, but a later version of either must not break
// the page: "<\/script" means the same inside any JavaScript string or regular expression.
void InlineScript(std::string& o, std::string_view js) {
  std::string s(js);
  for (size_t p = 0; (p = s.find("</", p)) != std::string::npos; p += 2) {
    std::string next = s.substr(p + 2, 6);
    for (auto& c : next) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (next == "script") s.replace(p, 2, "<\\/");
  }
  o += "<script>";
  o += s;
  o += "</script>\n";
}

}  // namespace

std::string ErrorCaptureScript() {
  return "<script>window.flErrors=[];window.addEventListener('error',function(e){"
         "window.flErrors.push(String(e.message||e));});(function(){var ce=console.error;"
         "console.error=function(){window.flErrors.push(Array.prototype.join.call(arguments,' '));"
         "return ce.apply(console,arguments);};})();</script>\n";
}

std::string UplotScripts() {
  std::string o = "<!-- uPlot (https://github.com/leeoniya/uPlot), inlined from npm:\n";
  std::string license(kUplotLicense);
  for (size_t p = 0; (p = license.find("--", p)) != std::string::npos;) license.replace(p, 2, "- ");
  o += license;
  o += "\n-->\n";
  InlineScript(o, kUplotJs);
  return o;
}

std::string InlineScriptElement(std::string_view js) {
  std::string o;
  InlineScript(o, js);
  return o;
}

bool IsProgressEvent(std::string_view kind) {
  return kind == "collective_begin" || kind == "collective_end" || kind == "collective_progress";
}

std::string RenderHtml(const RunData& run, const HtmlOptions& options) {
  RunView view(run);
  const RunRecord& r = run.run;
  std::string o;
  o.reserve(256 * 1024);
  std::string status(RunStatusName(r.status));
  o += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<meta name=\"generator\" content=\"faultline report\">"
       "<title>faultline: " +
       H(r.scenario_name) + " " + H(r.id) + " (" + H(status) + ")</title>\n";
  // Error capture comes first so that errors in the library itself are seen too.
  o += ErrorCaptureScript();
  o += "<style>";
  o += kUplotCss;
  o += "\n";
  o += kReportCss;
  o += "</style></head>\n<body>\n";
  o += "<header><h1>" + H(r.scenario_name) + " <span class=\"badge " + H(status) + "\">" +
       H(status) + "</span></h1><p><code>" + H(r.id) + "</code> · seed " + std::to_string(r.seed) +
       " · started " + H(FormatWallIso(r.start_wall_ns)) + " · <span id=\"run-duration\">" +
       (r.end_wall_ns ? "took " + H(FormatSeconds(*r.end_wall_ns - r.start_wall_ns))
                      : std::string("no end recorded")) +
       "</span></p><p>replay: <code id=\"replay-command\">" +
       H(ReplayCommand(r.id, options.db_path)) + "</code></p></header>\n";
  o += "<main>\n";
  Verdicts(o, view);
  Charts(o, view);
  Faults(o, view);
  Ledger(o, view);
  Summary(o, view);
  RunMetrics(o, view);
  EventsTable(o, view);
  Hosts(o, view);
  o += "<section id=\"scenario\"><details><summary>Scenario file as run</summary><pre>" +
       H(r.scenario_text) + "</pre></details></section>\n";
  o += "</main>\n<div id=\"fl-render-status\" data-state=\"pending\" hidden></div>\n"
       "<div id=\"fl-drawn\" hidden></div>\n";
  o += "<script type=\"application/json\" id=\"fl-data\">" + ChartData(view, options) +
       "</script>\n";
  o += UplotScripts();
  InlineScript(o, kReportJs);
  o += "</body></html>\n";
  return o;
}

}  // namespace fl::reports::render
