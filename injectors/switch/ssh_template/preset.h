// A parsed ssh-template preset (configs/switches/*.yaml; the format is docs/injectors.md,
// "Switch drivers"): per operation, the command templates, the read-back and the patterns its
// output is matched with. Internal to the ssh-template driver.
//
// Thread-safety: a Preset is immutable once parsed; ParsePreset may be called from any thread.
#pragma once

#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/yaml_util.h"
#include "injectors/switch/switch_driver.h"

namespace fl::injectors::ssh_template {

// A regex with placeholders: checked at open (with sample values), compiled per call.
struct Pattern {
  std::string src;
  std::string where;  // "PRESET:LINE:COL"
  bool Empty() const { return src.empty(); }
};

using Words = std::vector<std::string>;

struct Action {  // port_down/up, drop_add/remove, rate_add/remove
  std::vector<Words> commands;
  Words readback;
  Pattern expect;
  bool absent = false;  // expect_absent
};

// A command on a port whose output is searched for pattern (after the first match of `after`,
// when given): port_state's and pfc_watchdog's.
struct PortRead {
  Words command;
  Pattern after, pattern;
};

struct PortStateSpec : PortRead {
  int admin_group = 0, oper_group = 0;
  Pattern admin_up, oper_up;  // whole-match against the group's text
};

struct CounterMatch {  // one pattern searched in a read's output
  Pattern after, pattern;
  std::map<std::string, int> fields;  // field -> capture group
};

struct CounterRead {  // one command
  Words command;
  std::vector<CounterMatch> matches;
};

struct PfcwdSpec : PortRead {
  int action_group = 0, detection_group = 0, restoration_group = 0;
  Nanos unit = kNsPerMs;
};

struct Preset {
  std::string name;
  std::string file;  // for messages
  std::regex port_re;
  std::string port_pattern;
  bool posix = true;
  std::string stage_ingress = "ingress", stage_egress = "egress";
  std::map<SwitchOp, Action> actions;
  std::optional<PortStateSpec> port_state;
  std::vector<CounterRead> counters;
  bool has_counters = false;
  std::optional<PfcwdSpec> pfcwd;
};

// The preset in doc, checked: keys, placeholders per operation, patterns (compiled with sample
// values), capture groups, operations that go in pairs. InvalidArgument "PRESET:LINE:COL: ...".
StatusOr<Preset> ParsePreset(const YamlDoc& doc);

}  // namespace fl::injectors::ssh_template
