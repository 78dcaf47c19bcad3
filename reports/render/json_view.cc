#include "reports/render/json_view.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>

namespace fl::reports {

// What RunJson writes of a host under the fields' own names; it adds the parsed fingerprint.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(HostRecord, name, address, clock_offset_ns, clock_uncertainty_ns)

}  // namespace fl::reports

namespace fl::reports::render {
namespace {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

json Opt(const std::optional<Nanos>& v) { return v ? json(*v) : json(nullptr); }

json RecordObject(const RunRecord& r) {
  json j = {{"run_id", r.id},
            {"scenario", r.scenario_name},
            {"status", std::string(RunStatusName(r.status))},
            {"seed", r.seed},
            {"git_revision", r.git_revision},
            {"started", FormatWallIso(r.start_wall_ns)},
            {"start_wall_ns", r.start_wall_ns},
            {"end_wall_ns", Opt(r.end_wall_ns)},
            {"message", r.message},
            {"tags", r.tags}};
  j["duration_s"] = r.end_wall_ns && *r.end_wall_ns >= r.start_wall_ns
                        ? json(static_cast<double>(*r.end_wall_ns - r.start_wall_ns) / 1e9)
                        : json(nullptr);
  return j;
}

// The object in text, or the text as a string when it is not JSON.
json ParseOrString(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json(text) : j;
}

json VerdictArray(std::span<const VerdictRecord> verdicts) {
  json a = json::array();
  for (const auto& v : verdicts)
    a.push_back({{"expectation", v.expectation},
                 {"fault", v.fault_id ? json(*v.fault_id) : json(nullptr)},
                 {"passed", v.passed},
                 {"observed", v.observed ? json(*v.observed) : json(nullptr)},
                 {"limit", v.limit ? json(*v.limit) : json(nullptr)},
                 {"message", v.message}});
  return a;
}

}  // namespace

std::string VerdictListJson(std::span<const VerdictRecord> verdicts) {
  return Dump(VerdictArray(verdicts));
}

std::string RunRecordJson(const RunRecord& run) { return Dump(RecordObject(run)); }

std::string RunListJson(std::span<const RunRecord> runs) {
  json a = json::array();
  for (const auto& r : runs) a.push_back(RecordObject(r));
  return Dump(a);
}

std::string RunJson(const RunData& d) {
  json j = RecordObject(d.run);
  json hosts = json::array();
  for (const auto& h : d.hosts) {
    json o = h;
    o["fingerprint"] = ParseOrString(h.fingerprint_json);
    hosts.push_back(std::move(o));
  }
  j["hosts"] = hosts;

  std::map<std::string, json> fault_metrics;
  json run_metrics = json::object();
  for (const auto& m : d.metrics) {
    if (m.fault_id) {
      fault_metrics[*m.fault_id][m.name] = m.value;
    } else {
      run_metrics[m.name] = m.value;
    }
  }
  static const std::pair<const char*, const char*> kFixed[] = {
      {"detection_ms", "detection_latency_ms"},
      {"first_progress_ms", "time_to_first_progress_ms"},
      {"recovery_ms", "recovery_ms"},
      {"degraded_ratio", "degraded_ratio"},
      {"throughput_loss_s", "throughput_loss_s"}};
  json faults = json::array();
  for (const auto& f : d.faults) {
    json m = fault_metrics.count(f.fault_id) ? fault_metrics[f.fault_id] : json::object();
    json o = {{"fault", f.fault_id},
              {"kind", f.kind},
              {"target", f.target},
              {"params", ParseOrString(f.params_json)},
              {"scheduled_wall_ns", Opt(f.scheduled_wall_ns)},
              {"requested_wall_ns", Opt(f.requested_wall_ns)},
              {"effective_wall_ns", Opt(f.effective_wall_ns)},
              {"reverted_wall_ns", Opt(f.reverted_wall_ns)},
              {"revert_verified", f.revert_verified ? json(*f.revert_verified) : json(nullptr)}};
    for (const auto& [field, name] : kFixed) o[field] = m.contains(name) ? m[name] : json(nullptr);
    o["metrics"] = m;
    json ledger = json::array();  // reports/metrics/ledger.h
    for (const auto& det : d.detections)
      if (det.fault_id == f.fault_id)
        ledger.push_back({{"layer", det.layer},
                          {"noticed_wall_ns", Opt(det.noticed_wall_ns)},
                          {"latency_ms", det.latency_ms ? json(*det.latency_ms) : json(nullptr)},
                          {"evidence", det.evidence}});
    o["ledger"] = ledger;
    faults.push_back(o);
  }
  j["faults"] = faults;
  j["metrics"] = run_metrics;
  static const char* kOutcomes[] = {"survived", "failed", "hung"};
  if (run_metrics.contains("outcome") && run_metrics["outcome"].is_number()) {
    int k = run_metrics["outcome"].get<int>();
    j["outcome"] = k >= 0 && k < 3 ? json(kOutcomes[k]) : json(nullptr);
  } else {
    j["outcome"] = nullptr;
  }
  auto count = [&](const char* name) {
    return run_metrics.contains(name) ? run_metrics[name] : json(nullptr);
  };
  j["correctness"] = {{"verified", count("verified_collectives")},
                      {"mismatches", count("mismatches")},
                      {"lost", count("lost_iterations")},
                      {"duplicated", count("duplicated_iterations")}};
  j["verdicts"] = VerdictArray(d.verdicts);
  j["telemetry"] = {{"samples", d.samples.size()}, {"events", d.events.size()}};
  // What a black-box job could not tell (the run driver's black_box_note events).
  json notes = json::array();
  for (const auto& e : d.events) {
    if (e.kind != "black_box_note") continue;
    json n = json::parse(e.detail_json, nullptr, /*allow_exceptions=*/false);
    if (n.is_object() && n.contains("text") && n["text"].is_string()) notes.push_back(n["text"]);
  }
  j["not_measured"] = notes;
  // Ranks that exited badly (rank_exit with a non-zero code or a signal), with the end of
  // their log when their agent sent it (docs/scenarios.md, "What faultline run prints").
  json bad = json::array();
  for (const auto& e : d.events) {
    if (e.kind != "rank_exit") continue;
    json x = json::parse(e.detail_json, nullptr, /*allow_exceptions=*/false);
    if (!x.is_object()) continue;
    const bool failed =
        (x.contains("code") && x["code"].is_number() && x["code"] != 0) || x.contains("signal");
    if (!failed) continue;
    json r = {{"rank", e.rank}};
    for (const char* k : {"code", "signal", "log_tail"})
      if (x.contains(k)) r[k] = x[k];
    bad.push_back(r);
  }
  j["failed_ranks"] = bad;
  return Dump(j);
}

}  // namespace fl::reports::render
