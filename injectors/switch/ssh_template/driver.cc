// The ssh-template switch driver (see ssh_template_driver.h, docs/injectors.md "Switch drivers").
#include "injectors/switch/ssh_template/ssh_template_driver.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/log.h"
#include "common/yaml_util.h"
#include "injectors/sys.h"

namespace fl::injectors {
namespace {

constexpr Nanos kReadbackPollNs = 200 * kNsPerMs;
constexpr size_t kTailChars = 400;
constexpr size_t kMaxMatchInput = 1 << 20;  // regexes look at the first MiB of an output

// ---- small helpers ---------------------------------------------------------------------------

bool CharsIn(std::string_view s, std::string_view extra) {
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              extra.find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::string Tail(std::string_view s, size_t n = kTailChars) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
    s.remove_suffix(1);
  if (s.size() <= n) return std::string(s);
  return "..." + std::string(s.substr(s.size() - n));
}

std::string RegexEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// std::regex throws on a bad pattern and may throw on pathological input: exceptions stay here.
StatusOr<std::regex> CompileRegex(const std::string& src, bool multiline) {
  try {
    auto flags = std::regex::ECMAScript;
    if (multiline) flags |= std::regex::multiline;
    return std::regex(src, flags);
  } catch (const std::exception& e) {  // regex_error, or bad_alloc on a huge pattern
    return InvalidArgumentError("bad regular expression /" + src + "/: " + e.what());
  }
}

// Searches text from `from`; fills m with absolute positions into text. Internal on a regex
// engine failure (e.g. its stack limit).
StatusOr<bool> Search(const std::string& text, size_t from, const std::regex& re, std::smatch& m) {
  try {
    return std::regex_search(text.begin() + static_cast<std::ptrdiff_t>(from), text.end(), m, re);
  } catch (const std::exception& e) {
    return InternalError(std::string("regular expression search failed: ") + e.what());
  }
}

StatusOr<uint64_t> ParseCount(std::string_view s) {
  std::string digits;
  for (char c : s) {
    if (c == ',') continue;
    if (c < '0' || c > '9') return InvalidArgumentError("'" + std::string(s) + "' is not a count");
    digits += c;
  }
  if (digits.empty() || digits.size() > 20)
    return InvalidArgumentError("'" + std::string(s) + "' is not a count");
  uint64_t v = 0;
  for (char c : digits) {
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10)
      return InvalidArgumentError("'" + std::string(s) + "' is too big");
    v = v * 10 + d;
  }
  return v;
}

std::string Join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

// ---- templates -------------------------------------------------------------------------------

// Values a template may use, per operation.
using Vars = std::map<std::string, std::string>;

enum VarBit : unsigned {
  kPort = 1,
  kRule = 2,
  kStage = 4,
  kRate = 8,  // bps, kbps, mbps
};

unsigned VarsOf(SwitchOp op) {
  switch (op) {
    case SwitchOp::kDropAdd:
    case SwitchOp::kDropRemove:
    case SwitchOp::kRateRemove:  // a removal is not told the rate
      return kPort | kRule | kStage;
    case SwitchOp::kRateAdd:
      return kPort | kRule | kStage | kRate;
    default:
      return kPort;
  }
}

unsigned BitOf(std::string_view name) {
  if (name == "port") return kPort;
  if (name == "rule") return kRule;
  if (name == "stage") return kStage;
  if (name == "bps" || name == "kbps" || name == "mbps") return kRate;
  return 0;
}

// Checks the {placeholders} of a template string: "{" + [a-z]+ + "}" is a placeholder (other
// braces, such as a regex's {1,4}, are literal). Returns "" or the complaint.
std::string CheckPlaceholders(std::string_view s, unsigned allowed, std::string_view op) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '{') continue;
    size_t j = i + 1;
    while (j < s.size() && s[j] >= 'a' && s[j] <= 'z') ++j;
    if (j == i + 1 || j >= s.size() || s[j] != '}') continue;
    std::string_view name = s.substr(i + 1, j - i - 1);
    unsigned bit = BitOf(name);
    if (bit == 0)
      return "unknown placeholder {" + std::string(name) +
             "} (known: {port} {rule} {stage} {bps} {kbps} {mbps})";
    if ((allowed & bit) == 0)
      return "placeholder {" + std::string(name) + "} has no value in " + std::string(op);
    i = j;
  }
  return {};
}

// Substitutes {name} by vars[name] (escaped by `escape` when given).
std::string Substitute(std::string_view s, const Vars& vars, bool regex) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '{') {
      size_t j = i + 1;
      while (j < s.size() && s[j] >= 'a' && s[j] <= 'z') ++j;
      if (j > i + 1 && j < s.size() && s[j] == '}') {
        auto it = vars.find(std::string(s.substr(i + 1, j - i - 1)));
        if (it != vars.end()) {
          out += regex ? RegexEscape(it->second) : it->second;
          i = j;
          continue;
        }
      }
    }
    out += s[i];
  }
  return out;
}

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

struct PortStateSpec {
  Words command;
  Pattern after, pattern;
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

struct PfcwdSpec {
  Words command;
  Pattern after, pattern;
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

constexpr std::array<SwitchOp, 9> kAllOps = {
    SwitchOp::kPortDown,   SwitchOp::kPortUp,     SwitchOp::kPortState,
    SwitchOp::kDropAdd,    SwitchOp::kDropRemove, SwitchOp::kRateAdd,
    SwitchOp::kRateRemove, SwitchOp::kCounters,   SwitchOp::kPfcWatchdog};

constexpr const char* kCounterFields[] = {"in_octets", "out_octets", "in_packets", "out_packets",
                                          "in_drops",  "out_drops",  "pfc_rx",     "pfc_tx"};

// ---- preset parsing --------------------------------------------------------------------------

class PresetParser {
 public:
  explicit PresetParser(const YamlDoc& doc) : doc_(doc) {}

  StatusOr<Preset> Parse() {
    const YAML::Node& root = doc_.root();
    FL_RETURN_IF_ERROR(doc_.ExpectMap(root, "a switch preset"));
    FL_RETURN_IF_ERROR(doc_.CheckKeys(
        root, {"name", "description", "port_pattern", "quoting", "stage_names", "operations"},
        "a switch preset"));
    Preset p;
    p.file = doc_.name();
    FL_ASSIGN_OR_RETURN(p.name, doc_.Get<std::string>(root, "name"));
    if (p.name.empty() || !CharsIn(p.name, "_-"))
      return doc_.Error(root["name"], "name must be [A-Za-z0-9_-]");
    if (doc_.Has(root, "description")) {
      FL_ASSIGN_OR_RETURN(std::string d, doc_.As<std::string>(root["description"], "description"));
      (void)d;
    }
    FL_ASSIGN_OR_RETURN(p.port_pattern, doc_.Get<std::string>(root, "port_pattern"));
    auto port_re = CompileRegex(p.port_pattern, false);
    if (!port_re.ok()) return doc_.Error(root["port_pattern"], port_re.status().message());
    p.port_re = *std::move(port_re);
    FL_ASSIGN_OR_RETURN(std::string quoting, doc_.Get<std::string>(root, "quoting"));
    if (quoting == "posix") {
      p.posix = true;
    } else if (quoting == "none") {
      p.posix = false;
    } else {
      return doc_.Error(root["quoting"], "quoting must be posix or none, not '" + quoting + "'");
    }
    if (doc_.Has(root, "stage_names")) {
      const YAML::Node& sn = root["stage_names"];
      FL_RETURN_IF_ERROR(doc_.ExpectMap(sn, "stage_names"));
      FL_RETURN_IF_ERROR(doc_.CheckKeys(sn, {"ingress", "egress"}, "stage_names"));
      FL_ASSIGN_OR_RETURN(p.stage_ingress, doc_.GetOr<std::string>(sn, "ingress", "ingress"));
      FL_ASSIGN_OR_RETURN(p.stage_egress, doc_.GetOr<std::string>(sn, "egress", "egress"));
      for (const auto* s : {&p.stage_ingress, &p.stage_egress})
        if (s->empty() || s->size() > 32 || !CharsIn(*s, "_-"))
          return doc_.Error(sn, "stage names must be [A-Za-z0-9_-], at most 32");
    }
    const YAML::Node& ops = root["operations"];
    if (!ops.IsDefined()) return doc_.Error(root, "missing required key 'operations'");
    FL_RETURN_IF_ERROR(doc_.ExpectMap(ops, "operations"));
    FL_RETURN_IF_ERROR(
        doc_.CheckKeys(ops,
                       {"port_down", "port_up", "port_state", "drop_add", "drop_remove", "rate_add",
                        "rate_remove", "counters", "pfc_watchdog"},
                       "operations"));
    for (SwitchOp op : kAllOps) {
      std::string key(SwitchOpName(op));
      const YAML::Node& n = ops[key];
      if (!n.IsDefined()) continue;
      FL_RETURN_IF_ERROR(doc_.ExpectMap(n, key));
      switch (op) {
        case SwitchOp::kPortState: {
          FL_ASSIGN_OR_RETURN(PortStateSpec s, ParsePortState(n, key));
          p.port_state = std::move(s);
          break;
        }
        case SwitchOp::kCounters: {
          FL_ASSIGN_OR_RETURN(p.counters, ParseCounters(n, key));
          p.has_counters = true;
          break;
        }
        case SwitchOp::kPfcWatchdog: {
          FL_ASSIGN_OR_RETURN(PfcwdSpec s, ParsePfcwd(n, key));
          p.pfcwd = std::move(s);
          break;
        }
        default: {
          FL_ASSIGN_OR_RETURN(Action a, ParseAction(n, op, key));
          p.actions[op] = std::move(a);
        }
      }
    }
    // Operations that only make sense in pairs.
    auto pair = [&](SwitchOp a, SwitchOp b) -> Status {
      if (p.actions.count(a) != p.actions.count(b))
        return doc_.Error(ops, "operations " + std::string(SwitchOpName(a)) + " and " +
                                   std::string(SwitchOpName(b)) + " go together");
      return OkStatus();
    };
    FL_RETURN_IF_ERROR(pair(SwitchOp::kPortDown, SwitchOp::kPortUp));
    FL_RETURN_IF_ERROR(pair(SwitchOp::kDropAdd, SwitchOp::kDropRemove));
    FL_RETURN_IF_ERROR(pair(SwitchOp::kRateAdd, SwitchOp::kRateRemove));
    return p;
  }

 private:
  StatusOr<Words> ParseWords(const YAML::Node& n, unsigned allowed, std::string_view op,
                             std::string_view what) {
    FL_RETURN_IF_ERROR(doc_.ExpectSequence(n, std::string(what)));
    if (n.size() == 0) return doc_.Error(n, std::string(what) + " must have at least one word");
    if (n.size() > 64) return doc_.Error(n, std::string(what) + " has more than 64 words");
    Words w;
    for (const auto& e : n) {
      FL_ASSIGN_OR_RETURN(std::string s, doc_.As<std::string>(e, "a command word"));
      if (s.find('\0') != std::string::npos) return doc_.Error(e, "a NUL in a command word");
      if (std::string c = CheckPlaceholders(s, allowed, op); !c.empty()) return doc_.Error(e, c);
      w.push_back(std::move(s));
    }
    return w;
  }

  StatusOr<Pattern> ParsePattern(const YAML::Node& map, std::string_view key, unsigned allowed,
                                 std::string_view op, bool required) {
    const YAML::Node& n = map[std::string(key)];
    if (!n.IsDefined() || n.IsNull()) {
      if (required) return doc_.Error(map, "missing required key '" + std::string(key) + "'");
      return Pattern{};
    }
    FL_ASSIGN_OR_RETURN(std::string src, doc_.As<std::string>(n, key));
    if (src.empty()) return doc_.Error(n, std::string(key) + " must not be empty");
    if (std::string c = CheckPlaceholders(src, allowed, op); !c.empty()) return doc_.Error(n, c);
    Vars sample = {{"port", "Ethernet0"}, {"rule", "FL_x_0"}, {"stage", "ingress"},
                   {"bps", "1000000"},    {"kbps", "1000"},   {"mbps", "1"}};
    auto re = CompileRegex(Substitute(src, sample, true), true);
    if (!re.ok()) return doc_.Error(n, std::string(key) + ": " + re.status().message());
    return Pattern{src, doc_.Where(n)};
  }

  StatusOr<int> ParseGroup(const YAML::Node& map, std::string_view key, bool required) {
    const YAML::Node& n = map[std::string(key)];
    if (!n.IsDefined() || n.IsNull()) {
      if (required) return doc_.Error(map, "missing required key '" + std::string(key) + "'");
      return 0;
    }
    return doc_.AsBounded<int>(n, key, 1, 99);
  }

  Status CheckGroupExists(const Pattern& p, int group, const YAML::Node& at) {
    if (group == 0) return OkStatus();
    Vars sample = {{"port", "Ethernet0"}};
    auto re = CompileRegex(Substitute(p.src, sample, true), true);
    if (re.ok() && static_cast<int>(re->mark_count()) < group)
      return doc_.Error(at, "capture group " + std::to_string(group) + " does not exist in /" +
                                p.src + "/ (it has " + std::to_string(re->mark_count()) + ")");
    return OkStatus();
  }

  StatusOr<Action> ParseAction(const YAML::Node& n, SwitchOp op, const std::string& key) {
    FL_RETURN_IF_ERROR(doc_.CheckKeys(n, {"commands", "readback", "expect", "expect_absent"}, key));
    unsigned allowed = VarsOf(op);
    Action a;
    const YAML::Node& cmds = n["commands"];
    if (!cmds.IsDefined()) return doc_.Error(n, "missing required key 'commands'");
    FL_RETURN_IF_ERROR(doc_.ExpectSequence(cmds, "commands"));
    if (cmds.size() == 0 || cmds.size() > 16)
      return doc_.Error(cmds, "commands must list 1 to 16 commands");
    for (const auto& c : cmds) {
      FL_ASSIGN_OR_RETURN(Words w, ParseWords(c, allowed, key, "a command"));
      a.commands.push_back(std::move(w));
    }
    if (!doc_.Has(n, "readback")) return doc_.Error(n, "missing required key 'readback'");
    FL_ASSIGN_OR_RETURN(a.readback, ParseWords(n["readback"], allowed, key, "readback"));
    bool has_expect = doc_.Has(n, "expect"), has_absent = doc_.Has(n, "expect_absent");
    if (has_expect == has_absent)
      return doc_.Error(n, key + " needs exactly one of expect and expect_absent");
    a.absent = has_absent;
    FL_ASSIGN_OR_RETURN(
        a.expect, ParsePattern(n, has_expect ? "expect" : "expect_absent", allowed, key, true));
    return a;
  }

  StatusOr<PortStateSpec> ParsePortState(const YAML::Node& n, const std::string& key) {
    FL_RETURN_IF_ERROR(doc_.CheckKeys(
        n, {"command", "after", "pattern", "admin_group", "oper_group", "admin_up", "oper_up"},
        key));
    PortStateSpec s;
    if (!doc_.Has(n, "command")) return doc_.Error(n, "missing required key 'command'");
    FL_ASSIGN_OR_RETURN(s.command, ParseWords(n["command"], kPort, key, "command"));
    FL_ASSIGN_OR_RETURN(s.after, ParsePattern(n, "after", kPort, key, false));
    FL_ASSIGN_OR_RETURN(s.pattern, ParsePattern(n, "pattern", kPort, key, true));
    FL_ASSIGN_OR_RETURN(s.admin_group, ParseGroup(n, "admin_group", true));
    FL_ASSIGN_OR_RETURN(s.oper_group, ParseGroup(n, "oper_group", true));
    FL_RETURN_IF_ERROR(CheckGroupExists(s.pattern, s.admin_group, n["admin_group"]));
    FL_RETURN_IF_ERROR(CheckGroupExists(s.pattern, s.oper_group, n["oper_group"]));
    FL_ASSIGN_OR_RETURN(s.admin_up, ParsePattern(n, "admin_up", 0, key, false));
    FL_ASSIGN_OR_RETURN(s.oper_up, ParsePattern(n, "oper_up", 0, key, false));
    if (s.admin_up.Empty()) s.admin_up.src = "up";
    if (s.oper_up.Empty()) s.oper_up.src = "up";
    return s;
  }

  StatusOr<std::vector<CounterRead>> ParseCounters(const YAML::Node& n, const std::string& key) {
    FL_RETURN_IF_ERROR(doc_.CheckKeys(n, {"reads"}, key));
    const YAML::Node& reads = n["reads"];
    if (!reads.IsDefined()) return doc_.Error(n, "missing required key 'reads'");
    FL_RETURN_IF_ERROR(doc_.ExpectSequence(reads, "reads"));
    if (reads.size() == 0 || reads.size() > 8)
      return doc_.Error(reads, "reads must list 1 to 8 commands");
    std::vector<CounterRead> out;
    std::set<std::string> seen;
    for (const auto& r : reads) {
      FL_RETURN_IF_ERROR(doc_.ExpectMap(r, "a counters read"));
      FL_RETURN_IF_ERROR(doc_.CheckKeys(r, {"command", "matches"}, "a counters read"));
      CounterRead c;
      if (!doc_.Has(r, "command")) return doc_.Error(r, "missing required key 'command'");
      FL_ASSIGN_OR_RETURN(c.command, ParseWords(r["command"], kPort, key, "command"));
      const YAML::Node& ms = r["matches"];
      if (!ms.IsDefined()) return doc_.Error(r, "missing required key 'matches'");
      FL_RETURN_IF_ERROR(doc_.ExpectSequence(ms, "matches"));
      if (ms.size() == 0 || ms.size() > 16)
        return doc_.Error(ms, "matches must list 1 to 16 patterns");
      for (const auto& mn : ms) {
        FL_RETURN_IF_ERROR(doc_.ExpectMap(mn, "a match"));
        FL_RETURN_IF_ERROR(doc_.CheckKeys(mn, {"after", "pattern", "fields"}, "a match"));
        CounterMatch cm;
        FL_ASSIGN_OR_RETURN(cm.after, ParsePattern(mn, "after", kPort, key, false));
        FL_ASSIGN_OR_RETURN(cm.pattern, ParsePattern(mn, "pattern", kPort, key, true));
        const YAML::Node& f = mn["fields"];
        if (!f.IsDefined()) return doc_.Error(mn, "missing required key 'fields'");
        FL_RETURN_IF_ERROR(doc_.ExpectMap(f, "fields"));
        FL_RETURN_IF_ERROR(doc_.CheckKeys(f,
                                          {"in_octets", "out_octets", "in_packets", "out_packets",
                                           "in_drops", "out_drops", "pfc_rx", "pfc_tx"},
                                          "fields"));
        for (const char* name : kCounterFields) {
          if (!doc_.Has(f, name)) continue;
          if (!seen.insert(name).second)
            return doc_.Error(f[name], std::string(name) + " is read twice");
          FL_ASSIGN_OR_RETURN(int g, doc_.AsBounded<int>(f[name], name, 1, 99));
          FL_RETURN_IF_ERROR(CheckGroupExists(cm.pattern, g, f[name]));
          cm.fields[name] = g;
        }
        if (cm.fields.empty()) return doc_.Error(f, "fields must name at least one counter");
        c.matches.push_back(std::move(cm));
      }
      out.push_back(std::move(c));
    }
    for (auto [a, b] : {std::pair{"in_octets", "out_octets"},
                        std::pair{"in_packets", "out_packets"}, std::pair{"in_drops", "out_drops"}})
      if (seen.count(a) != seen.count(b))
        return doc_.Error(reads, std::string(a) + " and " + b + " go together");
    return out;
  }

  StatusOr<PfcwdSpec> ParsePfcwd(const YAML::Node& n, const std::string& key) {
    FL_RETURN_IF_ERROR(doc_.CheckKeys(n,
                                      {"command", "after", "pattern", "action_group",
                                       "detection_group", "restoration_group", "time_unit"},
                                      key));
    PfcwdSpec s;
    if (!doc_.Has(n, "command")) return doc_.Error(n, "missing required key 'command'");
    FL_ASSIGN_OR_RETURN(s.command, ParseWords(n["command"], kPort, key, "command"));
    FL_ASSIGN_OR_RETURN(s.after, ParsePattern(n, "after", kPort, key, false));
    FL_ASSIGN_OR_RETURN(s.pattern, ParsePattern(n, "pattern", kPort, key, true));
    FL_ASSIGN_OR_RETURN(s.action_group, ParseGroup(n, "action_group", true));
    FL_ASSIGN_OR_RETURN(s.detection_group, ParseGroup(n, "detection_group", false));
    FL_ASSIGN_OR_RETURN(s.restoration_group, ParseGroup(n, "restoration_group", false));
    for (const char* g : {"action_group", "detection_group", "restoration_group"})
      if (doc_.Has(n, g)) {
        int v = std::string(g) == "action_group"      ? s.action_group
                : std::string(g) == "detection_group" ? s.detection_group
                                                      : s.restoration_group;
        FL_RETURN_IF_ERROR(CheckGroupExists(s.pattern, v, n[g]));
      }
    FL_ASSIGN_OR_RETURN(std::string unit, doc_.GetOr<std::string>(n, "time_unit", "ms"));
    if (unit == "ns") {
      s.unit = 1;
    } else if (unit == "us") {
      s.unit = kNsPerUs;
    } else if (unit == "ms") {
      s.unit = kNsPerMs;
    } else if (unit == "s") {
      s.unit = kNsPerSec;
    } else {
      return doc_.Error(n["time_unit"], "time_unit must be ns, us, ms or s, not '" + unit + "'");
    }
    return s;
  }

  const YamlDoc& doc_;
};

// ---- connection checks -----------------------------------------------------------------------

Status CheckHostName(std::string_view h, std::string_view what, bool allow_colon) {
  if (h.empty() || h.size() > 253)
    return InvalidArgumentError(std::string(what) + " is empty or too long");
  if (h.front() == '-')
    return InvalidArgumentError(std::string(what) + " '" + std::string(h) + "' starts with '-'");
  if (!CharsIn(h, allow_colon ? ".-:" : ".-"))
    return InvalidArgumentError(std::string(what) + " '" + std::string(h) +
                                "' has a character outside [A-Za-z0-9.-" +
                                (allow_colon ? ":" : "") + "]");
  return OkStatus();
}

Status CheckUser(std::string_view u, std::string_view what) {
  if (u.size() > 64) return InvalidArgumentError(std::string(what) + " is too long");
  if (!u.empty() && u.front() == '-')
    return InvalidArgumentError(std::string(what) + " '" + std::string(u) + "' starts with '-'");
  if (!CharsIn(u, "._-"))
    return InvalidArgumentError(std::string(what) + " '" + std::string(u) +
                                "' has a character outside [A-Za-z0-9._-]");
  return OkStatus();
}

Status CheckJump(std::string_view j) {
  if (j.empty()) return OkStatus();
  if (j.front() == '-')
    return InvalidArgumentError("jump '" + std::string(j) + "' starts with '-'");
  std::string_view host = j;
  if (size_t at = j.find('@'); at != std::string_view::npos) {
    FL_RETURN_IF_ERROR(CheckUser(j.substr(0, at), "jump user"));
    if (at == 0) return InvalidArgumentError("jump '" + std::string(j) + "': empty user");
    host = j.substr(at + 1);
  }
  if (size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    std::string_view port = host.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !CharsIn(port, "") ||
        std::find_if(port.begin(), port.end(), [](char c) { return c < '0' || c > '9'; }) !=
            port.end())
      return InvalidArgumentError("jump '" + std::string(j) + "': bad port");
    int p = std::atoi(std::string(port).c_str());
    if (p < 1 || p > 65535) return InvalidArgumentError("jump '" + std::string(j) + "': bad port");
    host = host.substr(0, colon);
  }
  return CheckHostName(host, "jump host", false);
}

Status CheckAbsPath(const std::string& p, std::string_view what) {
  if (p.empty() || p.front() != '/')
    return InvalidArgumentError(std::string(what) + " '" + p + "' must be an absolute path");
  for (char c : p)
    if (c == '\n' || c == '\0' || c == '\r')
      return InvalidArgumentError(std::string(what) + " has a control character");
  return OkStatus();
}

Status CheckHostKey(const std::string& k) {
  // "TYPE BASE64" (an optional comment is not wanted here).
  size_t sp = k.find(' ');
  if (sp == std::string::npos || sp == 0 || sp + 1 >= k.size())
    return InvalidArgumentError("host_key must be 'TYPE BASE64' (e.g. 'ssh-ed25519 AAAA...')");
  if (!CharsIn(k.substr(0, sp), "-@.") || !CharsIn(k.substr(sp + 1), "+/="))
    return InvalidArgumentError("host_key must be 'TYPE BASE64' (e.g. 'ssh-ed25519 AAAA...')");
  return OkStatus();
}

Status CheckConn(const SwitchConn& c) {
  FL_RETURN_IF_ERROR(CheckHostName(c.address, "address", true));
  if (c.port < 1 || c.port > 65535) return InvalidArgumentError("port must be 1..65535");
  FL_RETURN_IF_ERROR(CheckUser(c.user, "user"));
  FL_RETURN_IF_ERROR(CheckJump(c.jump));
  FL_RETURN_IF_ERROR(CheckAbsPath(c.ssh, "ssh"));
  if (!c.key_file.empty()) FL_RETURN_IF_ERROR(CheckAbsPath(c.key_file, "key_file"));
  if (c.known_hosts.empty() && c.host_key.empty())
    return InvalidArgumentError(
        "neither known_hosts nor host_key is set: the switch's host key cannot be checked");
  if (!c.known_hosts.empty()) FL_RETURN_IF_ERROR(CheckAbsPath(c.known_hosts, "known_hosts"));
  if (!c.host_key.empty()) FL_RETURN_IF_ERROR(CheckHostKey(c.host_key));
  if (c.connect_timeout < kNsPerSec) return InvalidArgumentError("connect_timeout must be >= 1s");
  return OkStatus();
}

// A temporary known_hosts file holding the pinned key; removed on destruction.
class TempKnownHosts {
 public:
  ~TempKnownHosts() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  Status Write(const SwitchConn& c) {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = (tmp != nullptr && tmp[0] == '/') ? tmp : "/tmp";
    std::string templ = dir + "/fl-known-hosts-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    int fd = mkstemp(buf.data());
    if (fd < 0) return ErrnoStatus(errno, "mkstemp " + templ);
    path_ = buf.data();
    std::string host = c.port == 22 ? c.address : "[" + c.address + "]:" + std::to_string(c.port);
    std::string line = host + " " + c.host_key + "\n";
    size_t off = 0;
    while (off < line.size()) {
      ssize_t w = write(fd, line.data() + off, line.size() - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        int e = errno;
        close(fd);
        return ErrnoStatus(e, "write " + path_);
      }
      off += static_cast<size_t>(w);
    }
    close(fd);
    return OkStatus();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ---- the driver ------------------------------------------------------------------------------

struct RemoteResult {
  std::string shown;  // the remote command as the switch sees it
  std::string out;
};

class SshTemplateDriver : public SwitchDriver {
 public:
  SshTemplateDriver(SwitchConn conn, Preset preset)
      : conn_(std::move(conn)), p_(std::move(preset)) {}

  const SwitchConn& conn() const override { return conn_; }

  bool Supports(SwitchOp op) const override {
    switch (op) {
      case SwitchOp::kPortState:
        return p_.port_state.has_value();
      case SwitchOp::kCounters:
        return p_.has_counters;
      case SwitchOp::kPfcWatchdog:
        return p_.pfcwd.has_value();
      default:
        return p_.actions.count(op) > 0;
    }
  }

  Status CheckPortName(std::string_view port) const override {
    bool ok = !port.empty() && port.size() <= 64 && CharsIn(port, "_./:-");
    if (ok) {
      try {
        ok = std::regex_match(port.begin(), port.end(), p_.port_re);
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok)
      return InvalidArgumentError(conn_.Describe() + ": port '" + std::string(port) +
                                  "' does not match the " + p_.name + " preset's port_pattern /" +
                                  p_.port_pattern + "/");
    return OkStatus();
  }

  Status SetPortAdmin(const std::string& port, bool up, Deadline deadline) override {
    SwitchOp op = up ? SwitchOp::kPortUp : SwitchOp::kPortDown;
    FL_RETURN_IF_ERROR(Need(op));
    FL_RETURN_IF_ERROR(CheckPortName(port));
    return RunAction(op, {{"port", port}}, Effective(deadline), std::nullopt);
  }

  StatusOr<SwitchPortState> ReadPort(const std::string& port, Deadline deadline) override {
    FL_RETURN_IF_ERROR(Need(SwitchOp::kPortState));
    FL_RETURN_IF_ERROR(CheckPortName(port));
    const PortStateSpec& s = *p_.port_state;
    Vars v = {{"port", port}};
    Deadline d = Effective(deadline);
    FL_ASSIGN_OR_RETURN(RemoteResult r, RunRemote(s.command, v, d));
    std::smatch m;
    FL_ASSIGN_OR_RETURN(bool found, Find(r.out, s.after, s.pattern, v, m));
    if (!found) return NoMatch("port_state", r, s.pattern, v);
    SwitchPortState st;
    FL_ASSIGN_OR_RETURN(st.admin_up, WholeMatch(s.admin_up.src, m[s.admin_group].str()));
    FL_ASSIGN_OR_RETURN(st.oper_up, WholeMatch(s.oper_up.src, m[s.oper_group].str()));
    return st;
  }

  Status AddDrop(const std::string& port, SwitchStage stage, const std::string& rule,
                 Deadline deadline) override {
    FL_RETURN_IF_ERROR(Need(SwitchOp::kDropAdd));
    FL_ASSIGN_OR_RETURN(Vars v, RuleVars(port, stage, rule));
    return RunAction(SwitchOp::kDropAdd, v, Effective(deadline), SwitchOp::kDropRemove);
  }

  Status RemoveDrop(const std::string& port, SwitchStage stage, const std::string& rule,
                    Deadline deadline) override {
    FL_RETURN_IF_ERROR(Need(SwitchOp::kDropRemove));
    FL_ASSIGN_OR_RETURN(Vars v, RuleVars(port, stage, rule));
    return RunAction(SwitchOp::kDropRemove, v, Effective(deadline), std::nullopt);
  }

  Status AddRateLimit(const std::string& port, SwitchStage stage, uint64_t bps,
                      const std::string& rule, Deadline deadline) override {
    FL_RETURN_IF_ERROR(Need(SwitchOp::kRateAdd));
    FL_ASSIGN_OR_RETURN(Vars v, RuleVars(port, stage, rule));
    FL_RETURN_IF_ERROR(RateVars(bps, SwitchOp::kRateAdd, v));
    return RunAction(SwitchOp::kRateAdd, v, Effective(deadline), SwitchOp::kRateRemove);
  }

  Status RemoveRateLimit(const std::string& port, SwitchStage stage, const std::string& rule,
                         Deadline deadline) override {
    FL_RETURN_IF_ERROR(Need(SwitchOp::kRateRemove));
    FL_ASSIGN_OR_RETURN(Vars v, RuleVars(port, stage, rule));
    return RunAction(SwitchOp::kRateRemove, v, Effective(deadline), std::nullopt);
  }

  StatusOr<SwitchCounters> ReadCounters(const std::string& port, Deadline deadline) override {
    FL_RETURN_IF_ERROR(Need(SwitchOp::kCounters));
    FL_RETURN_IF_ERROR(CheckPortName(port));
    Vars v = {{"port", port}};
    Deadline d = Effective(deadline);
    std::map<std::string, uint64_t> got;
    SwitchCounters c;
    for (const CounterRead& read : p_.counters) {
      FL_ASSIGN_OR_RETURN(RemoteResult r, RunRemote(read.command, v, d));
      for (const CounterMatch& cm : read.matches) {
        std::smatch m;
        FL_ASSIGN_OR_RETURN(bool found, Find(r.out, cm.after, cm.pattern, v, m));
        if (!found) return NoMatch("counters", r, cm.pattern, v);
        for (const auto& [field, group] : cm.fields) {
          std::string text = m[group].str();
          if (field == "pfc_rx" || field == "pfc_tx") {
            std::map<int, uint64_t>& dst = field == "pfc_rx" ? c.pfc_rx : c.pfc_tx;
            size_t i = 0;
            int prio = 0;
            while (i < text.size()) {
              while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
              size_t j = i;
              while (j < text.size() && text[j] != ' ' && text[j] != '\t') ++j;
              if (j == i) break;
              std::string tok = text.substr(i, j - i);
              if (tok != "N/A") {
                auto n = ParseCount(tok);
                if (!n.ok()) return BadValue("counters", r, field, tok);
                dst[prio] = *n;
              }
              ++prio;
              i = j;
            }
            continue;
          }
          if (text == "N/A") continue;
          auto n = ParseCount(text);
          if (!n.ok()) return BadValue("counters", r, field, text);
          got[field] = *n;
        }
      }
    }
    auto both = [&](const char* a, const char* b, uint64_t& va, uint64_t& vb) {
      if (got.count(a) == 0 || got.count(b) == 0) return false;
      va = got[a];
      vb = got[b];
      return true;
    };
    c.has_octets = both("in_octets", "out_octets", c.in_octets, c.out_octets);
    c.has_packets = both("in_packets", "out_packets", c.in_packets, c.out_packets);
    c.has_drops = both("in_drops", "out_drops", c.in_drops, c.out_drops);
    return c;
  }

  StatusOr<PfcWatchdogSettings> ReadPfcWatchdog(const std::string& port,
                                                Deadline deadline) override {
    FL_RETURN_IF_ERROR(Need(SwitchOp::kPfcWatchdog));
    FL_RETURN_IF_ERROR(CheckPortName(port));
    const PfcwdSpec& s = *p_.pfcwd;
    Vars v = {{"port", port}};
    FL_ASSIGN_OR_RETURN(RemoteResult r, RunRemote(s.command, v, Effective(deadline)));
    PfcWatchdogSettings w;
    w.raw = r.out.substr(0, 64 * 1024);
    std::smatch m;
    FL_ASSIGN_OR_RETURN(bool found, Find(r.out, s.after, s.pattern, v, m));
    if (!found) return w;  // no watchdog on this port
    w.enabled = true;
    w.action = m[s.action_group].str();
    auto time = [&](int group, Nanos& out) -> Status {
      if (group == 0) return OkStatus();
      std::string t = m[group].str();
      auto n = ParseCount(t);
      if (!n.ok() || *n > static_cast<uint64_t>(INT64_MAX / s.unit))
        return BadValue("pfc_watchdog", r, "time", t);
      out = static_cast<Nanos>(*n) * s.unit;
      return OkStatus();
    };
    FL_RETURN_IF_ERROR(time(s.detection_group, w.detection_ns));
    FL_RETURN_IF_ERROR(time(s.restoration_group, w.restoration_ns));
    return w;
  }

 private:
  Status Need(SwitchOp op) const {
    if (Supports(op)) return OkStatus();
    return FailedPreconditionError(conn_.Describe() + ": the " + p_.name + " preset (" + p_.file +
                                   ") has no " + std::string(SwitchOpName(op)) + " operation");
  }

  Deadline Effective(Deadline caller) const {
    Deadline own = Deadline::After(conn_.command_timeout);
    return own.at() < caller.at() ? own : caller;
  }

  StatusOr<Vars> RuleVars(const std::string& port, SwitchStage stage, const std::string& rule) {
    FL_RETURN_IF_ERROR(CheckPortName(port));
    if (rule.empty() || rule.size() > 32 || !CharsIn(rule, "_-"))
      return InvalidArgumentError(conn_.Describe() + ": rule name '" + rule +
                                  "' must be [A-Za-z0-9_-], 1 to 32 characters");
    return Vars{{"port", port},
                {"rule", rule},
                {"stage", stage == SwitchStage::kIngress ? p_.stage_ingress : p_.stage_egress}};
  }

  Status RateVars(uint64_t bps, SwitchOp op, Vars& v) {
    if (bps == 0) return InvalidArgumentError(conn_.Describe() + ": a rate of 0 bit/s");
    v["bps"] = std::to_string(bps);
    v["kbps"] = std::to_string(bps / 1000);
    v["mbps"] = std::to_string(bps / 1000000);
    // A template that would get 0 (a rate below its unit) is refused.
    const Action& a = p_.actions.at(op);
    for (const char* unit : {"kbps", "mbps"}) {
      if (v[unit] != "0") continue;
      std::string ph = std::string("{") + unit + "}";
      for (const auto& cmd : a.commands)
        for (const auto& w : cmd)
          if (w.find(ph) != std::string::npos)
            return InvalidArgumentError(conn_.Describe() + ": a rate of " + std::to_string(bps) +
                                        " bit/s is below the preset's unit " + ph);
    }
    return OkStatus();
  }

  // Runs one remote command; any non-zero exit is an error naming the switch and command.
  StatusOr<RemoteResult> RunRemote(const Words& templ, const Vars& vars, Deadline d) {
    RemoteResult rr;
    std::vector<std::string> words;
    for (const auto& w : templ) {
      std::string s = Substitute(w, vars, false);
      words.push_back(p_.posix ? PosixShellQuote(s) : s);
    }
    rr.shown = Join(words);
    std::string prefix = conn_.Describe() + ": `" + rr.shown + "`";
    if (d.Expired()) return DeadlineExceededError(prefix + ": deadline passed before it ran");
    TempKnownHosts tmp;
    std::string known = conn_.known_hosts;
    if (!conn_.host_key.empty()) {
      Status s = tmp.Write(conn_);
      if (!s.ok()) return s.Prepend(prefix + ": pinned host key");
      known = tmp.path();
    }
    auto argv = BuildSshArgv(conn_, known, words);
    if (!argv.ok()) return Status(argv.status()).Prepend(conn_.Describe());
    CommandOptions o;
    o.timeout = std::max<Nanos>(d.Remaining(), kNsPerMs);
    auto res = RunCommand(*argv, o);
    if (!res.ok()) {
      Status st = res.status();
      if (st.code() == Code::kDeadlineExceeded)
        return DeadlineExceededError(prefix + ": no answer before the deadline");
      return st.Prepend(prefix);
    }
    const CommandResult& r = *res;
    if (r.exit_code == 255)
      return UnavailableError(
          prefix + ": ssh could not reach the switch or log in (exit 255): " + Tail(r.err));
    if (r.exit_code != 0) {
      std::string why = r.exit_code < 0 ? "killed by signal " + std::to_string(r.term_signal)
                                        : "exit " + std::to_string(r.exit_code);
      std::string detail = Tail(r.err.empty() ? r.out : r.err);
      return InternalError(prefix + ": " + why + (detail.empty() ? "" : ": " + detail));
    }
    rr.out = r.out.size() > kMaxMatchInput ? r.out.substr(0, kMaxMatchInput) : r.out;
    return rr;
  }

  // Searches for pattern in out (after the first match of `after`, when given).
  StatusOr<bool> Find(const std::string& out, const Pattern& after, const Pattern& pattern,
                      const Vars& vars, std::smatch& m) {
    size_t from = 0;
    if (!after.Empty()) {
      FL_ASSIGN_OR_RETURN(std::regex a, Compiled(after, vars));
      std::smatch am;
      FL_ASSIGN_OR_RETURN(bool f, Search(out, 0, a, am));
      if (!f) return false;
      from = static_cast<size_t>(am.position(0) + am.length(0));
    }
    FL_ASSIGN_OR_RETURN(std::regex re, Compiled(pattern, vars));
    return Search(out, from, re, m);
  }

  StatusOr<std::regex> Compiled(const Pattern& p, const Vars& vars) {
    auto re = CompileRegex(Substitute(p.src, vars, true), true);
    if (!re.ok()) return InternalError(p.where + ": " + re.status().message());
    return re;
  }

  StatusOr<bool> WholeMatch(const std::string& re_src, const std::string& text) {
    auto re = CompileRegex(re_src, false);
    if (!re.ok()) return InternalError(re.status().message());
    try {
      return std::regex_match(text, *re);
    } catch (const std::exception& e) {
      return InternalError(std::string("regular expression match failed: ") + e.what());
    }
  }

  Status NoMatch(std::string_view op, const RemoteResult& r, const Pattern& p, const Vars& v) {
    return FailedPreconditionError(conn_.Describe() + ": " + std::string(op) + ": `" + r.shown +
                                   "` output did not match /" + Substitute(p.src, v, true) +
                                   "/; got: " + Tail(r.out));
  }

  Status BadValue(std::string_view op, const RemoteResult& r, std::string_view field,
                  std::string_view value) {
    return FailedPreconditionError(conn_.Describe() + ": " + std::string(op) + ": `" + r.shown +
                                   "`: " + std::string(field) + " '" + std::string(value) +
                                   "' is not a count");
  }

  // Runs an action's commands, then its read-back until it matches or the deadline passes.
  // An add (undo set) that fails after its first command, or whose read-back never matches, runs
  // the undo operation's commands (best effort) so that nothing stays applied. A remove keeps
  // going past a failed command (removing is best effort across its commands) and succeeds when
  // the read-back shows the thing gone.
  Status RunAction(SwitchOp op, const Vars& vars, Deadline d, std::optional<SwitchOp> undo) {
    const Action& a = p_.actions.at(op);
    bool is_remove = op == SwitchOp::kDropRemove || op == SwitchOp::kRateRemove;
    Status first_failure;
    const Nanos start = MonoNowNs();
    for (size_t i = 0; i < a.commands.size(); ++i) {
      auto r = RunRemote(a.commands[i], vars, d);
      if (r.ok()) {
        FL_LOG(kInfo, "switch") << conn_.Describe() << ": `" << r->shown << "`: ok";
        continue;
      }
      Status st = r.status();
      if (is_remove && st.code() == Code::kInternal) {
        if (first_failure.ok()) first_failure = st;
        continue;
      }
      if (undo && i > 0) return Undone(st, *undo, vars, i);
      return st;
    }
    Status rb = WaitReadback(op, a, vars, d);
    if (rb.ok()) {
      FL_LOG(kInfo, "switch") << conn_.Describe() << ": " << SwitchOpName(op) << " read back after "
                              << (MonoNowNs() - start) / kNsPerMs << " ms";
      return OkStatus();
    }
    if (is_remove && !first_failure.ok() && rb.code() == Code::kFailedPrecondition)
      return Status(first_failure.code(), first_failure.message() + " (and " + rb.message() + ")");
    if (undo && rb.code() == Code::kFailedPrecondition)
      return Undone(rb, *undo, vars, a.commands.size());
    return rb;
  }

  Status WaitReadback(SwitchOp op, const Action& a, const Vars& vars, Deadline d) {
    FL_ASSIGN_OR_RETURN(std::regex re, Compiled(a.expect, vars));
    RemoteResult last;
    for (;;) {
      auto r = RunRemote(a.readback, vars, d);
      if (!r.ok()) {
        // A read-back cut short by the deadline after an earlier answer: report the mismatch.
        if (r.status().code() == Code::kDeadlineExceeded && !last.shown.empty()) break;
        return r.status();
      }
      last = *std::move(r);
      std::smatch m;
      FL_ASSIGN_OR_RETURN(bool found, Search(last.out, 0, re, m));
      if (found != a.absent) return OkStatus();
      if (d.Remaining() <= kReadbackPollNs) break;
      std::this_thread::sleep_for(std::chrono::nanoseconds(kReadbackPollNs));
    }
    return FailedPreconditionError(
        conn_.Describe() + ": " + std::string(SwitchOpName(op)) + ": read-back `" + last.shown +
        "` " + (a.absent ? "still matched" : "did not match") + " /" +
        Substitute(a.expect.src, vars, true) + "/; got: " + Tail(last.out));
  }

  Status Undone(const Status& failure, SwitchOp undo, const Vars& vars, size_t ran) {
    const Action& u = p_.actions.at(undo);
    // The undo gets its own time: the failure may have used up the caller's deadline.
    Deadline d = Deadline::After(conn_.command_timeout);
    std::string undo_errors;
    for (const auto& cmd : u.commands) {
      auto r = RunRemote(cmd, vars, d);
      if (!r.ok())
        undo_errors += (undo_errors.empty() ? "" : "; ") + std::string(r.status().message());
    }
    std::string note = "; undone: ran " + std::string(SwitchOpName(undo)) + "'s " +
                       std::to_string(u.commands.size()) + " command(s) after " +
                       std::to_string(ran) + " had run";
    if (!undo_errors.empty()) note += " (undo failures: " + undo_errors + ")";
    return Status(failure.code(), std::string(failure.message()) + note);
  }

  SwitchConn conn_;
  Preset p_;
};

}  // namespace

StatusOr<std::vector<std::string>> BuildSshArgv(const SwitchConn& c,
                                                const std::string& known_hosts_file,
                                                const std::vector<std::string>& remote_words) {
  FL_RETURN_IF_ERROR(CheckHostName(c.address, "address", true));
  FL_RETURN_IF_ERROR(CheckUser(c.user, "user"));
  FL_RETURN_IF_ERROR(CheckJump(c.jump));
  FL_RETURN_IF_ERROR(CheckAbsPath(c.ssh, "ssh"));
  FL_RETURN_IF_ERROR(CheckAbsPath(known_hosts_file, "known_hosts"));
  if (c.port < 1 || c.port > 65535) return InvalidArgumentError("port must be 1..65535");
  Nanos ct = std::max<Nanos>(c.connect_timeout, kNsPerSec);
  std::vector<std::string> a = {
      c.ssh,
      "-F",
      "/dev/null",
      "-o",
      "BatchMode=yes",
      "-o",
      "ConnectTimeout=" + std::to_string((ct + kNsPerSec - 1) / kNsPerSec),
      "-o",
      "StrictHostKeyChecking=yes",
      "-o",
      "UserKnownHostsFile=" + known_hosts_file,
      "-o",
      "GlobalKnownHostsFile=/dev/null",
      "-o",
      "IdentitiesOnly=yes",
      "-o",
      "PasswordAuthentication=no",
      "-o",
      "LogLevel=ERROR"};
  if (!c.key_file.empty()) {
    FL_RETURN_IF_ERROR(CheckAbsPath(c.key_file, "key_file"));
    a.insert(a.end(), {"-i", c.key_file});
  }
  a.insert(a.end(), {"-p", std::to_string(c.port)});
  if (!c.user.empty()) a.insert(a.end(), {"-l", c.user});
  if (!c.jump.empty()) a.insert(a.end(), {"-J", c.jump});
  a.push_back("--");
  a.push_back(c.address);
  a.insert(a.end(), remote_words.begin(), remote_words.end());
  return a;
}

StatusOr<std::unique_ptr<SwitchDriver>> OpenSshTemplateDriver(const SwitchConn& conn) {
  if (Status s = CheckConn(conn); !s.ok()) return s.Prepend(conn.Describe());
  std::string name = conn.preset.empty() ? "<preset>" : conn.preset;
  SwitchConn c = conn;
  if (c.preset_text.empty()) {
    // Only the path: read it now, and keep the text in the driver's conn (and so in a handle
    // made from it).
    if (c.preset.empty())
      return InvalidArgumentError(conn.Describe() + ": neither preset nor preset_text is set");
    auto text = ReadInputFile(c.preset, InputKind::kSwitchPreset);
    if (!text.ok()) return Status(text.status()).Prepend(conn.Describe() + ": preset");
    c.preset_text = *std::move(text);
  }
  try {
    FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(c.preset_text, name));
    FL_ASSIGN_OR_RETURN(Preset p, PresetParser(doc).Parse());
    return std::unique_ptr<SwitchDriver>(new SshTemplateDriver(std::move(c), std::move(p)));
  } catch (const std::exception& e) {  // yaml-cpp or std::regex: never past this boundary
    return InvalidArgumentError(name + ": " + e.what());
  }
}

StatusOr<std::string> ResolveSwitchPreset(std::string_view name_or_path,
                                          const std::string& base_dir) {
  std::string arg(name_or_path);
  if (arg.empty()) return InvalidArgumentError("empty switch preset name");
  auto readable = [](const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), R_OK) == 0;
  };
  auto absolute = [](const std::string& p) {
    if (!p.empty() && p.front() == '/') return p;
    char buf[4096];
    if (getcwd(buf, sizeof buf) == nullptr) return p;
    return std::string(buf) + "/" + p;
  };
  if (CharsIn(arg, "_-")) {  // a bare name
    std::vector<std::string> dirs;
    if (const char* env = std::getenv("FAULTLINE_CONFIG_DIR"); env != nullptr && env[0] != '\0')
      dirs.push_back(env);
    std::string exe = SelfExeDir();
    std::string up = exe;
    for (int i = 0; i < 4; ++i) {
      up += "/..";
      dirs.push_back(up + "/configs");
    }
    dirs.push_back(exe + "/../share/faultline/configs");
    dirs.push_back("configs");
    std::string looked;
    for (const auto& d : dirs) {
      std::string p = d + "/switches/" + arg + ".yaml";
      if (readable(p)) {
        char buf[4096];
        if (realpath(p.c_str(), buf) != nullptr) return std::string(buf);
        return absolute(p);
      }
      looked += (looked.empty() ? "" : ", ") + p;
    }
    return InvalidArgumentError("switch preset '" + arg + "' not found (looked in " + looked + ")");
  }
  std::string p = arg;
  if (p.front() != '/') p = (base_dir.empty() ? std::string(".") : base_dir) + "/" + p;
  p = absolute(p);
  if (!readable(p))
    return InvalidArgumentError("switch preset '" + arg + "': no readable file " + p);
  return p;
}

}  // namespace fl::injectors
