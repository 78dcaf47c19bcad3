// Parsing of ssh-template presets (preset.h).
#include "injectors/switch/ssh_template/preset.h"

#include <array>
#include <set>
#include <utility>

#include "common/name_chars.h"
#include "injectors/switch/ssh_template/internal.h"

namespace fl::injectors::ssh_template {
namespace {

constexpr std::array<SwitchOp, 9> kAllOps = {
    SwitchOp::kPortDown,   SwitchOp::kPortUp,     SwitchOp::kPortState,
    SwitchOp::kDropAdd,    SwitchOp::kDropRemove, SwitchOp::kRateAdd,
    SwitchOp::kRateRemove, SwitchOp::kCounters,   SwitchOp::kPfcWatchdog};

constexpr const char* kCounterFields[] = {"in_octets", "out_octets", "in_packets", "out_packets",
                                          "in_drops",  "out_drops",  "pfc_rx",     "pfc_tx"};

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
    if (p.name.empty() || !AllNameChars(p.name, "_-"))
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
        if (!IsNameOf(*s, 32, "_-"))
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

  // map[key]: a required list of command words.
  StatusOr<Words> RequiredWords(const YAML::Node& map, std::string_view key, unsigned allowed,
                                std::string_view op) {
    if (!doc_.Has(map, key))
      return doc_.Error(map, "missing required key '" + std::string(key) + "'");
    return ParseWords(map[std::string(key)], allowed, op, key);
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
    FL_ASSIGN_OR_RETURN(YAML::Node cmds, doc_.GetList(n, "commands", 1, 16, "commands"));
    for (const auto& c : cmds) {
      FL_ASSIGN_OR_RETURN(Words w, ParseWords(c, allowed, key, "a command"));
      a.commands.push_back(std::move(w));
    }
    FL_ASSIGN_OR_RETURN(a.readback, RequiredWords(n, "readback", allowed, key));
    bool has_expect = doc_.Has(n, "expect"), has_absent = doc_.Has(n, "expect_absent");
    if (has_expect == has_absent)
      return doc_.Error(n, key + " needs exactly one of expect and expect_absent");
    a.absent = has_absent;
    FL_ASSIGN_OR_RETURN(
        a.expect, ParsePattern(n, has_expect ? "expect" : "expect_absent", allowed, key, true));
    return a;
  }

  // n's command (required), after and pattern (required), as PortRead holds them.
  Status ParsePortRead(const YAML::Node& n, const std::string& key, PortRead& r) {
    FL_ASSIGN_OR_RETURN(r.command, RequiredWords(n, "command", kPort, key));
    FL_ASSIGN_OR_RETURN(r.after, ParsePattern(n, "after", kPort, key, false));
    FL_ASSIGN_OR_RETURN(r.pattern, ParsePattern(n, "pattern", kPort, key, true));
    return OkStatus();
  }

  StatusOr<PortStateSpec> ParsePortState(const YAML::Node& n, const std::string& key) {
    FL_RETURN_IF_ERROR(doc_.CheckKeys(
        n, {"command", "after", "pattern", "admin_group", "oper_group", "admin_up", "oper_up"},
        key));
    PortStateSpec s;
    FL_RETURN_IF_ERROR(ParsePortRead(n, key, s));
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
    FL_ASSIGN_OR_RETURN(YAML::Node reads, doc_.GetList(n, "reads", 1, 8, "commands"));
    std::vector<CounterRead> out;
    std::set<std::string> seen;
    for (const auto& r : reads) {
      FL_RETURN_IF_ERROR(doc_.ExpectMap(r, "a counters read"));
      FL_RETURN_IF_ERROR(doc_.CheckKeys(r, {"command", "matches"}, "a counters read"));
      CounterRead c;
      FL_ASSIGN_OR_RETURN(c.command, RequiredWords(r, "command", kPort, key));
      FL_ASSIGN_OR_RETURN(YAML::Node ms, doc_.GetList(r, "matches", 1, 16, "patterns"));
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
    FL_RETURN_IF_ERROR(ParsePortRead(n, key, s));
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

}  // namespace

StatusOr<Preset> ParsePreset(const YamlDoc& doc) { return PresetParser(doc).Parse(); }

}  // namespace fl::injectors::ssh_template
