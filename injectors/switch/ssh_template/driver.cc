// The ssh-template switch driver (see ssh_template_driver.h, docs/injectors.md "Switch drivers"):
// SshTemplateDriver runs a preset's operations on one switch.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <thread>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/log.h"
#include "common/name_chars.h"
#include "common/process.h"
#include "common/yaml_util.h"
#include "injectors/switch/ssh_template/internal.h"
#include "injectors/switch/ssh_template/preset.h"
#include "injectors/switch/ssh_template/ssh_template_driver.h"

namespace fl::injectors {
namespace ssh_template {
namespace {

constexpr Nanos kReadbackPollNs = 200 * kNsPerMs;
constexpr size_t kTailChars = 400;
constexpr size_t kMaxMatchInput = 1 << 20;  // regexes look at the first MiB of an output

std::string Tail(std::string_view s, size_t n = kTailChars) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
    s.remove_suffix(1);
  if (s.size() <= n) return std::string(s);
  return "..." + std::string(s.substr(s.size() - n));
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
    bool ok = IsNameOf(port, 64, "_./:-");
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
    FL_ASSIGN_OR_RETURN(Vars v, RuleVars(SwitchOp::kDropAdd, port, stage, rule));
    return RunAction(SwitchOp::kDropAdd, v, Effective(deadline), SwitchOp::kDropRemove);
  }

  Status RemoveDrop(const std::string& port, SwitchStage stage, const std::string& rule,
                    Deadline deadline) override {
    FL_ASSIGN_OR_RETURN(Vars v, RuleVars(SwitchOp::kDropRemove, port, stage, rule));
    return RunAction(SwitchOp::kDropRemove, v, Effective(deadline), std::nullopt);
  }

  Status AddRateLimit(const std::string& port, SwitchStage stage, uint64_t bps,
                      const std::string& rule, Deadline deadline) override {
    FL_ASSIGN_OR_RETURN(Vars v, RuleVars(SwitchOp::kRateAdd, port, stage, rule));
    FL_RETURN_IF_ERROR(RateVars(bps, SwitchOp::kRateAdd, v));
    return RunAction(SwitchOp::kRateAdd, v, Effective(deadline), SwitchOp::kRateRemove);
  }

  Status RemoveRateLimit(const std::string& port, SwitchStage stage, const std::string& rule,
                         Deadline deadline) override {
    FL_ASSIGN_OR_RETURN(Vars v, RuleVars(SwitchOp::kRateRemove, port, stage, rule));
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

  // The variables of a rule operation (drop or rate limit) on port, once the preset has op.
  StatusOr<Vars> RuleVars(SwitchOp op, const std::string& port, SwitchStage stage,
                          const std::string& rule) {
    FL_RETURN_IF_ERROR(Need(op));
    FL_RETURN_IF_ERROR(CheckPortName(port));
    if (!IsNameOf(rule, 32, "_-"))
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
    RunOptions o;
    o.timeout = std::max<Nanos>(d.Remaining(), kNsPerMs);
    auto res = Run(*argv, o);
    if (!res.ok()) {
      Status st = res.status();
      if (st.code() == Code::kDeadlineExceeded)
        return DeadlineExceededError(prefix + ": no answer before the deadline");
      return st.Prepend(prefix);
    }
    const RunResult& r = *res;
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
}  // namespace ssh_template

StatusOr<std::unique_ptr<SwitchDriver>> OpenSshTemplateDriver(const SwitchConn& conn) {
  if (Status s = ssh_template::CheckConn(conn); !s.ok()) return s.Prepend(conn.Describe());
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
    FL_ASSIGN_OR_RETURN(ssh_template::Preset p, ssh_template::ParsePreset(doc));
    return std::unique_ptr<SwitchDriver>(
        new ssh_template::SshTemplateDriver(std::move(c), std::move(p)));
  } catch (const std::exception& e) {  // yaml-cpp or std::regex: never past this boundary
    return InvalidArgumentError(name + ": " + e.what());
  }
}

}  // namespace fl::injectors
