// The agent's local policy and the decisions made from it: what an agent accepts from the
// coordinator, for how long it holds a fault, how long a lease it keeps. These are pure
// functions of (policy, what the agent serves, the command): the runtime (agent_runtime.cc)
// does what they decide, and tests check them without processes or a clock.
//
// The coordinator cannot widen the policy: a command outside it is refused (FailedPrecondition
// for what the policy forbids, InvalidArgument for a malformed command), and what the
// coordinator asks for in time is capped, never extended:
//   - lease: at most max_lease (default 30 s); a longer one is cut to the cap (not refused:
//     the run goes on, the agent just reverts sooner when the coordinator goes silent);
//   - fault hold: every applied fault has an agent-side deadline, its declared duration
//     (plus a short grace, so that the coordinator's own revert normally comes first), capped
//     by max_fault_duration; a fault declared longer (or "until the end", 0) is applied and
//     reverted by the agent itself at the cap. Instantaneous kinds (container_kill) have none.
//   - targets: target_prefixes match whole dot-separated components ("h1" matches "h1" and
//     "h1.nic0", never "h10.nic0").
//   - default-deny: an agent that serves anything but a local lab (real hosts)
//     refuses every fault unless its policy file names the kinds it allows.
//   - switch ports: a fault resolved to ports of a real switch (Port::sw) is refused unless
//     each port is in switch_ports ("leaf1": every port of leaf1; "leaf1:Ethernet12": that
//     one). A policy without switch_ports refuses every switch port, except on a disposable
//     site (a local lab's switches), where it may touch them all.
//   - launches: ranks per command, world size, worker arguments (count, length, --size,
//     --store-dir) are bounded; the arguments the agent sets itself cannot be given.
//   - command jobs: the program (the first argument after "--") must be under
//     allow_commands; without it only a disposable site runs commands. Environment given with
//     --env may not name the dynamic loader's variables (LD_*) on real hosts.
//
// Thread-safety: values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harness/proto/faultline.pb.h"
#include "injectors/fabric.h"

namespace fl::harness {

struct AgentPolicy {
  std::string source;                        // the policy file; empty: the built-in default
  std::vector<std::string> allow_kinds;      // empty: every kind (a local lab's agent only)
  std::vector<std::string> target_prefixes;  // empty: every target; whole components
  Nanos max_fault_duration_ns = 0;           // 0: no cap beyond the declared duration
  Nanos max_lease_ns = 30 * kNsPerSec;       // the longest lease this agent keeps
  bool allow_ranks = true;                   // may start ranks
  int max_ranks = 64;                        // ranks one LaunchRanks may start here
  int max_world_size = 4096;
  uint64_t max_rank_bytes = 16ull << 30;  // the worker's --size
  std::vector<std::string> worker_dirs;   // where --store-dir may point; empty: see below
  // Switch ports faults may act on: "leaf1" (all of leaf1's) or "leaf1:Ethernet12". Empty:
  // none (a disposable site: all).
  std::vector<std::string> switch_ports;
  // Command jobs (a command as the job under test, after "--" in the worker arguments): the
  // programs this agent may start, absolute paths or directory prefixes ("/usr/bin/python3",
  // "/opt/nccl-tests/build/"). Empty: none, except on a disposable site (a local lab's own
  // agents), where any absolute path may run.
  std::vector<std::string> allow_commands;
};

// Bounds on the policy file's own numbers.
inline constexpr Nanos kMinLeaseNs = 100 * kNsPerMs;
inline constexpr Nanos kMaxLeaseCapNs = 300 * kNsPerSec;
inline constexpr Nanos kMaxFaultDurationCapNs = 7 * 24 * 3600 * kNsPerSec;
// How long after its declared duration the agent reverts a fault the coordinator did not.
inline constexpr Nanos kFaultDeadlineGraceNs = kNsPerSec;

// Errors are InvalidArgument with file:line:col.
StatusOr<AgentPolicy> LoadAgentPolicy(const std::string& path);
StatusOr<AgentPolicy> ParseAgentPolicy(std::string_view text, const std::string& name);

// True when prefix names target or one of its ancestors, by whole '.'-separated components.
bool TargetMatchesPrefix(std::string_view target, std::string_view prefix);

// The lease the agent keeps when the coordinator asks for `requested` (0: `fallback`): within
// [kMinLeaseNs, max_lease] (AgentPolicy::max_lease_ns). A longer one is cut, not refused.
Nanos EffectiveLease(Nanos max_lease, Nanos requested, Nanos fallback);

struct InjectDecision {
  Status status;        // not ok: refuse with this
  Nanos hold_ns = 0;    // the agent reverts this long after applying; 0: no agent deadline
  bool capped = false;  // the policy cut the declared duration (or "until the end")
};
// disposable_site: the agent serves a site made for the harness (Site::disposable(): a local
// lab's namespaces) rather than real hosts. host: for messages.
InjectDecision DecideInject(const AgentPolicy& policy, bool disposable_site,
                            const std::string& host, const faultline::v1::InjectFault& fault);

// Whether every switch port among `ports` (those with Port::sw set; kernel ports pass) is in
// policy.switch_ports: FailedPrecondition naming the first one that is not. The runtime calls
// it on a fault's resolved ports before anything is journaled or applied (skipped on a
// disposable site whose policy names no switch_ports).
Status CheckSwitchPorts(const AgentPolicy& policy, const std::vector<injectors::Port>& ports);

// Faults sent ahead (InjectFault.due_agent_wall_ns, agent clock). A due time at most
// kFireAtOnceNs ahead (or past) is fired at once, as an immediate inject; one more than
// kMaxAheadNs ahead is refused (InvalidArgument): a prepared fault holds its journal entry
// and its objects until it fires.
inline constexpr Nanos kFireAtOnceNs = kNsPerMs;
inline constexpr Nanos kMaxAheadNs = 60 * kNsPerSec;
enum class AheadMode { kNow, kAhead, kTooFar };
AheadMode ClassifyDue(Nanos now_wall, Nanos due_wall);

// The fire thread's next step for the earliest prepared fault: while more than margin is
// left it waits on its condition variable (cancellable: a revert, the lease, a new earlier
// fault) for wait_ns; then it sleeps exactly to the due time (clock_nanosleep TIMER_ABSTIME
// on CLOCK_REALTIME) and fires.
struct FireStep {
  bool fire = false;  // sleep to the due time and fire
  Nanos wait_ns = 0;  // otherwise: wait this long, then look again
};
inline constexpr Nanos kFireMarginNs = 3 * kNsPerMs;
FireStep NextFireStep(Nanos now_wall, Nanos due_wall, Nanos margin = kFireMarginNs);

// Checks a LaunchRanks and its decoded worker arguments. store_dirs: where --store-dir may
// point when the policy names no worker_dirs (the agent's state dir, the site's
// rendezvous dir).
// disposable_site: the agent serves a local lab's namespaces (commands allowed by default).
Status CheckLaunch(const AgentPolicy& policy, const faultline::v1::LaunchRanks& launch,
                   const std::vector<std::string>& worker_args,
                   const std::vector<std::string>& store_dirs, bool disposable_site = false);

}  // namespace fl::harness
