#include "harness/cli/lab_cmd.h"

#include <signal.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/units.h"
#include "common/yaml_util.h"
#include "harness/cli/command.h"
#include "harness/lab/fault_spec.h"
#include "harness/lab/local_lab.h"
#include "injectors/injection.h"
#include "injectors/journal.h"
#include "injectors/journal_recovery.h"

namespace fl::harness {
namespace {

using lab::LocalLab;

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;
constexpr int kExitInfra = 3;
constexpr Nanos kMaxHold = 7 * 24 * 3600 * kNsPerSec;  // --for, as a scenario's fault duration

int Fail(const Status& s) {
  std::fprintf(stderr, "faultline: %s\n", s.ToUserString().c_str());
  FL_LOG(kDebug, "lab") << s.ToString();
  bool bad_input = s.code() == Code::kInvalidArgument || s.code() == Code::kNotFound;
  return bad_input ? kExitBadInput : kExitInfra;
}

std::atomic<bool> g_interrupted{false};
void OnSignal(int) { g_interrupted.store(true); }

std::string Rate(uint64_t bps) { return bps ? FormatBitRate(bps) : "-"; }

void PrintLab(const lab::LabDescription& d) {
  std::printf("lab %s  (topology %s; management: root namespace at %s)\n", d.name.c_str(),
              d.topology.c_str(), d.mgmt_root.c_str());
  std::printf("  %-8s %-18s %-14s %-16s %-18s %-12s %-12s %s\n", "node", "port", "ifname",
              "address", "peer", "rate", "tc", "state");
  for (const auto& n : d.nodes) {
    for (const auto& p : n.ports) {
      std::string state =
          std::string(p.admin_up ? "up" : "DOWN") + (p.carrier ? "" : ",no-carrier");
      std::printf("  %-8s %-18s %-14s %-16s %-18s %-12s %-12s %s\n", n.name.c_str(), p.name.c_str(),
                  p.ifname.c_str(), p.addr.empty() ? "-" : p.addr.c_str(), p.peer.c_str(),
                  Rate(p.rate_bps).c_str(), Rate(p.shaped_bps).c_str(), state.c_str());
    }
  }
  int hosts = 0, ranks = 0;
  for (const auto& n : d.nodes)
    if (!n.is_switch) {
      ++hosts;
      ranks += n.ranks;
    }
  std::printf("  %d hosts, %d ranks, %zu namespaces\n", hosts, ranks, d.nodes.size());
  if (d.switch_control == "ssh") {
    // The management plane: how an inventory or a person reaches each switch's sshd.
    std::printf("  switches over ssh (user root, port 22; key %s, known_hosts %s):\n",
                d.ssh_key.c_str(), d.known_hosts.c_str());
    for (const auto& n : d.nodes) {
      if (!n.is_switch || n.mgmt_addr.empty()) continue;
      std::string ports;
      for (const auto& p : n.ports)
        if (!p.sw_port.empty()) ports += " " + p.sw_port + "=" + p.ifname;
      std::printf("    %-8s %-16s%s\n", n.name.c_str(), n.mgmt_addr.c_str(), ports.c_str());
    }
  }
  if (d.routing == "bgp") {
    // A line per router: its AS and BGP sessions (FRR's own view, through vtysh).
    std::printf("  routing bgp (FRR zebra + bgpd per switch):\n");
    for (const auto& n : d.nodes)
      if (!n.bgp.empty()) std::printf("    %-8s %s\n", n.name.c_str(), n.bgp.c_str());
  }
}

std::unique_ptr<injectors::InjectorRegistry> Injectors() {
  auto r = std::make_unique<injectors::InjectorRegistry>("injector");
  RegisterBuiltinInjectors(*r).IgnoreError();  // names are unique by construction
  return r;
}

int LabUp(const std::string& path, const std::string& name) {
  auto topo = lab::LoadTopology(path);
  if (!topo.ok()) return Fail(topo.status());
  auto l = LocalLab::Create(*topo, name);
  if (!l.ok()) return Fail(l.status());
  Nanos t0 = MonoNowNs();
  Status s = (*l)->Provision();
  if (!s.ok()) return Fail(s);
  std::printf("lab %s is up (%s)\n", (*l)->name().c_str(),
              FormatDuration(MonoNowNs() - t0).c_str());
  return kExitOk;
}

int LabStatus(const std::string& name) {
  std::vector<std::string> names = name.empty() ? LocalLab::List() : std::vector<std::string>{name};
  if (names.empty()) {
    std::printf("no lab is up\n");
    return kExitOk;
  }
  for (const auto& n : names) {
    auto l = LocalLab::Open(n);
    if (!l.ok()) return Fail(l.status());
    auto d = (*l)->Describe();
    if (!d.ok()) return Fail(d.status());
    PrintLab(*d);
  }
  return kExitOk;
}

int LabDown(const std::string& name) {
  std::vector<std::string> names = name.empty() ? LocalLab::List() : std::vector<std::string>{name};
  int rc = kExitOk;
  for (const auto& n : names) {
    auto l = LocalLab::Open(n);
    if (!l.ok()) return Fail(l.status());
    Nanos t0 = MonoNowNs();
    Status s = (*l)->Teardown();
    if (!s.ok()) {
      rc = Fail(s);
      continue;
    }
    std::printf("lab %s is down (%s)\n", n.c_str(), FormatDuration(MonoNowNs() - t0).c_str());
  }
  return rc;
}

int LabRecover(bool include_live) {
  auto registry = Injectors();
  injectors::FaultJournal journal;
  auto report = injectors::RecoverDeadFaults(journal, *registry, include_live);
  for (const auto& id : report.reverted) std::printf("reverted %s\n", id.c_str());
  for (const auto& g : report.gone) std::printf("removed %s\n", g.c_str());
  for (const auto& id : report.skipped)
    std::printf("skipped %s (its owner is alive)\n", id.c_str());
  for (const auto& e : report.failed)
    std::fprintf(stderr, "faultline: could not revert %s\n", e.c_str());
  for (const auto& e : report.corrupt)
    std::fprintf(stderr, "faultline: corrupt journal entry %s\n", e.c_str());
  if (report.reverted.empty() && report.gone.empty() && report.failed.empty() &&
      report.corrupt.empty())
    std::printf("nothing to recover\n");
  return report.failed.empty() && report.corrupt.empty() ? kExitOk : kExitInfra;
}

struct InjectArgs {
  std::string lab, kind, target, hold, file;
  std::vector<std::string> params;
  uint64_t seed = 1;
  bool dry_run = false;
};

int LabInject(const InjectArgs& a) {
  auto l = LocalLab::Open(a.lab);
  if (!l.ok()) return Fail(l.status());
  auto registry = Injectors();
  injectors::FaultSpec spec;
  if (!a.file.empty()) {
    auto s = lab::LoadFaultSpecFile(a.file, *registry, &(*l)->fabric());
    if (!s.ok()) return Fail(s.status());
    spec = *s;
  } else {
    if (a.kind.empty() || a.target.empty())
      return Fail(InvalidArgumentError("lab inject needs KIND and --target (or --file)"));
    spec.kind = a.kind;
    spec.target = a.target;
    spec.seed = a.seed;
    if (!a.hold.empty()) {
      if (a.hold[0] == '-')
        return Fail(InvalidArgumentError("--for: a duration must not be negative"));
      auto d = ParseDuration(a.hold);
      if (!d.ok()) return Fail(Status(d.status()).Prepend("--for"));
      // Bounded like a scenario's fault duration (0 would mean "until Ctrl-C": leave --for out).
      Status b = CheckBounds<Nanos>("--for", *d, kNsPerMs, kMaxHold, Unit::kDuration);
      if (!b.ok()) return Fail(b);
      spec.duration = *d;
    }
    for (const auto& kv : a.params) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        return Fail(InvalidArgumentError("--param '" + kv + "': expected key=value"));
      spec.params[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    Status s = lab::CheckFaultSpec(spec, *registry, &(*l)->fabric());
    if (!s.ok()) return Fail(s);
  }
  auto inj = registry->Create(spec.kind);
  if (!inj.ok()) return Fail(inj.status());
  if (a.dry_run) {
    auto h = injectors::DryRunFault(**inj, spec, (*l)->fabric());
    if (!h.ok()) return Fail(h.status());
    std::printf("dry run: would apply %s on %s:\n%s\n", spec.kind.c_str(), spec.target.c_str(),
                h->state.dump(2).c_str());
    return kExitOk;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  // Ctrl-C, a kill and a closed terminal all revert the same way.
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  injectors::FaultJournal journal;
  auto h = injectors::InjectFault(**inj, spec, (*l)->fabric(), &journal);
  if (!h.ok()) return Fail(h.status());
  injectors::ScopedFault fault(inj->get(), *h, &journal);
  std::printf("%s on %s: requested %s, effective %s (+%s), verified present\n", spec.kind.c_str(),
              spec.target.c_str(), FormatWallIso(h->requested_wall_ns).c_str(),
              FormatWallIso(h->effective_wall_ns).c_str(),
              FormatDuration(h->effective_wall_ns - h->requested_wall_ns).c_str());
  std::fflush(stdout);
  // Hold for the duration counted from when the fault became effective, or until Ctrl-C.
  Nanos hold = spec.duration > 0 ? spec.duration - (WallNowNs() - h->effective_wall_ns)
                                 : 365LL * 24 * 3600 * kNsPerSec;
  WaitUntil([] { return g_interrupted.load(); }, Deadline::After(std::max<Nanos>(hold, 0)),
            10 * kNsPerMs);
  Status r = fault.Revert();
  if (!r.ok()) {
    std::fprintf(stderr, "faultline: revert failed; `faultline lab recover` will retry\n");
    return Fail(r);
  }
  std::printf("%s on %s: reverted%s, verified gone\n", spec.kind.c_str(), spec.target.c_str(),
              g_interrupted.load() ? " (interrupted)" : "");
  return g_interrupted.load() ? 130 : kExitOk;
}

int LabExec(const std::string& name, const std::string& host, const std::vector<std::string>& cmd,
            const std::string& timeout) {
  auto l = LocalLab::Open(name);
  if (!l.ok()) return Fail(l.status());
  auto t = ParseDuration(timeout);
  if (!t.ok()) return Fail(Status(t.status()).Prepend("--timeout"));
  if (Status b =
          CheckBounds<Nanos>("--timeout", *t, kNsPerMs, 24 * 3600 * kNsPerSec, Unit::kDuration);
      !b.ok())
    return Fail(b);
  auto rc = (*l)->ExecInteractive(host, cmd, *t);
  if (!rc.ok()) return Fail(rc.status());
  return *rc;
}

}  // namespace

void AddLabCommands(CLI::App& app, int* exit_code) {
  CLI::App* labc = AddCommandGroup(
      app, "lab", "the local lab: hosts and switches as network namespaces on this machine");

  auto* up = labc->add_subcommand("up", "build a lab from a topology file");
  auto topo = std::make_shared<std::string>();
  auto up_name = std::make_shared<std::string>();
  up->add_option("TOPOLOGY", *topo, "topology file, e.g. configs/labs/rail4.yaml")->required();
  up->add_option("--name", *up_name, "lab name (default: the topology's name)");
  up->callback([=] { *exit_code = LabUp(*topo, *up_name); });

  auto* status = labc->add_subcommand("status", "hosts, NICs, links, rates and link state");
  auto st_name = std::make_shared<std::string>();
  status->add_option("NAME", *st_name, "lab name (default: every lab)");
  status->callback([=] { *exit_code = LabStatus(*st_name); });

  auto* down = labc->add_subcommand("down", "remove a lab and everything it made");
  auto down_name = std::make_shared<std::string>();
  down->add_option("NAME", *down_name, "lab name (default: every lab)");
  down->callback([=] { *exit_code = LabDown(*down_name); });

  auto* exec =
      labc->add_subcommand("exec", "run a command inside a lab host: lab exec N HOST -- CMD...");
  auto ex_name = std::make_shared<std::string>();
  auto ex_host = std::make_shared<std::string>();
  auto ex_cmd = std::make_shared<std::vector<std::string>>();
  auto ex_timeout = std::make_shared<std::string>("1h");
  exec->add_option("NAME", *ex_name, "lab name")->required();
  exec->add_option("HOST", *ex_host, "host (h0) or switch (tor1) name")->required();
  exec->add_option("CMD", *ex_cmd, "command and arguments (after --)")->required();
  exec->add_option("--timeout", *ex_timeout, "kill the command after this long (default 1h)");
  exec->callback([=] { *exit_code = LabExec(*ex_name, *ex_host, *ex_cmd, *ex_timeout); });

  auto* recover =
      labc->add_subcommand("recover", "revert every journaled fault whose owner process is dead");
  auto all = std::make_shared<bool>(false);
  recover->add_flag("--include-live", *all, "also revert faults of processes still running");
  recover->callback([=] { *exit_code = LabRecover(*all); });

  auto* inject = labc->add_subcommand("inject", HelpText(R"(
apply a fault, verify it, hold it, revert it, verify the revert (Ctrl-C reverts).
Kinds: nic_port_flap, tor_port_down, link_blackhole, tor_uplink_down, pfc_storm,
packet_loss, bandwidth_throttle, container_kill (see docs/injectors.md))"));
  auto ia = std::make_shared<InjectArgs>();
  inject->add_option("NAME", ia->lab, "lab name")->required();
  inject->add_option("KIND", ia->kind, "injector");
  inject->add_option("--target", ia->target,
                     "topology name: h0, h0.nic1, rail1, tor1.h0, tor0.up0, h0.rank1");
  inject->add_option("--for", ia->hold,
                     "hold time from when the fault is effective (default: until Ctrl-C)");
  inject->add_option("--param", ia->params, "injector parameter key=value (repeatable)");
  inject->add_option("--seed", ia->seed, "seed for schedules with jitter");
  inject->add_option("--file", ia->file, "fault spec YAML instead of KIND/--target/--param");
  inject->add_flag("--dry-run", ia->dry_run,
                   "resolve and print what would be done; change nothing");
  inject->callback([=] { *exit_code = LabInject(*ia); });
}

}  // namespace fl::harness
