// `faultline inventory discover [--check FILE]`: an inventory from what the hosts' agents say
// of themselves (harness/suite/census.h, harness/lab/inventory_discovery.h), or the drift of
// the live fleet from one (docs/operations.md, "Discover the inventory").
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/build_info.h"
#include "common/file_util.h"
#include "common/process.h"
#include "harness/cli/cli.h"
#include "harness/cli/command.h"
#include "harness/control/auth.h"
#include "harness/control/clear_dial.h"
#include "harness/lab/inventory.h"
#include "harness/lab/inventory_discovery.h"
#include "harness/suite/census.h"

namespace fl::harness {
namespace {

struct DiscoverArgs {
  std::vector<std::string> hosts;
  std::string host_file, slurm_nodes, check;
  std::string listen, token_file, tls_dir;
  bool no_tls = false;
  std::string wait = "60s";
  std::string output;
  lab::DiscoverOptions o;
};

constexpr const char* kCmd = "faultline inventory discover";

int Fail(int code, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", kCmd, what.c_str());
  return code;
}

// Host names from --hosts (comma lists), --host-file (one per line, '#' comments) and
// --slurm-nodes (expanded by `scontrol show hostnames`).
StatusOr<std::vector<std::string>> HostsOf(const DiscoverArgs& a) {
  std::vector<std::string> out;
  auto add = [&](std::string h, const std::string& where) -> Status {
    while (!h.empty() && (h.back() == ' ' || h.back() == '\r')) h.pop_back();
    while (!h.empty() && h.front() == ' ') h.erase(h.begin());
    if (h.empty()) return OkStatus();
    if (!lab::IsHostName(h) || h == "fabric")
      return InvalidArgumentError(where + ": '" + h + "' is not a host name ([a-z0-9_-])");
    if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
    return OkStatus();
  };
  for (const auto& list : a.hosts) {
    std::stringstream in(list);
    for (std::string h; std::getline(in, h, ',');) FL_RETURN_IF_ERROR(add(h, "--hosts"));
  }
  if (!a.host_file.empty()) {
    FL_ASSIGN_OR_RETURN(std::string text, ReadFile(a.host_file));
    std::stringstream in(text);
    int line = 0;
    for (std::string h; std::getline(in, h);) {
      ++line;
      FL_RETURN_IF_ERROR(add(h.substr(0, h.find('#')), a.host_file + ":" + std::to_string(line)));
    }
  }
  if (!a.slurm_nodes.empty()) {
    FL_ASSIGN_OR_RETURN(std::string scontrol, ResolveTool("scontrol"));
    RunOptions ro;
    ro.timeout = 30 * kNsPerSec;
    FL_ASSIGN_OR_RETURN(RunResult r, Run({scontrol, "show", "hostnames", a.slurm_nodes}, ro));
    if (r.exit_code != 0)
      return InvalidArgumentError("--slurm-nodes: scontrol show hostnames " + a.slurm_nodes + ": " +
                                  r.err);
    std::stringstream in(r.out);
    for (std::string h; std::getline(in, h);) FL_RETURN_IF_ERROR(add(h, "--slurm-nodes"));
  }
  return out;
}

int Discover(DiscoverArgs& a) {
  QuietLogsUnlessAsked();
  auto hosts = HostsOf(a);
  if (!hosts.ok()) return Fail(2, hosts.status().ToUserString());
  std::optional<lab::Inventory> inv;
  if (!a.check.empty()) {
    auto loaded = lab::LoadInventory(a.check, {.open_switch_drivers = false});
    if (!loaded.ok()) return Fail(2, loaded.status().ToUserString());
    inv = std::move(*loaded);
    for (const auto& h : inv->hosts)
      if (std::find(hosts->begin(), hosts->end(), h.name) == hosts->end()) hosts->push_back(h.name);
    if (a.listen.empty()) a.listen = inv->listen;
    if (a.token_file.empty()) a.token_file = inv->token_file;
    if (a.o.name.empty()) a.o.name = inv->name;
  }
  if (hosts->empty())
    return Fail(2, "name the hosts: --hosts, --host-file, --slurm-nodes or --check FILE");
  if (a.listen.empty() || a.token_file.empty())
    return Fail(2, "--listen and --token-file are needed (or --check an inventory that has them)");
  auto wait = ParseDurationFlag("--wait", a.wait);
  if (!wait.ok()) return Fail(2, wait.status().ToUserString());
  suite::CensusOptions co;
  co.listen = a.listen;
  co.hosts = *hosts;
  co.wait = *wait;
  auto token = ReadTokenFile(a.token_file);
  if (!token.ok()) return Fail(2, token.status().ToUserString());
  co.token = *token;
  if (!a.no_tls) {
    const std::string dir = a.tls_dir.empty() ? DefaultTlsDir(a.token_file) : a.tls_dir;
    auto tls = LoadTlsMaterial(dir, CertRole::kCoordinator, "");
    if (!tls.ok()) return Fail(2, tls.status().ToUserString() + " (or --no-tls on a lab network)");
    co.tls = std::move(*tls);
  } else if (!IsLocalOrLabAddress(a.listen)) {
    return Fail(2, "--no-tls listens only on loopback or a lab namespace's address (" + a.listen +
                       " is neither): the agents' token would travel in clear");
  }
  auto census = suite::TakeCensus(co);
  if (!census.ok()) return Fail(3, census.status().ToUserString());
  for (const auto& h : census->hosts) {
    if (!h.seen) continue;
    size_t wired = 0;
    for (const auto& n : h.facts.nics) wired += n.lldp_switch.empty() ? 0 : 1;
    std::fprintf(stderr, "[discover] %s: agent %s, %zu interfaces, %zu GPUs, LLDP %s\n",
                 h.host.c_str(), h.facts.agent_version.c_str(), h.facts.nics.size(),
                 h.facts.gpus.size(),
                 h.facts.lldp_read ? (std::to_string(wired) + " neighbours").c_str()
                                   : h.facts.lldp_note.c_str());
  }
  const auto facts = census->SeenFacts();
  if (inv) {
    auto drift = lab::CheckDrift(*inv, facts, a.o.nic_globs);
    for (const auto& d : drift) std::printf("DRIFT %s\n", d.c_str());
    std::printf("%s: %s: %zu hosts checked, %zu differences\n", kCmd, a.check.c_str(),
                inv->hosts.size(), drift.size());
    return drift.empty() ? 0 : 1;
  }
  if (!census->missing.empty()) {
    std::string m;
    for (const auto& h : census->missing) m += (m.empty() ? "" : ", ") + h;
    return Fail(3, "no agent dialled in from " + m + " within " + a.wait +
                       " (is faultline-agent@HOST running there with --coordinator " + a.listen +
                       "?); nothing written");
  }
  if (a.o.name.empty()) a.o.name = "fleet";
  a.o.listen = a.listen;
  a.o.token_file = a.token_file;
  a.o.agent_wait = a.wait;
  a.o.tool_version = VersionLine("faultline");
  auto yaml = lab::InventoryYamlFromFacts(facts, a.o);
  if (!yaml.ok()) return Fail(2, yaml.status().ToUserString());
  // What is written must be what --lab accepts.
  auto parsed = lab::ParseInventory(*yaml, a.output.empty() ? "<discovered>" : a.output,
                                    {.open_switch_drivers = false});
  if (!parsed.ok())
    return Fail(3, "the discovered inventory does not parse (a bug): " +
                       parsed.status().ToUserString() + "\n" + *yaml);
  if (a.output.empty() || a.output == "-") {
    std::fputs(yaml->c_str(), stdout);
  } else {
    if (Status st = WriteFileAtomic(a.output, *yaml); !st.ok()) return Fail(3, st.ToUserString());
    std::fprintf(stderr, "[discover] wrote %s: %zu hosts\n", a.output.c_str(), facts.size());
  }
  return 0;
}

}  // namespace

void AddInventoryCommands(CLI::App& app, int* exit_code) {
  auto* inv = AddCommandGroup(app, "inventory", "the inventory of a lab of real hosts");
  auto a = std::make_shared<DiscoverArgs>();
  auto* c = inv->add_subcommand("discover", HelpText(R"(
write an inventory from what the hosts' agents say of themselves: each host's NICs
(interface, address, driver, firmware, PCI address, NUMA node, speed, MAC, state, RDMA
device and port), GPUs (PCI address, NUMA node) and, from lldpd, the switch and port each
NIC is cabled to. Listens where the agents dial (their --coordinator), takes every named
host's Hello, sends it Shutdown (its service starts it again) and writes an inventory
--lab accepts. With --check FILE: compares the live fleet with that inventory and prints
each difference (a NIC moved to another switch port, firmware changed, a NIC or host
missing, a new one); exit 0 none, 1 drift, 2 bad input, 3 agents or network)"));
  c->add_option("--hosts", a->hosts, "host names, comma separated (repeatable)");
  c->add_option("--host-file", a->host_file, "a file of host names, one per line ('#' comments)")
      ->check(CLI::ExistingFile);
  c->add_option("--slurm-nodes", a->slurm_nodes,
                "a Slurm node list (node[01-16]), expanded with scontrol show hostnames");
  c->add_option("--check", a->check,
                "compare with this inventory (its hosts, listen address and token by default)")
      ->check(CLI::ExistingFile);
  c->add_option("--listen", a->listen, "IP:PORT the agents dial (their --coordinator)");
  c->add_option("--token-file", a->token_file, "the agents' shared token file (0600)");
  c->add_option("--tls-dir", a->tls_dir,
                "the lab's certificates (coord.crt/.key, ca.crt; default tls/ beside the token)");
  c->add_flag("--no-tls", a->no_tls, "plaintext with the token (loopback or a lab network only)");
  c->add_option("--wait", a->wait, "how long to wait for the agents")->capture_default_str();
  c->add_option("--name", a->o.name, "the inventory's name, 1-10 chars [a-z0-9] (default fleet)");
  c->add_option("--nics", a->o.nic_globs,
                "which interfaces are data NICs (glob, repeatable; default: those with an IPv4\n"
                "address but the management one, on PCI when the host has any)");
  c->add_option("--ranks", a->o.ranks, "ranks per host (default: its GPUs, 1 without)");
  c->add_option("-o,--output", a->output, "where to write the inventory (default stdout)");
  RunAfterParse(c, a, exit_code, Discover);
}

}  // namespace fl::harness
