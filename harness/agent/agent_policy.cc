#include "harness/agent/agent_policy.h"

#include <arpa/inet.h>

#include <algorithm>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/name_chars.h"
#include "common/yaml_util.h"
#include "injectors/injector.h"
#include "injectors/switch/switch_driver.h"
#include "workloads/worker_args.h"

namespace fl::harness {

namespace pb = faultline::v1;
using namespace std::string_view_literals;

namespace {

constexpr size_t kMaxWorkerArgs = 256;  // a command job carries its argv and env
constexpr size_t kMaxWorkerArgBytes = 4096;
constexpr size_t kMaxNics = 16;
constexpr size_t kMaxNicBytes = 64;
// Arguments the agent gives the worker itself; the coordinator may not override them.
// The flags the agent alone writes (workloads/worker_args.h).
constexpr const auto& kAgentOwnedArgs = workloads::kAgentOwnedWorkerFlags;

// An absolute path without "." or ".." components (so that a prefix check means something).
bool IsPlainAbsolutePath(std::string_view p) {
  if (p.empty() || p[0] != '/' || p.size() > kMaxWorkerArgBytes) return false;
  size_t i = 1;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    std::string_view c = p.substr(i, j - i);
    if (c == "." || c == "..") return false;
    i = j + 1;
  }
  return p.find('\0') == std::string_view::npos;
}

// True when dir is path or one of its ancestors, by whole '/'-separated components.
bool UnderDir(std::string_view path, std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  if (path.size() < dir.size() || path.compare(0, dir.size(), dir) != 0) return false;
  return path.size() == dir.size() || dir == "/" || path[dir.size()] == '/';
}

// "leaf1" or "leaf1:Ethernet12": a switch name ([a-z0-9_-], as the inventory's) and an
// optional port ([A-Za-z0-9_/:.-]).
bool IsSwitchPortsEntry(std::string_view v) {
  const auto colon = v.find(':');
  std::string_view sw = v.substr(0, colon);
  if (!IsNameOf(sw, 32, "-_", Letters::kLower) || sw[0] == '-') return false;
  return colon == std::string_view::npos || IsNameOf(v.substr(colon + 1), 64, "_/:.-");
}

// The program of a command job against allow_commands (see agent_policy.h).
Status CheckCommand(const AgentPolicy& p, const std::vector<std::string>& command,
                    bool disposable_site) {
  if (command.empty()) return InvalidArgumentError("a command job names no program after --");
  const std::string& prog = command[0];
  if (!IsPlainAbsolutePath(prog))
    return InvalidArgumentError("command '" + prog.substr(0, 256) +
                                "' must be an absolute path without . or ..");
  if (p.allow_commands.empty()) {
    if (disposable_site) return OkStatus();
    return FailedPreconditionError(
        "policy: this agent serves real hosts and runs no command jobs unless its policy file "
        "lists allow_commands (refused: " +
        prog + ")");
  }
  for (const auto& a : p.allow_commands) {
    if (UnderDir(prog, a)) return OkStatus();  // the path itself, or under the directory
  }
  return FailedPreconditionError("policy: command " + prog + " is not under allow_commands");
}

}  // namespace

AheadMode ClassifyDue(Nanos now_wall, Nanos due_wall) {
  if (due_wall <= 0 || due_wall - now_wall <= kFireAtOnceNs) return AheadMode::kNow;
  if (due_wall - now_wall > kMaxAheadNs) return AheadMode::kTooFar;
  return AheadMode::kAhead;
}

FireStep NextFireStep(Nanos now_wall, Nanos due_wall, Nanos margin) {
  FireStep step;
  if (due_wall - now_wall <= margin) {
    step.fire = true;
    return step;
  }
  step.wait_ns = due_wall - now_wall - margin;
  return step;
}

Status CheckSwitchPorts(const AgentPolicy& policy, const std::vector<injectors::Port>& ports) {
  for (const auto& port : ports) {
    if (!port.sw) continue;  // a kernel port: the policy's other rules apply
    const std::string& sw = port.sw->name;
    const std::string exact = sw + ":" + port.sw_port;
    bool ok = false;
    for (const auto& e : policy.switch_ports) ok = ok || e == sw || e == exact;
    if (!ok)
      return FailedPreconditionError(
          "policy: switch port " + exact + " (" + port.name + ") is not in switch_ports" +
          (policy.switch_ports.empty()
               ? std::string(" (the policy names none: every switch port is refused)")
               : std::string()));
  }
  return OkStatus();
}

StatusOr<AgentPolicy> ParseAgentPolicy(std::string_view text, const std::string& name) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, name));
  const YAML::Node root = doc.root();
  FL_RETURN_IF_ERROR(
      doc.CheckKeys(root,
                    {"allow_kinds", "target_prefixes", "max_fault_duration", "max_lease",
                     "allow_ranks", "max_ranks", "max_world_size", "max_rank_bytes", "worker_dirs",
                     "switch_ports", "allow_commands"},
                    "agent policy"));
  AgentPolicy p;
  p.source = name;
  for (const char* key : {"allow_kinds", "target_prefixes", "worker_dirs", "allow_commands"}) {
    if (!doc.Has(root, key)) continue;
    FL_RETURN_IF_ERROR(doc.ExpectSequence(root[key], key));
    for (const auto& n : root[key]) {
      FL_ASSIGN_OR_RETURN(std::string v, doc.As<std::string>(n, key));
      const std::string k = key;
      if (v.empty()) return doc.Error(n, k + " entries must not be empty");
      if ((k == "worker_dirs" || k == "allow_commands") && !IsPlainAbsolutePath(v))
        return doc.Error(n, k + " entries must be absolute paths without . or ..");
      (k == "allow_kinds"       ? p.allow_kinds
       : k == "target_prefixes" ? p.target_prefixes
       : k == "worker_dirs"     ? p.worker_dirs
                                : p.allow_commands)
          .push_back(v);
    }
  }
  if (doc.Has(root, "switch_ports")) {
    FL_RETURN_IF_ERROR(doc.ExpectSequence(root["switch_ports"], "switch_ports"));
    for (const auto& n : root["switch_ports"]) {
      FL_ASSIGN_OR_RETURN(std::string v, doc.As<std::string>(n, "switch_ports"));
      if (!IsSwitchPortsEntry(v))
        return doc.Error(n,
                         "switch_ports entries are SWITCH or SWITCH:PORT (\"leaf1\", "
                         "\"leaf1:Ethernet12\"), not '" +
                             v + "'");
      p.switch_ports.push_back(v);
    }
  }
  FL_ASSIGN_OR_RETURN(p.max_fault_duration_ns, doc.GetDurationIn(root, "max_fault_duration", 0,
                                                                 kNsPerMs, kMaxFaultDurationCapNs));
  FL_ASSIGN_OR_RETURN(p.max_lease_ns, doc.GetDurationIn(root, "max_lease", p.max_lease_ns,
                                                        kMinLeaseNs, kMaxLeaseCapNs));
  FL_ASSIGN_OR_RETURN(p.allow_ranks, doc.GetOr<bool>(root, "allow_ranks", true));
  FL_ASSIGN_OR_RETURN(p.max_ranks, doc.GetBoundedOr<int>(root, "max_ranks", p.max_ranks, 1, 1024));
  FL_ASSIGN_OR_RETURN(p.max_world_size,
                      doc.GetBoundedOr<int>(root, "max_world_size", p.max_world_size, 1, 65536));
  if (doc.Has(root, "max_rank_bytes")) {
    FL_ASSIGN_OR_RETURN(p.max_rank_bytes,
                        doc.AsBytesIn(root["max_rank_bytes"], "max_rank_bytes", 1, 1ull << 40));
  }
  return p;
}

StatusOr<AgentPolicy> LoadAgentPolicy(const std::string& path) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, InputKind::kPolicy));
  return ParseAgentPolicy(text, path);
}

bool TargetMatchesPrefix(std::string_view target, std::string_view prefix) {
  if (prefix.empty() || target.size() < prefix.size()) return false;
  if (target.compare(0, prefix.size(), prefix) != 0) return false;
  return target.size() == prefix.size() || target[prefix.size()] == '.';
}

Nanos EffectiveLease(Nanos max_lease, Nanos requested, Nanos fallback) {
  Nanos lease = requested > 0 ? requested : fallback;
  return std::clamp(lease, kMinLeaseNs, std::max(kMinLeaseNs, max_lease));
}

InjectDecision DecideInject(const AgentPolicy& p, bool disposable_site, const std::string& host,
                            const pb::InjectFault& f) {
  InjectDecision d;
  auto refuse = [&](Status st) {
    d.status = std::move(st);
    return d;
  };
  // Real hosts: nothing unless a policy file says which kinds.
  if (!disposable_site && (p.source.empty() || p.allow_kinds.empty()))
    return refuse(
        FailedPreconditionError("policy: " + host +
                                " serves real hosts and refuses every fault unless its policy file "
                                "lists allow_kinds" +
                                (p.source.empty() ? " (it has no --policy)" : "")));
  if (!p.allow_kinds.empty() &&
      std::find(p.allow_kinds.begin(), p.allow_kinds.end(), f.kind()) == p.allow_kinds.end())
    return refuse(
        FailedPreconditionError("policy: fault kind '" + f.kind() + "' is not allowed on " + host));
  if (!p.target_prefixes.empty()) {
    bool ok = false;
    for (const auto& pre : p.target_prefixes) ok = ok || TargetMatchesPrefix(f.target(), pre);
    if (!ok)
      return refuse(FailedPreconditionError("policy: target '" + f.target() + "' is outside what " +
                                            host + " may touch"));
  }
  if (std::string why = BoundsProblem<int64_t>("duration_ms", f.duration_ms(), 0,
                                               kMaxFaultDurationCapNs / kNsPerMs);
      !why.empty())
    return refuse(InvalidArgumentError("inject " + f.fault_id() + ": " + why));
  // A kill is instantaneous: there is nothing to hold, so no deadline.
  if (const injectors::InjectorInfo* info = injectors::BuiltinInjectors().Describe(f.kind());
      info && info->instantaneous)
    return d;
  const Nanos declared = f.duration_ms() * kNsPerMs;
  const Nanos cap = p.max_fault_duration_ns;
  if (cap > 0 && (declared == 0 || declared > cap)) {
    d.hold_ns = cap;
    d.capped = true;
  } else if (declared > 0) {
    d.hold_ns = declared + kFaultDeadlineGraceNs;
    if (cap > 0) d.hold_ns = std::min(d.hold_ns, cap);
  }
  return d;
}

Status CheckLaunch(const AgentPolicy& p, const pb::LaunchRanks& l,
                   const std::vector<std::string>& all_args,
                   const std::vector<std::string>& store_dirs, bool disposable_site) {
  if (!p.allow_ranks) return FailedPreconditionError("policy: this agent does not start ranks");
  if (l.ranks_size() > p.max_ranks)
    return FailedPreconditionError("policy: at most " + std::to_string(p.max_ranks) +
                                   " ranks per host, not " + std::to_string(l.ranks_size()));
  for (const auto& r : l.ranks()) {
    FL_RETURN_IF_ERROR(CheckBounds<int>("world_size", r.world_size(), 1, p.max_world_size));
    FL_RETURN_IF_ERROR(CheckBounds<int>("rank", r.rank(), 0, r.world_size() - 1));
    if (static_cast<size_t>(r.nics_size()) > kMaxNics)
      return InvalidArgumentError("a rank takes at most " + std::to_string(kMaxNics) + " NICs");
    for (const auto& n : r.nics())
      if (n.empty() || n.size() > kMaxNicBytes || n.find_first_of(",\0"sv) != std::string::npos)
        return InvalidArgumentError("NIC address '" + n.substr(0, kMaxNicBytes) + "' is not one");
  }
  if (all_args.size() > kMaxWorkerArgs)
    return InvalidArgumentError("at most " + std::to_string(kMaxWorkerArgs) +
                                " worker arguments, not " + std::to_string(all_args.size()));
  // A command job: the worker's arguments, "--", then the command (not worker flags).
  const auto dashdash = std::find(all_args.begin(), all_args.end(), "--");
  const std::vector<std::string> args(all_args.begin(), dashdash);
  if (dashdash != all_args.end())
    FL_RETURN_IF_ERROR(
        CheckCommand(p, std::vector<std::string>(dashdash + 1, all_args.end()), disposable_site));
  const std::vector<std::string>& dirs = p.worker_dirs.empty() ? store_dirs : p.worker_dirs;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() > kMaxWorkerArgBytes || a.find('\0') != std::string::npos)
      return InvalidArgumentError("worker argument " + std::to_string(i) +
                                  " is longer than 4096 bytes or holds a NUL");
    for (std::string_view owned : kAgentOwnedArgs)
      if (a == owned || a.rfind(std::string(owned) + "=", 0) == 0)
        return FailedPreconditionError("policy: worker argument " + a +
                                       " is the agent's to set, not the coordinator's");
    const bool has_value = i + 1 < args.size();
    if (a == "--size" && has_value) {
      const std::string& v = args[i + 1];
      // At most 19 digits: always fits in 64 bits.
      bool digits =
          !v.empty() && v.size() <= 19 && v.find_first_not_of("0123456789") == std::string::npos;
      if (!digits) return InvalidArgumentError("worker --size '" + v + "' is not a byte count");
      const uint64_t bytes = std::stoull(v);
      FL_RETURN_IF_ERROR(
          CheckBounds<uint64_t>("worker --size", bytes, 1, p.max_rank_bytes, Unit::kBytes));
    }
    // A TCP rendezvous store: an IPv4 address and port only (the agent adds its token).
    if (a == "--store" && has_value && args[i + 1].rfind("tcp://", 0) == 0) {
      const std::string v = args[i + 1].substr(6);
      auto colon = v.rfind(':');
      in_addr addr;
      const std::string port = colon == std::string::npos ? "" : v.substr(colon + 1);
      if (colon == std::string::npos || port.empty() || port.size() > 5 ||
          port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535 ||
          inet_pton(AF_INET, v.substr(0, colon).c_str(), &addr) != 1)
        return InvalidArgumentError("worker --store '" + args[i + 1] + "' is not tcp://IPv4:PORT");
      continue;
    }
    if (a == "--env" && has_value) {
      const std::string& kv = args[i + 1];
      const std::string key = kv.substr(0, kv.find('='));
      if (kv.find('=') == std::string::npos || key.empty())
        return InvalidArgumentError("worker --env '" + kv.substr(0, 64) + "' is not NAME=VALUE");
      if (!disposable_site && key.rfind("LD_", 0) == 0)
        return FailedPreconditionError("policy: --env " + key +
                                       " (the dynamic loader's) is refused on real hosts");
    }
    if ((a == "--store-dir" || a == "--store") && has_value) {
      const std::string& v = args[i + 1];
      if (!IsPlainAbsolutePath(v))
        return InvalidArgumentError("worker --store-dir '" + v +
                                    "' must be an absolute path without . or ..");
      bool ok = false;
      for (const auto& d : dirs) ok = ok || UnderDir(v, d);
      if (!ok)
        return FailedPreconditionError("policy: worker --store-dir '" + v +
                                       "' is outside the directories this agent allows");
    }
  }
  return OkStatus();
}

}  // namespace fl::harness
