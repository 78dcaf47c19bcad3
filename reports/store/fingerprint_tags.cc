#include "reports/store/fingerprint_tags.h"

#include <nlohmann/json.hpp>

#include <set>

namespace fl::reports {

std::map<std::string, std::string> FingerprintTags(std::span<const HostRecord> hosts) {
  std::map<std::string, std::set<std::string>> values;
  auto add = [&](const std::string& tag, const nlohmann::json& v) {
    if (v.is_string() && !v.get<std::string>().empty()) values[tag].insert(v.get<std::string>());
  };
  for (const auto& h : hosts) {
    auto fp = nlohmann::json::parse(h.fingerprint_json, nullptr, /*allow_exceptions=*/false);
    if (!fp.is_object()) continue;
    if (fp.contains("kernel")) add("kernel", fp["kernel"]);
    if (fp.contains("ccl_build")) add("ccl_build", fp["ccl_build"]);
    if (fp.contains("nccl_version")) add("nccl", fp["nccl_version"]);
    if (fp.contains("nics") && fp["nics"].is_array())
      for (const auto& n : fp["nics"]) {
        if (!n.is_object()) continue;
        if (n.contains("driver")) add("nic.driver", n["driver"]);
        if (n.contains("firmware")) add("nic.firmware", n["firmware"]);
      }
  }
  std::map<std::string, std::string> tags;
  for (const auto& [tag, set] : values) {
    std::string v;
    for (const auto& x : set) v += (v.empty() ? "" : ",") + x;
    tags[tag] = v;
  }
  if (tags.count("nic.firmware")) tags["fw"] = tags["nic.firmware"];
  return tags;
}

}  // namespace fl::reports
