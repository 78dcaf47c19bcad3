#include "injectors/injector.h"

#include <cmath>

#include <cstdlib>

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
  if (!j.is_object()) return DataLossError("fault handle is not a JSON object");
  FaultHandle h;
  try {
    h.id = j.at("id").get<std::string>();
    h.spec.kind = j.at("kind").get<std::string>();
    h.spec.target = j.at("target").get<std::string>();
    h.spec.params = j.value("params", std::map<std::string, std::string>{});
    h.spec.duration = j.value("duration_ns", Nanos{0});
    h.spec.seed = j.value("seed", uint64_t{1});
    h.state = j.value("state", nlohmann::json::object());
    h.requested_wall_ns = j.value("requested_wall_ns", Nanos{0});
    h.effective_wall_ns = j.value("effective_wall_ns", Nanos{0});
    h.reverted_wall_ns = j.value("reverted_wall_ns", Nanos{0});
  } catch (const nlohmann::json::exception& e) {
    return DataLossError(std::string("fault handle: ") + e.what());
  }
  return h;
}

nlohmann::json PortToJson(const Port& p) {
  return {{"name", p.name},
          {"netns", p.netns},
          {"ifname", p.ifname},
          {"peer_netns", p.peer_netns},
          {"peer_ifname", p.peer_ifname},
          {"rate_bps", p.rate_bps},
          {"burst_bytes", p.burst_bytes}};
}

Port PortFromJson(const nlohmann::json& j) {
  Port p;
  p.name = j.value("name", "");
  p.netns = j.value("netns", "");
  p.ifname = j.value("ifname", "");
  p.peer_netns = j.value("peer_netns", "");
  p.peer_ifname = j.value("peer_ifname", "");
  p.rate_bps = j.value("rate_bps", uint64_t{0});
  p.burst_bytes = j.value("burst_bytes", uint64_t{0});
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
Status ParamError(const FaultSpec& spec, std::string_view key, const Status& s) {
  return InvalidArgumentError(spec.kind + ": parameter '" + std::string(key) +
                              "': " + s.ToUserString());
}
}  // namespace

StatusOr<Nanos> DurationParam(const FaultSpec& spec, std::string_view key, Nanos fallback) {
  const std::string* v = Find(spec, key);
  if (!v) return fallback;
  auto d = ParseDuration(*v);
  if (!d.ok()) return ParamError(spec, key, d.status());
  return *d;
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
  const std::string* v = Find(spec, key);
  if (!v) return fallback;
  auto r = ParseBitRate(*v);
  if (!r.ok()) return ParamError(spec, key, r.status());
  return *r;
}

StatusOr<uint64_t> BytesParam(const FaultSpec& spec, std::string_view key, uint64_t fallback) {
  const std::string* v = Find(spec, key);
  if (!v) return fallback;
  auto r = ParseBytes(*v);
  if (!r.ok()) return ParamError(spec, key, r.status());
  return *r;
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
