// `faultline doctor`'s checks (doctor.h): each reads files or probes what the coordinator's
// host may reach, and touches nothing.
#include "harness/suite/doctor.h"

#include <dirent.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>

#include "common/file_util.h"
#include "common/process.h"
#include "harness/agent/agent_policy.h"
#include "harness/control/auth.h"
#include "harness/control/certs.h"
#include "harness/lab/inventory.h"
#include "harness/lab/inventory_discovery.h"
#include "harness/run/prepare.h"
#include "harness/suite/census.h"
#include "harness/suite/suite_file.h"
#include "injectors/journal.h"
#include "reports/store/sql.h"

namespace fl::harness::suite {
namespace {

using lab::GateLevel;

DoctorLine Line(GateLevel level, const char* check, std::string message, std::string fix = "") {
  return DoctorLine{level, check, std::move(message), std::move(fix)};
}

std::string DirOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The scenarios to check: the suite's (resolved beside it), then --scenario's.
std::vector<std::string> ScenarioPaths(const DoctorOptions& o, std::vector<DoctorLine>* out) {
  std::vector<std::string> paths;
  if (!o.suite_file.empty()) {
    auto suite = LoadSuiteFile(o.suite_file);
    if (!suite.ok()) {
      out->push_back(Line(GateLevel::kCritical, "scenarios", suite.status().ToUserString(),
                          "fix the suite file"));
    } else {
      for (const auto& s : suite->scenarios)
        if (std::find(paths.begin(), paths.end(), s.path) == paths.end()) paths.push_back(s.path);
    }
  }
  for (const auto& s : o.scenario_files) paths.push_back(s);
  return paths;
}

// Each scenario prepared as `faultline run --dry-run` prepares it; the prepared runs are kept
// for the policy check.
std::vector<run::Prepared> CheckScenarios(const DoctorOptions& o, std::vector<DoctorLine>* out) {
  std::vector<run::Prepared> prepared;
  for (const auto& path : ScenarioPaths(o, out)) {
    RunOptions ro;
    ro.scenario_path = path;
    ro.lab_file = o.lab_file;
    ro.dry_run = true;
    auto p = run::Prepare(ro, nullptr);
    if (!p.ok()) {
      out->push_back(Line(GateLevel::kCritical, "scenarios", p.status().ToUserString(),
                          "name a target the lab has (faultline run --dry-run lists the plan), "
                          "or fix the lab file"));
      continue;
    }
    out->push_back(Line(GateLevel::kOk, "scenarios",
                        p->scenario.name + ": " + std::to_string(p->plan.faults.size()) +
                            " fault firing(s) on targets the lab has, " + std::to_string(p->world) +
                            " ranks"));
    prepared.push_back(std::move(*p));
  }
  return prepared;
}

// The planned faults that `host`'s agent would apply (every fault when host is empty) decided
// by `policy` (named `source` in the lines) as the agent decides; returns how many it allows.
size_t CheckFaultsAgainst(const AgentPolicy& policy, const std::string& source,
                          const std::vector<run::Prepared>& prepared, const std::string& host,
                          std::vector<DoctorLine>* out) {
  size_t allowed = 0;
  for (const auto& p : prepared) {
    for (const auto& f : p.plan.faults) {
      const std::string target_host = f.target.substr(0, f.target.find('.'));
      if (!host.empty() && target_host != host) continue;
      faultline::v1::InjectFault msg;
      msg.set_fault_id(f.id);
      msg.set_kind(f.kind);
      msg.set_target(f.target);
      for (const auto& [k, v] : f.params) (*msg.mutable_params())[k] = v;
      msg.set_duration_ms(f.duration_ns / kNsPerMs);
      InjectDecision d = DecideInject(policy, /*disposable_site=*/false, target_host, msg);
      if (d.status.ok()) {
        ++allowed;
        if (d.capped)
          out->push_back(Line(GateLevel::kWarning, "policy",
                              p.scenario.name + " " + f.id + " " + f.kind + " on " + f.target +
                                  ": allowed, but the policy cuts its duration",
                              "raise max_fault_duration in " + source));
        continue;
      }
      out->push_back(Line(GateLevel::kCritical, "policy",
                          p.scenario.name + " " + f.id + " " + f.kind + " on " + f.target +
                              ": refused by " + source + ": " + d.status.message(),
                          "allow it in the policy the hosts run (allow_kinds, "
                          "target_prefixes), or leave the fault out of the suite"));
    }
  }
  return allowed;
}

void CheckPolicy(const DoctorOptions& o, const std::vector<run::Prepared>& prepared,
                 std::vector<DoctorLine>* out) {
  if (o.policy_file.empty()) {
    if (!prepared.empty() && !o.lab_file.empty())
      out->push_back(Line(GateLevel::kOk, "policy",
                          "not checked here: give --policy FILE, the policy the hosts' agents run "
                          "with (an inventory's agents are asked for theirs)"));
    return;
  }
  auto policy = LoadAgentPolicy(o.policy_file);
  if (!policy.ok()) {
    out->push_back(Line(GateLevel::kCritical, "policy", policy.status().ToUserString(),
                        "fix the policy file"));
    return;
  }
  if (size_t allowed = CheckFaultsAgainst(*policy, o.policy_file, prepared, "", out))
    out->push_back(Line(GateLevel::kOk, "policy",
                        std::to_string(allowed) + " planned fault(s) allowed by " + o.policy_file));
}

// The lab's TLS folder: --tls-dir, else the inventory's (tls/ beside its token file).
std::string TlsDirOf(const DoctorOptions& o, const lab::Inventory* inv) {
  if (!o.tls_dir.empty()) return o.tls_dir;
  if (!inv || inv->token_file.empty()) return "";
  return DefaultTlsDir(inv->token_file);
}

void CheckCerts(const DoctorOptions& o, const lab::Inventory* inv, Nanos now,
                std::vector<DoctorLine>* out) {
  const std::string dir = TlsDirOf(o, inv);
  if (dir.empty()) return;  // a local lab: its certificates are made per run
  DIR* d = opendir(dir.c_str());
  if (!d) {
    out->push_back(Line(GateLevel::kCritical, "certs", "no TLS folder " + dir,
                        "make the lab CA and certificates: faultline certs init " + dir +
                            "; faultline certs issue " + dir + " HOST"));
    return;
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".crt") == 0) names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  const Nanos warn = static_cast<Nanos>(o.cert_warn_days) * 24 * 3600 * kNsPerSec;
  Nanos soonest = 0;
  std::string soonest_name;
  size_t good = 0;
  for (const auto& n : names) {
    const std::string path = dir + "/" + n;
    auto pem = ReadFile(path);
    auto id = pem.ok() ? ReadCertificate(*pem) : StatusOr<CertIdentity>(pem.status());
    if (!id.ok()) {
      out->push_back(Line(GateLevel::kCritical, "certs",
                          path + ": not a certificate: " + id.status().message(),
                          "issue it again: faultline certs issue " + dir + " NAME"));
      continue;
    }
    const Nanos left = id->not_after_wall_ns - now;
    const long days = static_cast<long>(left / (24 * 3600 * kNsPerSec));
    const std::string who = id->common_name.empty() ? n : id->common_name;
    if (left <= 0) {
      out->push_back(Line(GateLevel::kCritical, "certs",
                          path + " (" + who + ") expired " + FormatWallIso(id->not_after_wall_ns),
                          "issue a new one: faultline certs issue " + dir + " " + who +
                              " (after moving the old files away)"));
    } else if (left < warn) {
      out->push_back(Line(GateLevel::kWarning, "certs",
                          path + " (" + who + ") expires in " + std::to_string(days) + " day(s), " +
                              FormatWallIso(id->not_after_wall_ns),
                          "issue a new one before then: faultline certs issue " + dir + " " + who));
    } else {
      ++good;
      if (soonest == 0 || id->not_after_wall_ns < soonest) {
        soonest = id->not_after_wall_ns;
        soonest_name = who;
      }
    }
  }
  if (good)
    out->push_back(Line(GateLevel::kOk, "certs",
                        std::to_string(good) + " certificate(s) in " + dir +
                            " valid; the first to expire is " + soonest_name + "'s, in " +
                            std::to_string((soonest - now) / (24 * 3600 * kNsPerSec)) + " days"));
}

void CheckJournal(const DoctorOptions& o, std::vector<DoctorLine>* out) {
  injectors::FaultJournal journal(o.journal_dir);
  lab::GateResult r = lab::CheckNodeHoldsNoFault(journal);
  if (r.level == GateLevel::kOk) {
    out->push_back(Line(GateLevel::kOk, "journal", r.summary));
    return;
  }
  for (const auto& d : r.details)
    out->push_back(Line(GateLevel::kCritical, "journal", d + " (journal " + journal.dir() + ")",
                        "revert it first: faultline lab recover (or faultline gate epilog)"));
}

// The key types and blobs of known_hosts-style lines ("host type blob [comment]").
std::vector<std::pair<std::string, std::string>> KeysOf(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> keys;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream w(line);
    std::string host, type, blob;
    if (!(w >> host >> type >> blob)) continue;
    if (host.rfind("ssh-", 0) == 0 || host.rfind("ecdsa-", 0) == 0) {  // a bare "type blob"
      blob = type;
      type = host;
    }
    keys.push_back({type, blob});
  }
  return keys;
}

std::string Fingerprint(const std::string& known_hosts_line) {
  fl::RunOptions ro;
  ro.stdin_data = known_hosts_line + "\n";
  auto r = Run({"ssh-keygen", "-l", "-f", "-"}, ro);
  if (!r.ok() || r->exit_code != 0) return "?";
  std::istringstream w(r->out);
  std::string bits, fp;
  w >> bits >> fp;
  return fp;
}

void CheckSwitches(const DoctorOptions& o, const lab::Inventory* inv,
                   std::vector<DoctorLine>* out) {
  if (!inv || !inv->has_switches()) return;
  for (const auto& sw : inv->switches) {
    const injectors::SwitchConn& c = *sw.conn;
    if (!c.jump.empty()) {
      out->push_back(Line(GateLevel::kWarning, "switches",
                          c.Describe() + ": behind jump host " + c.jump + ", host key not checked",
                          "check it from the jump host: ssh-keyscan " + c.address));
      continue;
    }
    fl::RunOptions ro;
    ro.timeout = o.probe_timeout + 2 * kNsPerSec;
    const long t = std::max<long>(1, static_cast<long>(o.probe_timeout / kNsPerSec));
    auto scan =
        Run({"ssh-keyscan", "-T", std::to_string(t), "-p", std::to_string(c.port), c.address}, ro);
    const std::string label = c.Describe();
    if (!scan.ok() || KeysOf(scan->out).empty()) {
      out->push_back(Line(GateLevel::kCritical, "switches",
                          label + ": no SSH answer on port " + std::to_string(c.port),
                          "check the switch's management address and sshd"));
      continue;
    }
    std::string expected_text;
    if (!c.host_key.empty()) {
      expected_text = c.host_key;
    } else if (!c.known_hosts.empty()) {
      const std::string name =
          c.port == 22 ? c.address : "[" + c.address + "]:" + std::to_string(c.port);
      auto f = Run({"ssh-keygen", "-F", name, "-f", c.known_hosts}, ro);
      if (f.ok()) expected_text = f->out;
    }
    const auto expected = KeysOf(expected_text);
    const auto offered = KeysOf(scan->out);
    bool match = false;
    for (const auto& k : offered)
      match = match || std::find(expected.begin(), expected.end(), k) != expected.end();
    if (match) {
      out->push_back(Line(GateLevel::kOk, "switches", label + ": reachable, host key known"));
      continue;
    }
    std::string first;
    for (std::istringstream l(scan->out); std::getline(l, first);)
      if (!first.empty() && first[0] != '#') break;
    const std::string fp = Fingerprint(first);
    const char* what = expected.empty() ? "is unknown" : "has CHANGED";
    out->push_back(Line(GateLevel::kCritical, "switches",
                        label + ": host key " + fp + " " + what + " (" +
                            (c.host_key.empty() ? "known_hosts " + c.known_hosts
                                                : std::string("the inventory's host_key")) +
                            "); not accepted",
                        "compare " + fp +
                            " with the switch's own (its console), then add it "
                            "to the known_hosts file or the inventory's host_key"));
  }
}

std::string Millis(Nanos ns) {
  char b[48];
  std::snprintf(b, sizeof b, "%.1f ms", static_cast<double>(ns) / 1e6);
  return b;
}

// The inventory's agents asked who they are (census.h): reachable, version, clock, NICs.
void CheckAgents(const DoctorOptions& o, const lab::Inventory* inv,
                 const std::vector<run::Prepared>& prepared, std::vector<DoctorLine>* out) {
  if (!inv || !o.agents) return;
  CensusOptions co;
  co.listen = inv->listen;
  for (const auto& h : inv->hosts) co.hosts.push_back(h.name);
  co.wait = o.agent_wait;
  co.progress = [](const std::string&) {};
  auto token = ReadTokenFile(inv->token_file);
  if (!token.ok()) {
    out->push_back(Line(GateLevel::kCritical, "agents", token.status().message(),
                        "put the shared token where the inventory says (0600)"));
    return;
  }
  co.token = *token;
  const std::string tls_dir = TlsDirOf(o, inv);
  auto tls = LoadTlsMaterial(tls_dir, CertRole::kCoordinator, "");
  if (!tls.ok()) {
    out->push_back(Line(GateLevel::kCritical, "agents",
                        "no coordinator certificate to hear the agents: " + tls.status().message(),
                        "faultline certs issue --role coordinator (docs/control_plane.md)"));
    return;
  }
  co.tls = std::move(*tls);
  auto census = TakeCensus(co);
  if (!census.ok()) {
    out->push_back(Line(GateLevel::kWarning, "agents",
                        "cannot listen at " + inv->listen + ": " + census.status().message() +
                            "; the agents were not checked",
                        "a run may hold the address: run doctor again after it"));
    return;
  }
  const Nanos warn_clock = o.max_clock_offset / 10;
  for (const auto& h : census->hosts) {
    if (!h.seen) {
      out->push_back(Line(
          GateLevel::kCritical, "agents",
          h.host + ": no agent dialled in at " + inv->listen + " within " + Millis(o.agent_wait),
          "start it (systemctl status faultline-agent@" + h.host + ") and check it dials " +
              inv->listen));
      continue;
    }
    if (!inv->FindHost(h.host)) continue;  // a stranger: not this inventory's business
    std::string what = h.host + ": agent " + h.facts.agent_version;
    if (!o.coordinator_version.empty() && h.facts.agent_version != o.coordinator_version)
      out->push_back(Line(GateLevel::kWarning, "agents",
                          what + ", this coordinator " + o.coordinator_version,
                          "install the same faultline-agent version on every host"));
    if (!h.clock) {
      out->push_back(Line(GateLevel::kWarning, "agents",
                          h.host + ": clock not measured (" + h.clock_error + ")",
                          "check the agent's log"));
      continue;
    }
    const Nanos off = h.clock->offset_ns;
    const Nanos mag = off < 0 ? -off : off;
    const std::string clock = "clock " + std::string(off >= 0 ? "+" : "-") + Millis(mag) +
                              " (+/- " + Millis(h.clock->uncertainty_ns) + ")";
    if (mag > o.max_clock_offset)
      out->push_back(Line(GateLevel::kCritical, "agents",
                          h.host + ": " + clock + ", more than " + Millis(o.max_clock_offset),
                          "synchronise the host's clock (chrony or systemd-timesyncd)"));
    else if (mag > warn_clock)
      out->push_back(Line(GateLevel::kWarning, "agents", h.host + ": " + clock,
                          "synchronise the host's clock (chrony or systemd-timesyncd)"));
    else
      out->push_back(Line(GateLevel::kOk, "agents", what + ", " + clock));
  }
  for (const auto& h : census->hosts) {
    if (!h.seen || !inv->FindHost(h.host)) continue;
    for (const auto& lack : h.facts.lacks)
      out->push_back(Line(GateLevel::kCritical, "agents", h.host + " lacks " + lack,
                          "install iproute2 and nftables, mount cgroup v2, run the agent as root "
                          "(its unit does)"));
    // The faults this host's agent would apply, decided by the policy it really runs with.
    const std::string source =
        h.host + "'s policy " +
        (h.facts.policy_source.empty() ? std::string("(the built-in default)")
                                       : h.facts.policy_source);
    auto policy = h.facts.policy_yaml.empty()
                      ? StatusOr<AgentPolicy>(AgentPolicy{})
                      : ParseAgentPolicy(h.facts.policy_yaml, h.facts.policy_source);
    if (!policy.ok()) {
      out->push_back(Line(GateLevel::kCritical, "policy",
                          source + ": " + policy.status().ToUserString(), "fix the policy file"));
      continue;
    }
    if (size_t allowed = CheckFaultsAgainst(*policy, source, prepared, h.host, out))
      out->push_back(Line(GateLevel::kOk, "policy",
                          std::to_string(allowed) + " planned fault(s) allowed by " + source));
  }
  // What the hosts have against what the inventory says (the NICs that faults will target).
  for (const auto& d : lab::CheckDrift(*inv, census->SeenFacts())) {
    if (d.find("not seen") != std::string::npos || d.find("new host") != std::string::npos)
      continue;  // said above
    const bool missing = d.find("no such interface") != std::string::npos;
    out->push_back(Line(missing ? GateLevel::kCritical : GateLevel::kWarning, "agents",
                        "drift " + d,
                        missing ? "fix the inventory's ifname, or the host (faultline inventory "
                                  "discover --check shows every difference)"
                                : "faultline inventory discover --check shows every difference"));
  }
}

void CheckRoom(const DoctorOptions& o, std::vector<DoctorLine>* out) {
  if (o.db.empty() || reports::sql::IsPostgresTarget(o.db)) return;
  struct statvfs st;
  const std::string dir = DirOf(o.db);
  if (statvfs(dir.c_str(), &st) != 0) {
    out->push_back(Line(GateLevel::kCritical, "room", "cannot read the folder of " + o.db,
                        "create " + dir + " or point --db elsewhere"));
    return;
  }
  const unsigned long long free_b = static_cast<unsigned long long>(st.f_bavail) * st.f_frsize;
  const std::string text = std::to_string(free_b >> 20) + " MiB free beside " + o.db;
  if (free_b < (100ull << 20))
    out->push_back(Line(GateLevel::kCritical, "room", text, "free room or move --db"));
  else if (free_b < (1ull << 30))
    out->push_back(
        Line(GateLevel::kWarning, "room", text, "a suite's runs can take hundreds of MiB"));
  else
    out->push_back(Line(GateLevel::kOk, "room", text));
}

// What each lab needs of the host that runs it (Lab::Preflight: the local lab needs root,
// network namespaces and cgroup v2 here).
void CheckHost(const std::vector<run::Prepared>& prepared, std::vector<DoctorLine>* out) {
  std::vector<std::string> seen;  // one line per lab file
  for (const auto& p : prepared) {
    if (std::find(seen.begin(), seen.end(), p.lab->source()) != seen.end()) continue;
    seen.push_back(p.lab->source());
    Status st = p.lab->Preflight();
    if (!st.ok()) {
      out->push_back(Line(GateLevel::kCritical, "host", p.lab->source() + ": " + st.message(),
                          "run the suite where its lab can run (as root, on a kernel with "
                          "namespaces and cgroup v2)"));
      continue;
    }
    out->push_back(
        Line(GateLevel::kOk, "host",
             "this host can run the " + std::string(p.lab->kind()) + " lab " + p.lab->source()));
  }
}

}  // namespace

std::vector<DoctorLine> RunDoctor(const DoctorOptions& o) {
  const Nanos now = o.now_wall_ns ? o.now_wall_ns : WallNowNs();
  std::vector<DoctorLine> out;
  auto prepared = CheckScenarios(o, &out);
  CheckPolicy(o, prepared, &out);
  // The lab file as an inventory, read once for the TLS folder and the switches (a topology
  // is not one: those checks have nothing to do).
  std::optional<lab::Inventory> inv;
  if (!o.lab_file.empty())
    if (auto i = lab::LoadInventory(o.lab_file); i.ok()) inv = std::move(*i);
  const lab::Inventory* invp = inv ? &*inv : nullptr;
  CheckCerts(o, invp, now, &out);
  CheckJournal(o, &out);
  CheckSwitches(o, invp, &out);
  CheckAgents(o, invp, prepared, &out);
  CheckRoom(o, &out);
  CheckHost(prepared, &out);
  return out;
}

GateLevel WorstLevel(const std::vector<DoctorLine>& lines) {
  GateLevel w = GateLevel::kOk;
  for (const auto& l : lines)
    if (static_cast<int>(l.level) > static_cast<int>(w)) w = l.level;
  return w;
}

std::string FormatDoctor(const std::vector<DoctorLine>& lines) {
  std::ostringstream s;
  int n[3] = {0, 0, 0};
  for (const auto& l : lines) {
    ++n[static_cast<int>(l.level)];
    char level[16];
    std::snprintf(level, sizeof level, "%-8s", lab::GateLevelName(l.level));
    s << level << " " << l.check << ": " << l.message << "\n";
    if (!l.fix.empty()) s << "         fix: " << l.fix << "\n";
  }
  s << "faultline doctor: " << n[0] << " OK, " << n[1] << " WARNING, " << n[2] << " CRITICAL\n";
  return s.str();
}

nlohmann::json DoctorJson(const std::vector<DoctorLine>& lines) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& l : lines)
    a.push_back({{"level", lab::GateLevelName(l.level)},
                 {"check", l.check},
                 {"message", l.message},
                 {"fix", l.fix}});
  return {{"level", lab::GateLevelName(WorstLevel(lines))}, {"checks", a}};
}

}  // namespace fl::harness::suite
