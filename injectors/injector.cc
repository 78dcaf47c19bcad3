#include "injectors/injector.h"
#include "injectors/switch/switch_driver.h"

#include <cmath>

#include <cstdlib>

#include "common/json_util.h"
#include "common/units.h"

namespace fl::injectors {

nlohmann::json HandleToJson(const FaultHandle& h) {
  return {{"id", h.id},
          {"kind", h.spec.kind},
          {"target", h.spec.target},
          {"params", h.spec.params},
          {"duration_ns", h.spec.duration},
          {"seed", h.spec.seed},
          {"state", h.state},
          {"requested_wall_ns", h.requested_wall_ns},
          {"effective_wall_ns", h.effective_wall_ns},
          {"reverted_wall_ns", h.reverted_wall_ns}};
}

StatusOr<FaultHandle> HandleFromJson(const nlohmann::json& j) {
  // A handle comes back from the journal (a file that may be corrupt): every field is checked
  // for type and range, and a bad one is DataLoss naming it; nothing here throws.
  if (!j.is_object()) return DataLossError("fault handle is not a JSON object");
  constexpr std::string_view kSrc = "fault handle";
  auto run = [&]() -> StatusOr<FaultHandle> {
    FaultHandle h;
    FL_ASSIGN_OR_RETURN(h.id, JsonGet<std::string>(j, "id", kSrc));
    FL_ASSIGN_OR_RETURN(h.spec.kind, JsonGet<std::string>(j, "kind", kSrc));
    FL_ASSIGN_OR_RETURN(h.spec.target, JsonGet<std::string>(j, "target", kSrc));
    FL_ASSIGN_OR_RETURN(h.spec.params,
                        (JsonGetOr<std::map<std::string, std::string>>(j, "params", {}, kSrc)));
    FL_ASSIGN_OR_RETURN(h.spec.duration, JsonGetOr<Nanos>(j, "duration_ns", 0, kSrc));
    FL_ASSIGN_OR_RETURN(h.spec.seed, JsonGetOr<uint64_t>(j, "seed", 1, kSrc));
    FL_ASSIGN_OR_RETURN(h.state,
                        JsonGetOr<nlohmann::json>(j, "state", nlohmann::json::object(), kSrc));
    FL_ASSIGN_OR_RETURN(h.requested_wall_ns, JsonGetOr<Nanos>(j, "requested_wall_ns", 0, kSrc));
    FL_ASSIGN_OR_RETURN(h.effective_wall_ns, JsonGetOr<Nanos>(j, "effective_wall_ns", 0, kSrc));
    FL_ASSIGN_OR_RETURN(h.reverted_wall_ns, JsonGetOr<Nanos>(j, "reverted_wall_ns", 0, kSrc));
    if (h.spec.kind.empty()) return InvalidArgumentError("fault handle: empty 'kind'");
    if (h.spec.duration < 0 || h.requested_wall_ns < 0 || h.effective_wall_ns < 0 ||
        h.reverted_wall_ns < 0)
      return InvalidArgumentError("fault handle: negative duration or time");
    if (!h.state.is_object()) return InvalidArgumentError("fault handle: 'state' is not an object");
    return h;
  };
  auto h = run();
  if (!h.ok()) return DataLossError(h.status().message());
  return h;
}

nlohmann::json PortToJson(const Port& p) {
  nlohmann::json j = {{"name", p.name},
                      {"netns", p.netns},
                      {"ifname", p.ifname},
                      {"peer_netns", p.peer_netns},
                      {"peer_ifname", p.peer_ifname},
                      {"rate_bps", p.rate_bps},
                      {"burst_bytes", p.burst_bytes}};
  if (p.sw) {
    j["switch"] = SwitchConnToJson(*p.sw);
    j["switch_port"] = p.sw_port;
  }
  return j;
}

Port PortFromJson(const nlohmann::json& j) {
  // Lenient by contract (no status to return): a member of the wrong type reads as empty,
  // which the injector's revert then reports as an unknown port; it never throws.
  auto str = [&](std::string_view k) {
    return JsonGetOr<std::string>(j, k, "", "port").value_or(std::string());
  };
  auto num = [&](std::string_view k) { return JsonGetOr<uint64_t>(j, k, 0, "port").value_or(0); };
  Port p;
  p.name = str("name");
  p.netns = str("netns");
  p.ifname = str("ifname");
  p.peer_netns = str("peer_netns");
  p.peer_ifname = str("peer_ifname");
  p.rate_bps = num("rate_bps");
  p.burst_bytes = num("burst_bytes");
  // A switch port whose connection does not parse keeps sw null but its switch_port: the
  // injector's revert then fails naming it instead of touching a kernel port of that name.
  if (j.contains("switch")) {
    auto conn = SwitchConnFromJson(j["switch"]);
    if (conn.ok()) p.sw = std::make_shared<const SwitchConn>(std::move(*conn));
    p.sw_port = str("switch_port");
    if (!p.sw) p.ifname.clear();
  }
  return p;
}

Status CheckParams(const FaultSpec& spec, std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, v] : spec.params) {
    bool ok = false;
    for (auto a : allowed) ok = ok || a == k;
    if (!ok) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      return InvalidArgumentError(spec.kind + ": unknown parameter '" + k +
                                  "' (allowed: " + (list.empty() ? "none" : list) + ")");
    }
  }
  return OkStatus();
}

namespace {
const std::string* Find(const FaultSpec& spec, std::string_view key) {
  auto it = spec.params.find(std::string(key));
  return it == spec.params.end() ? nullptr : &it->second;
}
// The parameter `key` read with parse (a common/units.h parser), fallback when it is not set;
// a value parse refuses is InvalidArgument naming the fault kind and the parameter.
template <typename T>
StatusOr<T> ParsedParam(const FaultSpec& spec, std::string_view key, T fallback,
                        StatusOr<T> (*parse)(std::string_view)) {
  const std::string* v = Find(spec, key);
  if (!v) return fallback;
  auto r = parse(*v);
  if (!r.ok())
    return InvalidArgumentError(spec.kind + ": parameter '" + std::string(key) +
                                "': " + r.status().ToUserString());
  return *r;
}
}  // namespace

StatusOr<Nanos> DurationParam(const FaultSpec& spec, std::string_view key, Nanos fallback) {
  return ParsedParam(spec, key, fallback, ParseDuration);
}

StatusOr<double> NumberParam(const FaultSpec& spec, std::string_view key, double fallback) {
  const std::string* v = Find(spec, key);
  if (!v) return fallback;
  std::string s = *v;
  if (!s.empty() && s.back() == '%') s.pop_back();
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(d))
    return InvalidArgumentError(spec.kind + ": parameter '" + std::string(key) + "': '" + *v +
                                "' is not a (finite) number");
  return d;
}

StatusOr<uint64_t> RateParam(const FaultSpec& spec, std::string_view key, uint64_t fallback) {
  return ParsedParam(spec, key, fallback, ParseBitRate);
}

StatusOr<uint64_t> BytesParam(const FaultSpec& spec, std::string_view key, uint64_t fallback) {
  return ParsedParam(spec, key, fallback, ParseBytes);
}

StatusOr<bool> BoolParam(const FaultSpec& spec, std::string_view key, bool fallback) {
  const std::string* v = Find(spec, key);
  if (!v) return fallback;
  if (*v == "true" || *v == "1" || *v == "yes" || *v == "on") return true;
  if (*v == "false" || *v == "0" || *v == "no" || *v == "off") return false;
  return InvalidArgumentError(spec.kind + ": parameter '" + std::string(key) + "': '" + *v +
                              "' is not a boolean (true/false)");
}

}  // namespace fl::injectors
