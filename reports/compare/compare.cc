#include "reports/compare/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "common/enum_names.h"
#include "common/rng.h"

namespace fl::reports::compare {

namespace {

bool Selected(const std::vector<std::string>& metrics, const std::string& key) {
  if (metrics.empty()) return true;
  std::string_view bare = BareName(key);
  for (const auto& m : metrics)
    if (m == key || m == bare) return true;
  return false;
}

std::string Pct(std::optional<double> rel) {
  if (!rel) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", *rel * 100);
  return buf;
}

std::string Signed(double v, std::string_view unit) {
  std::string s = FormatQuantity(v, unit);
  return v > 0 ? "+" + s : s;
}

std::string CiText(const Interval& ci, std::string_view unit) {
  return "[" + Signed(ci.lo, unit) + ", " + Signed(ci.hi, unit) + "]";
}

std::string Label(const std::vector<std::string>& runs, const std::string& label) {
  return label + " (" + std::to_string(runs.size()) + " run" + (runs.size() == 1 ? "" : "s") + ")";
}

std::string Summary(const Comparison& c) {
  std::string s = std::to_string(c.Count(Verdict::kRegressed)) + " regressed, " +
                  std::to_string(c.Count(Verdict::kImproved)) + " improved, " +
                  std::to_string(c.Count(Verdict::kChanged)) + " changed within tolerance, " +
                  std::to_string(c.Count(Verdict::kSame)) + " unchanged";
  return s;
}

}  // namespace

constexpr NamedValue<Verdict> kVerdictNames[] = {
    {Verdict::kSame, "same"},         {Verdict::kChanged, "changed"},
    {Verdict::kImproved, "improved"}, {Verdict::kRegressed, "REGRESSED"},
    {Verdict::kInfo, "info"},         {Verdict::kMissing, "missing"}};

std::string_view VerdictName(Verdict v) { return NameIn(kVerdictNames, v, "missing"); }

std::string FormatValue(double v) {
  char buf[32];
  double a = std::fabs(v);
  if (a != 0 && (a >= 1e6 || a < 1e-3))
    std::snprintf(buf, sizeof buf, "%.3e", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string FormatQuantity(double v, std::string_view unit) {
  char buf[48];
  const double a = std::fabs(v);
  auto plain = [&](double x, const char* suffix) {
    const double ax = std::fabs(x);
    if (ax != 0 && ax < 1e-3) {
      std::snprintf(buf, sizeof buf, "%.3g%s", x, suffix);
    } else if (ax >= 1e4) {
      std::snprintf(buf, sizeof buf, "%.0f%s", x, suffix);
    } else {
      std::snprintf(buf, sizeof buf, "%.4g%s", x, suffix);
    }
    return std::string(buf);
  };
  if (unit == "B/s") {
    if (a >= 1e9) return plain(v / 1e9, " GB/s");
    if (a >= 1e6) return plain(v / 1e6, " MB/s");
    if (a >= 1e3) return plain(v / 1e3, " kB/s");
    return plain(v, " B/s");
  }
  if (unit == "ms") {
    if (a >= 1e4) return plain(v / 1e3, " s");
    if (a != 0 && a < 1) return plain(v * 1e3, " µs");
    return plain(v, " ms");
  }
  if (unit == "s" || unit == "GPU-s") return plain(v, unit == "s" ? " s" : " GPU-s");
  return plain(v, "");  // ratios, counts, booleans: the metric's name says what it is
}

std::string EffectText(std::optional<double> cliffs_delta) {
  if (!cliffs_delta) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.2f %s", *cliffs_delta,
                analysis::EffectMagnitude(*cliffs_delta));
  return buf;
}

int Comparison::Count(Verdict v) const {
  int n = 0;
  for (const auto& r : rows) n += r.verdict == v;
  return n;
}

std::vector<const MetricComparison*> Comparison::Regressions() const {
  std::vector<const MetricComparison*> out;
  for (const auto& r : rows)
    if (r.verdict == Verdict::kRegressed) out.push_back(&r);
  return out;
}

MetricComparison CompareMetric(std::string group, std::string key, std::string unit,
                               std::vector<double> a, std::vector<double> b,
                               const MetricPolicy& policy, const BootstrapOptions& bootstrap) {
  MetricComparison m;
  m.name = std::string(BareName(key));
  m.group = std::move(group);
  m.key = std::move(key);
  m.unit = std::move(unit);
  m.policy = policy;
  m.median_a = Median(a);
  m.median_b = Median(b);
  m.iqr_a = Iqr(a);
  m.iqr_b = Iqr(b);
  m.mad_a = Mad(a);
  m.mad_b = Mad(b);
  m.diff = m.median_b - m.median_a;
  if (m.median_a != 0) m.rel_diff = m.diff / std::fabs(m.median_a);
  // Each metric gets its own stream, so adding a metric does not move another's interval.
  BootstrapOptions bo = bootstrap;
  bo.seed = Rng(bootstrap.seed).Fork(m.group + "/" + m.key).Next();
  m.ci = BootstrapMedianDiff(a, b, bo);
  m.effect_size = analysis::CliffsDelta(a, b);
  m.allowed = policy.tolerance.Allowed(m.median_a);
  m.a = std::move(a);
  m.b = std::move(b);
  if (policy.direction == Direction::kNeutral) {
    m.verdict = Verdict::kInfo;
  } else if (m.ci.Contains(0)) {
    m.verdict = Verdict::kSame;
  } else if (std::fabs(m.diff) <= m.allowed) {
    m.verdict = Verdict::kChanged;
  } else {
    m.verdict = IsWorse(policy.direction, m.diff) ? Verdict::kRegressed : Verdict::kImproved;
  }
  return m;
}

Comparison Compare(std::span<const RunMetricSet> a, std::span<const RunMetricSet> b,
                   const CompareOptions& options, std::string label_a, std::string label_b) {
  Comparison c;
  c.label_a = std::move(label_a);
  c.label_b = std::move(label_b);
  c.confidence = options.bootstrap.confidence;
  struct Side {
    std::map<std::string, std::vector<double>> values;  // key -> values in run order
    std::map<std::string, std::string> units;
  };
  std::map<std::string, std::pair<Side, Side>> groups;
  auto collect = [&](std::span<const RunMetricSet> runs, bool second,
                     std::vector<std::string>& ids) {
    // Oldest first, so the values read in the order the runs were made.
    std::vector<const RunMetricSet*> order;
    for (const auto& r : runs) order.push_back(&r);
    std::stable_sort(order.begin(), order.end(), [](const auto* x, const auto* y) {
      return x->run.start_wall_ns < y->run.start_wall_ns;
    });
    for (const RunMetricSet* r : order) {
      ids.push_back(r->run.id);
      auto& g = groups[r->group];
      Side& side = second ? g.second : g.first;
      for (const auto& [key, v] : r->values) {
        if (!Selected(options.metrics, key)) continue;
        side.values[key].push_back(v);
        side.units[key] = r->units.count(key) ? r->units.at(key) : "";
      }
    }
  };
  collect(a, false, c.runs_a);
  collect(b, true, c.runs_b);
  for (auto& [group, sides] : groups) {
    auto& [sa, sb] = sides;
    bool has_a = false, has_b = false;
    for (const auto& r : a) has_a = has_a || r.group == group;
    for (const auto& r : b) has_b = has_b || r.group == group;
    if (!has_a || !has_b) {
      c.notes.push_back(group + ": only in " + (has_a ? c.label_a : c.label_b) + ", not compared");
      continue;
    }
    std::set<std::string> keys;
    for (const auto& [k, v] : sa.values) keys.insert(k);
    for (const auto& [k, v] : sb.values) keys.insert(k);
    for (const auto& key : keys) {
      auto ia = sa.values.find(key);
      auto ib = sb.values.find(key);
      std::string unit = ia != sa.values.end() ? sa.units[key] : sb.units[key];
      MetricPolicy policy = options.policies.Get(BareName(key));
      if (ia == sa.values.end() || ib == sb.values.end()) {
        MetricComparison m;
        m.group = group;
        m.key = key;
        m.name = std::string(BareName(key));
        m.unit = unit;
        m.policy = policy;
        if (ia != sa.values.end()) {
          m.a = ia->second;
          m.median_a = Median(m.a);
        } else {
          m.b = ib->second;
          m.median_b = Median(m.b);
        }
        m.verdict = Verdict::kMissing;
        c.rows.push_back(std::move(m));
        continue;
      }
      c.rows.push_back(
          CompareMetric(group, key, unit, ia->second, ib->second, policy, options.bootstrap));
    }
  }
  return c;
}

std::string RenderText(const Comparison& c) {
  std::string out;
  char line[512];
  out += "A: " + Label(c.runs_a, c.label_a) + "\nB: " + Label(c.runs_b, c.label_b) + "\n";
  std::snprintf(line, sizeof line,
                "difference = median(B) - median(A); %.0f%% bootstrap interval; spread = IQR\n\n",
                c.confidence * 100);
  out += line;
  std::string group;
  for (const auto& r : c.rows) {
    if (r.group != group) {
      group = r.group;
      out += group + "\n";
      std::snprintf(line, sizeof line, "  %-34s %-6s %3s %-22s %3s %-22s %-20s %-24s %-12s %s\n",
                    "metric", "worse", "nA", "median A (IQR)", "nB", "median B (IQR)", "difference",
                    "interval", "tolerance", "verdict");
      out += line;
    }
    auto med = [&](size_t n, double m, double iqr) {
      return n == 0 ? std::string("-")
                    : FormatQuantity(m, r.unit) + " (" + FormatQuantity(iqr, r.unit) + ")";
    };
    std::string worse = r.policy.direction == Direction::kLowerIsBetter    ? "higher"
                        : r.policy.direction == Direction::kHigherIsBetter ? "lower"
                                                                           : "-";
    bool both = !r.a.empty() && !r.b.empty();
    std::string diff =
        both ? Signed(r.diff, r.unit) + (r.rel_diff ? " " + Pct(r.rel_diff) : "") : "-";
    std::string key = r.key + (r.unit.empty() ? "" : " [" + r.unit + "]");
    std::snprintf(
        line, sizeof line, "  %-34s %-6s %3zu %-22s %3zu %-22s %-20s %-24s %-12s %s\n", key.c_str(),
        worse.c_str(), r.a.size(), med(r.a.size(), r.median_a, r.iqr_a).c_str(), r.b.size(),
        med(r.b.size(), r.median_b, r.iqr_b).c_str(), diff.c_str(),
        both ? CiText(r.ci, r.unit).c_str() : "-",
        r.policy.direction == Direction::kNeutral ? "-" : r.policy.tolerance.ToString().c_str(),
        std::string(VerdictName(r.verdict)).c_str());
    out += line;
  }
  for (const auto& n : c.notes) out += "note: " + n + "\n";
  if (!c.ledger.empty()) out += "\n" + RenderLedgerSummary(c.ledger);
  out += "\n" + Summary(c) + "\n";
  for (const auto* r : c.Regressions())
    out += "REGRESSED " + r->group + " " + r->key + ": " + FormatQuantity(r->median_a, r->unit) +
           " -> " + FormatQuantity(r->median_b, r->unit) + " (allowed " +
           FormatQuantity(r->allowed, r->unit) + ", interval " + CiText(r->ci, r->unit) + ")\n";
  return out;
}

std::string RenderMarkdown(const Comparison& c) {
  std::string out = "### Comparison: " + c.label_a + " vs " + c.label_b + "\n\n";
  int reg = c.Count(Verdict::kRegressed);
  out += reg ? "**" + std::to_string(reg) + " metric(s) regressed.** " : "**No regression.** ";
  out += Summary(c) + ". A = " + Label(c.runs_a, c.label_a) +
         ", B = " + Label(c.runs_b, c.label_b) + "; difference = median(B) − median(A), " +
         std::to_string(static_cast<int>(std::lround(c.confidence * 100))) +
         "% bootstrap interval, spread = IQR.\n\n";
  out +=
      "| group | metric | unit | worse | median A (IQR) | median B (IQR) | difference | interval "
      "| effect size | tolerance | verdict |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : c.rows) {
    bool both = !r.a.empty() && !r.b.empty();
    std::string worse = r.policy.direction == Direction::kLowerIsBetter    ? "higher"
                        : r.policy.direction == Direction::kHigherIsBetter ? "lower"
                                                                           : "";
    std::string verdict(VerdictName(r.verdict));
    if (r.verdict == Verdict::kRegressed) verdict = "**" + verdict + "**";
    out +=
        "| " + r.group + " | " + r.key + " | " + r.unit + " | " + worse + " | " +
        (r.a.empty()
             ? "–"
             : FormatQuantity(r.median_a, r.unit) + " (" + FormatQuantity(r.iqr_a, r.unit) + ")") +
        " | " +
        (r.b.empty()
             ? "–"
             : FormatQuantity(r.median_b, r.unit) + " (" + FormatQuantity(r.iqr_b, r.unit) + ")") +
        " | " + (both ? Signed(r.diff, r.unit) + " " + Pct(r.rel_diff) : "–") + " | " +
        (both ? CiText(r.ci, r.unit) : "–") + " | " + (both ? EffectText(r.effect_size) : "–") +
        " | " + (r.policy.direction == Direction::kNeutral ? "" : r.policy.tolerance.ToString()) +
        " | " + verdict + " |\n";
  }
  for (const auto& n : c.notes) out += "\n> " + n + "\n";
  return out;
}

std::string RenderHtml(const Comparison& c) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>faultline compare</title><style>"
      "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}"
      "table{border-collapse:collapse;font-size:13px}"
      "th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}"
      "th{background:#f0f0f0}td.l{text-align:left}"
      "tr.REGRESSED{background:#fdd}tr.improved{background:#dfd}tr.changed{background:#ffd}"
      "tr.info,tr.missing{color:#777}tr.group td{background:#e8eef8;font-weight:bold;"
      "text-align:left}.sum{margin:1em 0}</style></head><body>\n";
  out += "<h1>faultline compare</h1>\n<p>A: " + HtmlEscape(Label(c.runs_a, c.label_a)) +
         "<br>B: " + HtmlEscape(Label(c.runs_b, c.label_b)) + "</p>\n";
  int reg = c.Count(Verdict::kRegressed);
  out += "<p class=\"sum\"><b>" +
         (reg ? std::to_string(reg) + " metric(s) regressed" : std::string("No regression")) +
         "</b>: " + HtmlEscape(Summary(c)) + ". Difference = median(B) &minus; median(A) with a " +
         std::to_string(static_cast<int>(std::lround(c.confidence * 100))) +
         "% percentile-bootstrap interval; spread = interquartile range; effect size = Cliff's "
         "delta of B over A (-1 to 1: the share of pairs where B is larger minus where it is "
         "smaller). A metric is flagged when the interval excludes zero and the change exceeds "
         "its tolerance in the worse direction.</p>\n";
  out +=
      "<table><tr><th>metric</th><th>unit</th><th>worse</th><th>n A</th><th>median A</th>"
      "<th>IQR A</th><th>n B</th><th>median B</th><th>IQR B</th><th>difference</th>"
      "<th>relative</th><th>interval</th><th>effect size</th><th>tolerance</th><th>verdict</th>"
      "</tr>\n";
  std::string group;
  for (const auto& r : c.rows) {
    if (r.group != group) {
      group = r.group;
      out += "<tr class=\"group\"><td colspan=\"15\">" + HtmlEscape(group) + "</td></tr>\n";
    }
    bool both = !r.a.empty() && !r.b.empty();
    std::string worse = r.policy.direction == Direction::kLowerIsBetter    ? "higher"
                        : r.policy.direction == Direction::kHigherIsBetter ? "lower"
                                                                           : "";
    auto td = [](const std::string& s) { return "<td>" + HtmlEscape(s) + "</td>"; };
    out += "<tr class=\"" + std::string(VerdictName(r.verdict)) + "\"><td class=\"l\">" +
           HtmlEscape(r.key) + "</td>" + td(r.unit) + td(worse) + td(std::to_string(r.a.size())) +
           td(r.a.empty() ? "" : FormatQuantity(r.median_a, r.unit)) +
           td(r.a.empty() ? "" : FormatQuantity(r.iqr_a, r.unit)) + td(std::to_string(r.b.size())) +
           td(r.b.empty() ? "" : FormatQuantity(r.median_b, r.unit)) +
           td(r.b.empty() ? "" : FormatQuantity(r.iqr_b, r.unit)) +
           td(both ? Signed(r.diff, r.unit) : "") + td(both ? Pct(r.rel_diff) : "") +
           td(both ? CiText(r.ci, r.unit) : "") + td(EffectText(r.effect_size)) +
           td(r.policy.direction == Direction::kNeutral ? "" : r.policy.tolerance.ToString()) +
           td(std::string(VerdictName(r.verdict))) + "</tr>\n";
  }
  out += "</table>\n";
  for (const auto& n : c.notes) out += "<p>" + HtmlEscape(n) + "</p>\n";
  out += RenderLedgerSummaryHtml(c.ledger);
  out += "<p style=\"color:#777;font-size:12px\">runs A: " + HtmlEscape([&] {
           std::string s;
           for (const auto& id : c.runs_a) s += (s.empty() ? "" : ", ") + id;
           return s;
         }()) +
         "<br>runs B: " + HtmlEscape([&] {
           std::string s;
           for (const auto& id : c.runs_b) s += (s.empty() ? "" : ", ") + id;
           return s;
         }()) +
         "</p>\n</body></html>\n";
  return out;
}

}  // namespace fl::reports::compare
