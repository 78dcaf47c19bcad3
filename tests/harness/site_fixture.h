// A reusable fixture for the integration tests in which "real hosts" are the namespaces of a
// local lab: InventoryFixture builds and provisions a LocalLab, writes what an operator puts on
// real machines (token, the lab's TLS certificates, an agent policy, an inventory file that
// knows the hosts only by NIC interface names and addresses), starts each host's
// faultline-agent in the host's namespace as its systemd unit would (supervised: restarted
// whenever it exits, like Restart=always), and takes snapshots of what faults could leave
// behind (nft tables, qdisc trees, ingress filters, link state, cgroups, journal entries, our
// processes) so that a test can say "nothing left behind" with Diff(before, after).
// PfcCapture counts 802.1Qbb frames on the far (switch) side of a host link.
//
// Root only (namespaces, nft, tc, cgroups). Every wait is bounded. Ownership: the fixture owns
// its lab, its directory and its agents; the destructor stops the agents (SIGTERM, then
// SIGKILL after stop_grace), tears the lab down and removes the directory, also when the test
// failed. Processes are ended by pid only.
//
// Thread-safety: the agent calls (StartAgent, KillAgent, agent_pid ...) may be made from any
// thread; the supervisor is one thread of this process. Snapshot and the accessors are const
// and safe concurrently.
//
// Use (CMake: DEPS fl_site_fixture, add_dependencies(<test> faultline-agent)):
//   auto fx = InventoryFixture::Create({.hosts = 2, .ranks_per_host = 2, .nics_per_host = 2});
//   const HostSnapshot before = (*fx)->Snapshot();
//   REQUIRE((*fx)->StartAgents().ok());      // they dial (*fx)->listen() until it answers
//   Faultline f({"run", scenario, "--lab", (*fx)->inventory_path(), ...}, dir);
//   REQUIRE((*fx)->KillAgent("h1", SIGKILL).ok());   // restarted after restart_delay
//   ...
//   (*fx)->StopAgents().IgnoreError();
//   CHECK(Diff(before, (*fx)->Snapshot()).empty());
// The agent gets the project's clean environment (common/process.h) plus its host's
// FAULTLINE_STATE_DIR; its stderr (where it logs) goes to DIR/hosts/<host>/agent.<n>.log.
//
// No Asio or gRPC here (nor in site_fixture.cc): tests that include this stay quick to build.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::lab {
class LocalLab;
}
namespace fl::injectors {
class PfcCapture;
}

namespace fl::testing {

// The kinds an inventory host's agent is allowed by the fixture's policy: every fault that can
// be made from a host.
std::vector<std::string> HostSideFaultKinds();

struct InventoryFixtureOptions {
  int hosts = 2;
  int ranks_per_host = 2;  // G: the topology's gpus_per_host, the inventory's ranks
  int nics_per_host = 2;   // K
  std::string link = "{rate: 1gbit, burst: 256KiB, mtu: 1500}";  // the topology's link:
  bool slurm_launcher = false;  // emit `launcher: slurm` in the inventory
  std::vector<std::string> allow_kinds = HostSideFaultKinds();
  std::string max_fault_duration = "1m";
  std::string agent_wait = "60s";
  // Raw YAML appended to the inventory's top level ("rendezvous: ...\n"), and to every NIC's
  // flow map (", touch: true"), for keys the tests of a later change need.
  std::string extra_inventory_yaml;
  std::string extra_nic_yaml;
  std::string extra_topology_yaml;  // e.g. "hosts_per_tor: 1\nspines: 1\n"
  // Real switches: the lab's switches run sshd (switch_control: ssh) and the inventory lists
  // them (the SONiC preset, the lab's key and known_hosts), every NIC wired to its ToR port
  // and every uplink; a fabric agent ("fabric", in the root namespace, which reaches the
  // management network) is supervised beside the hosts' with its own policy
  // (fabric_allow_kinds, every switch in switch_ports).
  bool switches = false;
  std::vector<std::string> fabric_allow_kinds = {"tor_port_down", "tor_uplink_down",
                                                 "link_blackhole"};
  // The agent.
  std::string agent_binary;  // default: FL_BUILD_DIR/bin/faultline-agent
  // Further flags of a host's agent, e.g. {"--lldp-socket", DIR + "/h0.lldpd"}.
  std::function<std::vector<std::pair<std::string, std::string>>(const std::string& host)>
      extra_agent_flags;
  // Further environment of a host's agent at each start ("NAME=value"), e.g. libfaketime's.
  std::function<std::vector<std::string>(const std::string& host)> extra_agent_env;
  double connect_timeout_s = 60;
  Nanos restart_delay = 100 * kNsPerMs;  // systemd's RestartSec default
  Nanos stop_grace = 10 * kNsPerSec;     // SIGTERM, then SIGKILL (TimeoutStopSec)
  // Each host its own FAULTLINE_STATE_DIR (DIR/hosts/<host>/state), as on real machines.
  bool separate_state_dirs = true;
};

// One end of a link: a namespace and an interface in it.
struct LinkEnd {
  std::string netns;
  std::string ifname;
};

// What Snapshot reads. Each part is also flattened into "facts", one line each, which Diff
// compares; the lines are what a failing test prints.
struct QdiscState {
  std::string kind, handle, parent;  // parent: "root", "ingress", "clsact" or "8001:1"
  std::string options;               // tc's JSON of the options, "" when none
};
struct LinkState {
  std::string ifname;
  bool admin_up = false;
  bool carrier = false;
  std::vector<QdiscState> qdiscs;    // the whole tree, ingress/clsact included
  std::vector<std::string> filters;  // "ingress: <json>" / "egress: <json>"
};
struct NodeState {
  std::string node;  // "h0", "tor0"
  std::string netns;
  std::vector<std::string> nft_tables;  // "inet faultline_bh_x"
  std::vector<LinkState> links;         // every interface but lo
  std::vector<std::string> journal;     // entry files in the host's journal dir
};
struct HostSnapshot {
  std::vector<NodeState> nodes;        // the lab's hosts, then its switches
  std::vector<std::string> cgroups;    // relative to <cgroup2>/faultline, ours only
  std::vector<std::string> processes;  // "faultline-agent pid 123 (our descendant)" ...
  std::vector<std::string> errors;     // what could not be read (a diff by itself)

  // One line per fact, sorted. Qdiscs are named by their place in the tree ("tbf at root",
  // "fq_codel at root/3"); exact_handles adds the kernel's handles.
  std::vector<std::string> Facts(bool exact_handles = false) const;
};

struct DiffOptions {
  // By default a qdisc tree rebuilt with new handles is no difference; with this it is.
  bool exact_handles = false;
  // A fact whose JSON differs only in numbers, each by at most this fraction, is no difference
  // (0: exact). tc does not give back the numbers it was given: a tbf re-created from what it
  // reported reads burst 262000 instead of 262125, latency 50001 instead of 50000 us.
  double tolerance = 0;
};

// The facts of after that are not in before ("+ ...") and those of before that are gone
// ("- ..."); empty when nothing changed. Read errors of after are reported too ("! ...").
std::vector<std::string> Diff(const HostSnapshot& before, const HostSnapshot& after,
                              DiffOptions options = {});

// What of the lab called name is still on this machine after its fixture is gone: its
// namespaces, cgroups naming it under <cgroup2>/faultline, processes in those (or faultline
// programs whose command line names a file under dir, the fixture's old dir()), its state file.
std::vector<std::string> RemainsOf(const std::string& name, const std::string& dir = "");

// The diff as one string for INFO/FAIL, one line each.
std::string FormatDiff(const std::vector<std::string>& diff);

// The argv of ExecStart= in a systemd unit (line continuations joined, simple quotes, the
// prefixes - @ + ! removed). NotFound when there is none.
StatusOr<std::vector<std::string>> UnitExecStart(std::string_view unit_text);
// The unit's command with the flags in `values` set to the given values (replaced where the
// unit has them, "--flag=v" or "--flag v", appended otherwise), argv[0] replaced by binary.
// Flags the unit gives a value that is the site's (with $ or %, or an absolute path: its
// /etc/faultline/...) are dropped; other values (numbers) and flags without a value (--no-tls)
// are kept as they are.
std::vector<std::string> UnitCommandWith(
    const std::vector<std::string>& exec_start, const std::string& binary,
    const std::vector<std::pair<std::string, std::string>>& values);

// The inventory file the fixture writes (hosts in order, each NIC as {ifname, address}; a NIC's
// target name is its ifname). Pure, for the fixture and its unit test.
struct InventoryHostNics {
  std::string host;
  std::vector<std::pair<std::string, std::string>> nics;
  // Per NIC (same order), its switch and port ("tor0", "Ethernet4"); empty: not wired.
  std::vector<std::pair<std::string, std::string>> wiring = {};
};
// fabric_yaml: the `switches:` and `uplinks:` sections (switches only), appended as they are.
std::string InventoryYaml(const InventoryFixtureOptions& options, const std::string& name,
                          const std::string& listen, const std::string& token_file,
                          const std::vector<InventoryHostNics>& hosts,
                          const std::string& fabric_yaml = "");

class InventoryFixture {
 public:
  // Builds, provisions and writes everything; a failure tears down what was made.
  static StatusOr<std::unique_ptr<InventoryFixture>> Create(InventoryFixtureOptions options = {});
  ~InventoryFixture();
  InventoryFixture(const InventoryFixture&) = delete;
  InventoryFixture& operator=(const InventoryFixture&) = delete;

  const InventoryFixtureOptions& options() const { return opts_; }
  const std::string& dir() const { return dir_; }
  const std::string& name() const { return name_; }  // the lab's and the inventory's name
  const std::string& inventory_path() const { return inventory_path_; }
  const std::string& token_path() const { return token_path_; }
  std::string tls_dir() const { return dir_ + "/tls"; }
  const std::string& policy_path() const { return policy_path_; }
  lab::LocalLab& lab() const { return *lab_; }
  const std::vector<std::string>& hosts() const { return hosts_; }
  std::string netns_of(const std::string& host) const;
  const std::string& mgmt_addr() const { return mgmt_addr_; }  // the root's, no prefix
  int port() const { return port_; }
  std::string listen() const { return mgmt_addr_ + ":" + std::to_string(port_); }
  // The NIC ifnames of a host, in rail order, and the address of one.
  std::vector<std::string> nics_of(const std::string& host) const;
  std::string address_of(const std::string& host, const std::string& ifname) const;
  // The switch side (ToR port) of a host NIC's link: where its frames arrive.
  StatusOr<LinkEnd> SwitchSideOf(const std::string& host, const std::string& ifname) const;
  std::string journal_dir(const std::string& host) const;
  std::string state_dir(const std::string& host) const;  // FAULTLINE_STATE_DIR of its agent

  // The agent's command line (from configs/systemd's unit when there is one). host "fabric":
  // the fabric agent (options().switches).
  std::vector<std::string> AgentArgv(const std::string& host) const;
  // options().switches: the fabric agent's policy; the SONiC port name of a switch port.
  const std::string& fabric_policy_path() const { return fabric_policy_path_; }
  std::string SwitchPortOf(const std::string& node, const std::string& ifname) const;
  // Starts host's agent under supervision. FailedPrecondition when it is already supervised.
  Status StartAgent(const std::string& host);
  Status StartAgents();  // every host's, and the fabric agent with options().switches
  // Sends sig to the current instance (it is restarted when it exits). FailedPrecondition
  // when none is running.
  Status KillAgent(const std::string& host, int sig);
  // The current instance (-1 between instances or when not supervised), how many times it was
  // restarted, the exit codes of past instances (negative: the signal), their log files.
  pid_t agent_pid(const std::string& host) const;
  int agent_restarts(const std::string& host) const;
  std::vector<int> agent_exits(const std::string& host) const;
  std::vector<std::string> agent_logs(const std::string& host) const;
  std::string AgentLogText(const std::string& host) const;  // every log, for INFO
  // Ends host's running agent (SIGTERM; waits for one to run first) and waits until the next
  // instance runs: that one starts after this call (a file written before it is seen).
  Status RestartAgent(const std::string& host, Deadline deadline);
  // Waits until host's agent was restarted at least n times and runs.
  bool WaitAgentRestarts(const std::string& host, int n, Deadline deadline) const;
  // Ends supervision and every agent: SIGTERM, SIGKILL after stop_grace. DeadlineExceeded
  // naming the hosts whose agent needed SIGKILL.
  Status StopAgents();

  // What the lab's namespaces hold now (see HostSnapshot).
  HostSnapshot Snapshot() const;

 private:
  struct Agent {
    std::string host;
    pid_t pid = -1;
    int starts = 0;
    Nanos restart_at = 0;  // monotonic time of the next start while pid == -1
    std::vector<int> exits;
    std::vector<std::string> logs;
  };
  explicit InventoryFixture(InventoryFixtureOptions o);
  Status Build();
  Status WriteFiles();
  StatusOr<std::string> WriteFabricFiles();
  Status StartInstance(Agent* a);  // REQUIRES: mu_ held
  void Supervise();
  const Agent* FindAgent(const std::string& host) const;  // REQUIRES: mu_ held

  InventoryFixtureOptions opts_;
  std::string dir_, name_, inventory_path_, token_path_, policy_path_, mgmt_addr_;
  std::string fabric_policy_path_;
  int port_ = -1;
  std::vector<std::string> hosts_;
  std::unique_ptr<lab::LocalLab> lab_;
  bool provisioned_ = false;

  mutable std::mutex mu_;
  std::map<std::string, Agent> agents_;
  std::atomic<bool> stop_{false};
  std::thread supervisor_;
};

// Counts IEEE 802.1Qbb PFC frames (EtherType 0x8808, opcode 0x0101) arriving on an interface
// while it runs, on a thread of its own; built on injectors::PfcCapture (its socket and parser).
class PfcCapture {
 public:
  static StatusOr<std::unique_ptr<PfcCapture>> Start(const std::string& netns,
                                                     const std::string& ifname);
  ~PfcCapture();
  PfcCapture(const PfcCapture&) = delete;
  PfcCapture& operator=(const PfcCapture&) = delete;
  void Stop();  // idempotent; count() stays readable
  uint64_t count() const { return count_.load(); }
  // The class-enable vector of the last frame (0 before any).
  uint16_t last_class_enable() const { return last_class_enable_.load(); }
  bool WaitCount(uint64_t n, Deadline deadline) const;

 private:
  PfcCapture();
  std::unique_ptr<injectors::PfcCapture> capture_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint16_t> last_class_enable_{0};
  std::thread thread_;
};

}  // namespace fl::testing
