// SwitchConn's stored form, names of stages and operations, rule names (switch_driver.h).
#include "injectors/switch/switch_driver.h"

#include "common/enum_names.h"
#include "common/json_util.h"
#include "common/name_chars.h"

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

constexpr NamedValue<SwitchOp> kSwitchOpNames[] = {
    {SwitchOp::kPortDown, "port_down"},      {SwitchOp::kPortUp, "port_up"},
    {SwitchOp::kPortState, "port_state"},    {SwitchOp::kDropAdd, "drop_add"},
    {SwitchOp::kDropRemove, "drop_remove"},  {SwitchOp::kRateAdd, "rate_add"},
    {SwitchOp::kRateRemove, "rate_remove"},  {SwitchOp::kCounters, "counters"},
    {SwitchOp::kPfcWatchdog, "pfc_watchdog"}};

std::string_view SwitchOpName(SwitchOp op) { return NameIn(kSwitchOpNames, op, ""); }

std::string SwitchRuleName(std::string_view handle_id, size_t index) {
  std::string n = "FL_";
  for (char c : handle_id)
    if (IsNameChar(c, "")) n += c;
  if (n.size() > 26) n = n.substr(0, 3) + n.substr(n.size() - 23);  // the id's unique tail
  return n + "_" + std::to_string(index);
}

}  // namespace fl::injectors
