// SwitchConn's stored form, names of stages and operations, rule names (switch_driver.h).
#include "injectors/switch/switch_driver.h"

#include "common/json_util.h"

namespace fl::injectors {

std::string SwitchConn::Describe() const {
  std::string who = user.empty() ? address : user + "@" + address;
  if (port != 22) who += ":" + std::to_string(port);
  return "switch " + name + " (" + who + ")";
}

nlohmann::json SwitchConnToJson(const SwitchConn& c) {
  return {{"name", c.name},
          {"driver", c.driver},
          {"address", c.address},
          {"port", c.port},
          {"user", c.user},
          {"key_file", c.key_file},
          {"known_hosts", c.known_hosts},
          {"host_key", c.host_key},
          {"jump", c.jump},
          {"ssh", c.ssh},
          {"preset", c.preset},
          {"preset_text", c.preset_text},
          {"connect_timeout_ns", c.connect_timeout},
          {"command_timeout_ns", c.command_timeout}};
}

StatusOr<SwitchConn> SwitchConnFromJson(const nlohmann::json& j) {
  constexpr std::string_view kSrc = "switch";
  if (!j.is_object()) return InvalidArgumentError("switch: not an object");
  SwitchConn c;
  FL_ASSIGN_OR_RETURN(c.name, JsonGet<std::string>(j, "name", kSrc));
  FL_ASSIGN_OR_RETURN(c.driver, JsonGet<std::string>(j, "driver", kSrc));
  FL_ASSIGN_OR_RETURN(c.address, JsonGet<std::string>(j, "address", kSrc));
  FL_ASSIGN_OR_RETURN(c.port, JsonGetInRange<int>(j, "port", 1, 65535, kSrc));
  FL_ASSIGN_OR_RETURN(c.user, JsonGetOr<std::string>(j, "user", "", kSrc));
  FL_ASSIGN_OR_RETURN(c.key_file, JsonGetOr<std::string>(j, "key_file", "", kSrc));
  FL_ASSIGN_OR_RETURN(c.known_hosts, JsonGetOr<std::string>(j, "known_hosts", "", kSrc));
  FL_ASSIGN_OR_RETURN(c.host_key, JsonGetOr<std::string>(j, "host_key", "", kSrc));
  FL_ASSIGN_OR_RETURN(c.jump, JsonGetOr<std::string>(j, "jump", "", kSrc));
  FL_ASSIGN_OR_RETURN(c.ssh, JsonGetOr<std::string>(j, "ssh", "/usr/bin/ssh", kSrc));
  FL_ASSIGN_OR_RETURN(c.preset, JsonGetOr<std::string>(j, "preset", "", kSrc));
  FL_ASSIGN_OR_RETURN(c.preset_text, JsonGetOr<std::string>(j, "preset_text", "", kSrc));
  FL_ASSIGN_OR_RETURN(c.connect_timeout,
                      JsonGetInRange<Nanos>(j, "connect_timeout_ns", 1, 600 * kNsPerSec, kSrc));
  FL_ASSIGN_OR_RETURN(c.command_timeout,
                      JsonGetInRange<Nanos>(j, "command_timeout_ns", 1, 3600 * kNsPerSec, kSrc));
  return c;
}

std::string_view SwitchStageName(SwitchStage s) {
  return s == SwitchStage::kIngress ? "ingress" : "egress";
}

std::string_view SwitchOpName(SwitchOp op) {
  switch (op) {
    case SwitchOp::kPortDown:
      return "port_down";
    case SwitchOp::kPortUp:
      return "port_up";
    case SwitchOp::kPortState:
      return "port_state";
    case SwitchOp::kDropAdd:
      return "drop_add";
    case SwitchOp::kDropRemove:
      return "drop_remove";
    case SwitchOp::kRateAdd:
      return "rate_add";
    case SwitchOp::kRateRemove:
      return "rate_remove";
    case SwitchOp::kCounters:
      return "counters";
    case SwitchOp::kPfcWatchdog:
      return "pfc_watchdog";
  }
  return "";
}

std::string SwitchRuleName(std::string_view handle_id, size_t index) {
  std::string n = "FL_";
  for (char c : handle_id)
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) n += c;
  if (n.size() > 26) n = n.substr(0, 3) + n.substr(n.size() - 23);  // the id's unique tail
  return n + "_" + std::to_string(index);
}

}  // namespace fl::injectors
