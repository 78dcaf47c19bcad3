#include "harness/agent/telemetry_line.h"

#include "common/json_util.h"
#include "common/name_chars.h"

namespace fl::harness {

namespace {

constexpr std::string_view kSrc = "telemetry line";

StatusOr<std::string> EventKind(const nlohmann::json& obj, std::string_view key,
                                std::string_view fallback, std::string_view source) {
  FL_ASSIGN_OR_RETURN(std::string kind,
                      JsonGetOr<std::string>(obj, key, std::string(fallback), source));
  if (!IsValidEventKind(kind))
    return InvalidArgumentError(std::string(source) + ": key '" + std::string(key) +
                                "': not an event kind (1.." + std::to_string(kMaxEventKindBytes) +
                                " characters [A-Za-z0-9_.:?-])");
  if (IsAgentOnlyEventKind(kind))
    return InvalidArgumentError(std::string(source) + ": event kind '" + kind +
                                "' is reported by the agent only");
  return kind;
}

StatusOr<TelemetryLine> Sample(const nlohmann::json& j) {
  TelemetrySample s;
  FL_ASSIGN_OR_RETURN(s.rank, JsonGetInRange<int>(j, "rank", 0, kMaxTelemetryRank, kSrc));
  FL_ASSIGN_OR_RETURN(s.iteration,
                      JsonGetInRange<uint64_t>(j, "it", 0, static_cast<uint64_t>(INT64_MAX), kSrc));
  FL_ASSIGN_OR_RETURN(s.start_wall_ns, JsonGetInRange<int64_t>(j, "start", 0, INT64_MAX, kSrc));
  FL_ASSIGN_OR_RETURN(s.end_wall_ns, JsonGetInRange<int64_t>(j, "end", 0, INT64_MAX, kSrc));
  FL_ASSIGN_OR_RETURN(s.bytes, JsonGetOr<uint64_t>(j, "bytes", 0, kSrc));
  FL_ASSIGN_OR_RETURN(s.verified, JsonGetOr<bool>(j, "verified", false, kSrc));
  FL_ASSIGN_OR_RETURN(s.mismatch, JsonGetOr<bool>(j, "mismatch", false, kSrc));
  return TelemetryLine(s);
}

StatusOr<int> OptionalRank(const nlohmann::json& obj, std::string_view key, int fallback,
                           std::string_view source) {
  FL_ASSIGN_OR_RETURN(int r, JsonGetOr<int>(obj, key, fallback, source));
  if (r < -1 || r > kMaxTelemetryRank)
    return InvalidArgumentError(std::string(source) + ": key '" + std::string(key) +
                                "': " + std::to_string(r) + " is outside -1.." +
                                std::to_string(kMaxTelemetryRank));
  return r;
}

StatusOr<TelemetryLine> CclEvent(const nlohmann::json& j) {
  FL_ASSIGN_OR_RETURN(int line_rank, OptionalRank(j, "rank", -1, kSrc));
  FL_ASSIGN_OR_RETURN(nlohmann::json e, JsonGet<nlohmann::json>(j, "e", kSrc));
  if (!e.is_object()) return InvalidArgumentError("telemetry line: key 'e': expected an object");
  constexpr std::string_view kE = "telemetry line: key 'e'";
  TelemetryEvent ev;
  FL_ASSIGN_OR_RETURN(ev.rank, OptionalRank(e, "rank", line_rank, kE));
  FL_ASSIGN_OR_RETURN(ev.wall_ns, JsonGetOr<int64_t>(e, "wall_ns", 0, kE));
  FL_ASSIGN_OR_RETURN(ev.kind, EventKind(e, "type", "ccl_event", kE));
  ev.detail_json = e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return TelemetryLine(std::move(ev));
}

StatusOr<TelemetryLine> WorkerEvent(const nlohmann::json& j) {
  TelemetryEvent ev;
  FL_ASSIGN_OR_RETURN(ev.rank, OptionalRank(j, "rank", -1, kSrc));
  FL_ASSIGN_OR_RETURN(ev.wall_ns, JsonGetOr<int64_t>(j, "wall", 0, kSrc));
  FL_ASSIGN_OR_RETURN(ev.kind, EventKind(j, "kind", "worker", kSrc));
  FL_ASSIGN_OR_RETURN(nlohmann::json detail,
                      JsonGetOr<nlohmann::json>(j, "detail", nlohmann::json::object(), kSrc));
  if (!detail.is_object())
    return InvalidArgumentError("telemetry line: key 'detail': expected an object");
  ev.detail_json = detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return TelemetryLine(std::move(ev));
}

}  // namespace

bool IsValidEventKind(std::string_view kind) { return IsNameOf(kind, kMaxEventKindBytes, "_.:?-"); }

bool IsValidNicCounterName(std::string_view name) {
  return IsNameOf(name, kMaxNicCounterNameBytes, "_.:-");
}

bool IsAgentOnlyEventKind(std::string_view kind) {
  return kind == "rank_exit" || kind == "telemetry_dropped";
}

StatusOr<TelemetryLine> ParseTelemetryLine(std::string_view line) {
  if (line.ends_with('\n')) line.remove_suffix(1);
  if (line.ends_with('\r')) line.remove_suffix(1);
  if (line.size() > kMaxTelemetryLineBytes)
    return InvalidArgumentError("telemetry line: longer than " +
                                std::to_string(kMaxTelemetryLineBytes) + " bytes");
  FL_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(line, kSrc));
  if (!j.is_object()) return InvalidArgumentError("telemetry line: not a JSON object");
  FL_ASSIGN_OR_RETURN(std::string t, JsonGet<std::string>(j, "t", kSrc));
  if (t == "sample") return Sample(j);
  if (t == "ccl") return CclEvent(j);
  if (t == "worker") return WorkerEvent(j);
  return InvalidArgumentError("telemetry line: unknown type 't': '" + t.substr(0, 32) + "'");
}

StatusOr<int> ParseRankExitDetail(std::string_view detail_json) {
  constexpr std::string_view kD = "rank_exit detail";
  FL_ASSIGN_OR_RETURN(nlohmann::json d, ParseJson(detail_json, kD));
  if (!d.is_object()) return InvalidArgumentError("rank_exit detail: not a JSON object");
  if (d.contains("code")) return JsonGetInRange<int>(d, "code", 0, 255, kD);
  if (d.contains("signal")) {
    FL_ASSIGN_OR_RETURN(int sig, JsonGetInRange<int>(d, "signal", 1, 128, kD));
    return -sig;
  }
  return -9;
}

}  // namespace fl::harness
