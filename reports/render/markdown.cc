#include "reports/render/markdown.h"

#include <nlohmann/json.hpp>

#include <cstdio>

#include "common/enum_names.h"
#include "reports/render/escape.h"
#include "reports/render/run_view.h"

namespace fl::reports::render {
namespace {

std::string M(std::string_view s) { return MarkdownEscape(s); }

std::string Duration(const RunRecord& r) {
  if (!r.end_wall_ns) return "";
  return FormatSeconds(*r.end_wall_ns - r.start_wall_ns);
}

std::string TagsText(const RunRecord& r) {
  std::string s;
  for (const auto& [k, v] : r.tags) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

constexpr NamedValue<RunStatus> kStatusMarks[] = {{RunStatus::kPassed, "✅"},
                                                  {RunStatus::kFailed, "❌"},
                                                  {RunStatus::kRunning, "⏳"},
                                                  {RunStatus::kAborted, "⚠️"},
                                                  {RunStatus::kError, "⚠️"}};

std::string_view StatusMark(RunStatus s) { return NameIn(kStatusMarks, s, ""); }

}  // namespace

std::string RenderMarkdown(const RunData& run) {
  RunView view(run);
  const RunRecord& r = run.run;
  std::string o;
  std::string status(RunStatusName(r.status));
  o += "### " + std::string(StatusMark(r.status)) + " faultline: " + M(r.scenario_name) + " — " +
       status + "\n\n";
  o += "Run `" + M(r.id) + "` · seed " + std::to_string(r.seed);
  if (!r.git_revision.empty()) o += " · git `" + M(r.git_revision) + "`";
  o += " · started " + FormatWallIso(r.start_wall_ns);
  if (r.end_wall_ns) o += " · " + Duration(r);
  if (!r.tags.empty()) o += " · tags " + M(TagsText(r));
  o += "\n";
  if (!r.message.empty()) o += "\n> " + M(r.message) + "\n";
  if (auto outcome = view.RunMetric("outcome")) {
    o += "\nOutcome: **" + std::string(OutcomeName(*outcome)) + "**";
    if (auto m = view.RunMetric("mismatches")) o += " · mismatches " + FormatNumber(*m, 12);
    if (auto b = view.RunMetric("baseline_algbw")) o += " · baseline " + FormatMetric(*b, "B/s");
    o += "\n";
  }

  o += "\n**Verdicts: " + std::to_string(view.verdicts_passed()) + " passed, " +
       std::to_string(view.verdicts_failed()) + " failed**\n\n";
  if (!run.verdicts.empty()) {
    o += "| | expectation | fault | expected | measured |\n|---|---|---|---|---|\n";
    for (const auto& v : run.verdicts) {
      VerdictText t = ExplainVerdict(v);
      o += std::string("| ") + (v.passed ? "✅" : "❌") + " | " + M(v.expectation) + " | " +
           M(view.FaultLabel(v.fault_id)) + " | " + M(t.expected) + " | " + M(t.measured) + " |\n";
    }
  }

  if (!view.faults().empty()) {
    const std::vector<MetricColumn> columns = PresentFaultColumns(view);
    o += "\n**Faults**\n\n| fault | kind | target |";
    std::string sep = "|---|---|---|";
    for (const auto& c : columns) {
      o += " " + std::string(c.title) + " |";
      sep += "---:|";
    }
    o += "\n" + sep + "\n";
    for (const auto& fv : view.faults()) {
      o += "| " + M(fv.fault->fault_id) + " | " + M(fv.fault->kind) + " | " + M(fv.fault->target) +
           " |";
      for (const auto& c : columns) {
        auto text = fv.MetricText(c.name);
        o += " " + (text ? M(*text) : std::string("—")) + " |";
      }
      o += "\n";
    }
  }
  return o;
}

std::string RenderTextSummary(const RunData& run) {
  RunView view(run);
  const RunRecord& r = run.run;
  // Plain text for a terminal: control characters from the database are not passed through.
  auto T = [](std::string_view s) {
    std::string out = ValidUtf8(s);
    for (auto& c : out)
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    return out;
  };
  std::string o;
  o += "run " + T(r.id) + "  " + T(r.scenario_name) + "  " + std::string(RunStatusName(r.status));
  if (!r.message.empty()) o += " (" + T(r.message) + ")";
  o += "\n  started " + FormatWallIso(r.start_wall_ns);
  if (r.end_wall_ns) o += ", " + Duration(r);
  o += ", seed " + std::to_string(r.seed);
  if (!r.git_revision.empty()) o += ", git " + T(r.git_revision);
  if (!r.tags.empty()) o += ", tags " + T(TagsText(r));
  o += "\n  " + std::to_string(run.hosts.size()) + " host(s), " +
       std::to_string(run.samples.size()) + " samples, " + std::to_string(run.events.size()) +
       " events";
  if (auto outcome = view.RunMetric("outcome"))
    o += ", outcome " + std::string(OutcomeName(*outcome));
  o += "\n";

  o += "verdicts: " + std::to_string(view.verdicts_passed()) + " passed, " +
       std::to_string(view.verdicts_failed()) + " failed\n";
  for (const auto& v : run.verdicts) {
    VerdictText t = ExplainVerdict(v);
    char line[512];
    std::snprintf(line, sizeof line, "  %s  %-22s %-8s expected %s, measured %s\n",
                  v.passed ? "PASS" : "FAIL", T(v.expectation).c_str(),
                  T(v.fault_id.value_or("")).c_str(), T(t.expected).c_str(), T(t.measured).c_str());
    o += line;
  }
  for (const auto& e : run.events) {  // what a black-box job could not tell (run_driver)
    if (e.kind != "black_box_note") continue;
    auto d = nlohmann::json::parse(e.detail_json, nullptr, /*allow_exceptions=*/false);
    if (d.is_object() && d.contains("text") && d["text"].is_string())
      o += "not measured: " + T(d["text"].get<std::string>()) + "\n";
  }
  if (!view.faults().empty()) {
    o += "faults:\n";
    for (const auto& fv : view.faults()) {
      o += "  " + T(view.FaultLabel(fv.fault->fault_id)) + ":";
      bool any = false;
      for (const auto& c : kFaultMetricColumns) {
        auto text = fv.MetricText(c.name);
        if (!text) continue;
        o += std::string(any ? "," : "") + " " + std::string(c.title) + " " + *text;
        any = true;
      }
      if (!any) o += " no metrics";
      o += "\n";
      std::string ledger;
      for (const auto& d : run.detections) {
        if (d.fault_id != fv.fault->fault_id) continue;
        ledger += (ledger.empty() ? "" : ", ") + T(d.layer) + " " +
                  (d.latency_ms ? FormatMetric(*d.latency_ms, "ms") : std::string("not noticed"));
        if (!d.evidence.empty() && d.layer != "injector") ledger += " (" + T(d.evidence) + ")";
      }
      if (!ledger.empty()) o += "    noticed by: " + ledger + "\n";
    }
  }
  return o;
}

}  // namespace fl::reports::render
