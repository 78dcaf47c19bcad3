#include "reports/compare/acceptance.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <utility>

#include "reports/compare/json.h"

namespace fl::reports::compare {
namespace {

using nlohmann::json;

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

std::string Percent(const std::optional<double>& rel) {
  if (!rel) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f%%", 100 * *rel);
  return b;
}

const char* kPrintStyle = R"(
body{font:13px/1.45 system-ui,sans-serif;margin:2em;color:#111;max-width:1100px}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em}
.verdict{font-size:1.3em;font-weight:bold;padding:.4em .8em;display:inline-block;border-radius:4px}
.accepted{background:#def7ec;color:#03543f}.rejected{background:#fde8e8;color:#9b1c1c}
table{border-collapse:collapse;width:100%}td,th{padding:.2em .5em;border-bottom:1px solid #ccc;
text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.REGRESSED td{background:#fde8e8;font-weight:bold}tr.improved td{background:#def7ec}
.muted{color:#555}code{font-size:.95em}
@media print{body{margin:0}h2{page-break-after:avoid}tr{page-break-inside:avoid}
a{color:#000;text-decoration:none}}
)";

// The count of a scenario that each verdict adds to: one entry per Verdict (a new verdict
// needs its count here and in ScenarioVerdict).
constexpr std::pair<Verdict, int ScenarioVerdict::*> kVerdictCounts[] = {
    {Verdict::kRegressed, &ScenarioVerdict::regressed},
    {Verdict::kImproved, &ScenarioVerdict::improved},
    {Verdict::kChanged, &ScenarioVerdict::changed},
    {Verdict::kSame, &ScenarioVerdict::same},
    {Verdict::kInfo, &ScenarioVerdict::info},
    {Verdict::kMissing, &ScenarioVerdict::missing}};

}  // namespace

bool Acceptance::accepted() const { return comparison.Count(Verdict::kRegressed) == 0; }

StatusOr<Acceptance> RunAcceptance(RunReader& reader, const AcceptanceOptions& o) {
  FL_ASSIGN_OR_RETURN(auto base, reader.Select(o.baseline, o.scenario));
  FL_ASSIGN_OR_RETURN(auto cand, reader.Select(o.candidate, o.scenario));
  Acceptance a;
  a.baseline = o.baseline;
  a.candidate = o.candidate;
  a.comparison = Compare(base, cand, o.compare, o.baseline, o.candidate);
  FL_ASSIGN_OR_RETURN(a.comparison.ledger, SummariseLedgers(reader, base, cand));
  if (a.comparison.rows.empty())
    return InvalidArgumentError("nothing to compare: no scenario has finished runs under both " +
                                o.baseline + " and " + o.candidate);
  for (const auto& r : a.comparison.rows) {
    if (a.scenarios.empty() || a.scenarios.back().group != r.group)
      a.scenarios.push_back({r.group});
    ScenarioVerdict& s = a.scenarios.back();
    for (const auto& [verdict, count] : kVerdictCounts)
      if (verdict == r.verdict) ++(s.*count);
  }
  return a;
}

std::string AcceptanceText(const Acceptance& a) {
  std::string o = std::string(a.accepted() ? "ACCEPTED" : "REJECTED") + ": candidate " +
                  a.candidate + " against baseline " + a.baseline + " (" +
                  std::to_string(a.comparison.runs_b.size()) + " vs " +
                  std::to_string(a.comparison.runs_a.size()) + " runs)\n";
  for (const auto& s : a.scenarios)
    o += "  " + std::string(s.passed() ? "pass" : "FAIL") + "  " + s.group + ": " +
         std::to_string(s.regressed) + " regressed, " + std::to_string(s.improved) + " improved, " +
         std::to_string(s.changed + s.same) + " within tolerance\n";
  for (const auto* r : a.comparison.Regressions())
    o += "  REGRESSED " + r->group + " " + r->key + ": " + Num(r->median_a) + " -> " +
         Num(r->median_b) + " " + r->unit + " (" + Percent(r->rel_diff) + ", allowed " +
         Num(r->allowed) + ")\n";
  return o;
}

// A scenario's counts in AcceptanceJson under their own names; it adds "passed".
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ScenarioVerdict, group, regressed, improved, changed, same, info,
                                   missing)

std::string AcceptanceJson(const Acceptance& a) {
  json scenarios = json::array();
  for (const auto& s : a.scenarios) {
    json o = s;
    o["passed"] = s.passed();
    scenarios.push_back(std::move(o));
  }
  json j = {{"baseline", a.baseline},
            {"candidate", a.candidate},
            {"accepted", a.accepted()},
            {"scenarios", scenarios},
            {"comparison", json::parse(ComparisonJson(a.comparison))}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string AcceptanceMarkdown(const Acceptance& a) {
  std::string o = "# Firmware acceptance: " + std::string(a.accepted() ? "ACCEPTED" : "REJECTED") +
                  "\n\nCandidate `" + a.candidate + "` against baseline `" + a.baseline + "` (" +
                  std::to_string(a.comparison.runs_b.size()) + " vs " +
                  std::to_string(a.comparison.runs_a.size()) +
                  " runs). A metric regresses when the " + Num(100 * a.comparison.confidence) +
                  "% interval of the change of medians excludes zero and the change exceeds its "
                  "tolerance in the bad direction.\n\n";
  o += "| scenario | verdict | regressed | improved | within tolerance |\n|---|---|---|---|---|\n";
  for (const auto& s : a.scenarios)
    o += "| " + render::MarkdownEscape(s.group) + " | " + (s.passed() ? "pass" : "**FAIL**") +
         " | " + std::to_string(s.regressed) + " | " + std::to_string(s.improved) + " | " +
         std::to_string(s.changed + s.same) + " |\n";
  o += "\n" + RenderMarkdown(a.comparison);
  return o;
}

std::string AcceptanceHtml(const Acceptance& a) {
  const Comparison& c = a.comparison;
  std::string o =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
      "Firmware acceptance: " +
      HtmlEscape(a.candidate) + "</title><style>" + kPrintStyle + "</style></head><body>\n";
  o += "<h1>Firmware acceptance</h1>\n<p>Candidate <code>" + HtmlEscape(a.candidate) + "</code> (" +
       std::to_string(c.runs_b.size()) + " runs) against baseline <code>" + HtmlEscape(a.baseline) +
       "</code> (" + std::to_string(c.runs_a.size()) + " runs).</p>\n";
  o += "<p id=\"fl-verdict\" class=\"verdict " +
       std::string(a.accepted() ? "accepted" : "rejected") + "\" data-accepted=\"" +
       (a.accepted() ? "true" : "false") + "\">" + (a.accepted() ? "ACCEPTED" : "REJECTED") +
       "</p>\n";
  o += "<p class=\"muted\">A metric regresses when the " + Num(100 * c.confidence) +
       "% bootstrap interval of the change of medians excludes zero and the change exceeds its "
       "tolerance in the metric's bad direction (docs/suites.md).</p>\n";
  o += "<h2>Scenarios</h2>\n<table><tr><th>scenario</th><th>verdict</th><th>regressed</th>"
       "<th>improved</th><th>within tolerance</th></tr>\n";
  for (const auto& s : a.scenarios)
    o += "<tr class=\"fl-scenario " + std::string(s.passed() ? "pass" : "REGRESSED") +
         "\" data-group=\"" + HtmlEscape(s.group) + "\" data-passed=\"" +
         (s.passed() ? "true" : "false") + "\"><td>" + HtmlEscape(s.group) + "</td><td>" +
         (s.passed() ? "pass" : "FAIL") + "</td><td class=\"n\">" + std::to_string(s.regressed) +
         "</td><td class=\"n\">" + std::to_string(s.improved) + "</td><td class=\"n\">" +
         std::to_string(s.changed + s.same) + "</td></tr>\n";
  o += "</table>\n<h2>Metrics</h2>\n<table><tr><th>scenario</th><th>metric</th><th>baseline</th>"
       "<th>candidate</th><th>change</th><th>interval</th><th>effect size</th><th>allowed</th>"
       "<th>verdict</th></tr>\n";
  for (const auto& r : c.rows) {
    const std::string v(VerdictName(r.verdict));
    o += "<tr class=\"fl-metric " + HtmlEscape(v) + "\" data-key=\"" +
         HtmlEscape(r.group + " " + r.key) + "\" data-verdict=\"" + HtmlEscape(v) + "\"><td>" +
         HtmlEscape(r.group) + "</td><td>" + HtmlEscape(r.key) +
         (r.unit.empty() ? "" : " (" + HtmlEscape(r.unit) + ")") + "</td><td class=\"n\">" +
         Num(r.median_a) + "</td><td class=\"n\">" + Num(r.median_b) + "</td><td class=\"n\">" +
         Percent(r.rel_diff) + "</td><td class=\"n\">[" + Num(r.ci.lo) + ", " + Num(r.ci.hi) +
         "]</td><td class=\"n\">" + HtmlEscape(EffectText(r.effect_size)) +
         "</td><td class=\"n\">" + Num(r.allowed) + "</td><td>" + HtmlEscape(v) + "</td></tr>\n";
  }
  o += "</table>\n";
  for (const auto& n : c.notes) o += "<p class=\"muted\">" + HtmlEscape(n) + "</p>\n";
  o += "</body></html>\n";
  return o;
}

}  // namespace fl::reports::compare
