// `faultline doctor`: the preconditions of a run checked before anything is touched
// (docs/operations.md, "faultline doctor"). Each check gives lines at Nagios levels (OK,
// WARNING, CRITICAL: the Slurm gate's, harness/lab/node_gate.h), each with a one-line reason
// and what to do; the exit code is the worst level.
//
// Checked from the coordinator's host, reading files and probing the network it may reach:
//   scenarios  each scenario of the suite (and --scenario) prepared on the lab as a run would:
//              its faults' targets exist there (NIC names, switch ports), its values hold
//   policy     each planned fault allowed by the agents' policy file (--policy: the file the
//              hosts' agents run with), as the agent itself decides (agent_policy.h); without
//              --policy on a lab file, a line says it was not checked
//   certs      every certificate in the lab's TLS folder: expired is CRITICAL, under
//              --cert-warn-days (30) WARNING, with the days left
//   journal    no fault left in this host's fault journal
//   switches   each switch of an inventory reachable over SSH with the host key its
//              known_hosts or pinned key expects: unknown or changed is CRITICAL with the key's
//              fingerprint, and never accepted
//   room       room for results beside a SQLite store
//   host       on a local lab (this host is the lab): cgroup v2, AF_PACKET, network namespaces
//   agents     on an inventory (unless --no-agents): a census of its hosts' agents (census.h;
//              they are sent Shutdown after, and their service starts them again): each one
//              that does not dial in within --agent-wait is CRITICAL; a version other than this
//              coordinator's a WARNING; a clock off by more than --max-clock-offset (500 ms)
//              CRITICAL, by more than a tenth of it a WARNING; an inventory NIC the host does
//              not have CRITICAL; other drift from the inventory (a moved NIC, new firmware, a
//              link down: inventory_discovery.h) a WARNING; what the injectors need that a
//              host lacks (ip, tc, nft, cgroup v2, AF_PACKET) CRITICAL; and each planned fault
//              decided by the policy the agent that would apply it runs with (its Hello
//              carries it), as the policy check does with --policy
// Not checked: faults in the hosts' own journals (each agent reverts them at its start).
//
// Thread-safety: one call at a time. Blocking: bounded by the probes' timeouts.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "harness/lab/node_gate.h"
#include "nlohmann/json.hpp"

namespace fl::harness::suite {

struct DoctorLine {
  lab::GateLevel level = lab::GateLevel::kOk;
  std::string check;    // "scenarios", "policy", "certs", "journal", "switches", "room", "host"
  std::string message;  // one line: what was found
  std::string fix;      // what to do (empty when OK)
};

struct DoctorOptions {
  std::string lab_file;                     // topology or inventory; empty: each scenario's
  std::string suite_file;                   // its scenarios are checked
  std::vector<std::string> scenario_files;  // and these
  std::string policy_file;                  // the agents' policy, for the policy check
  std::string tls_dir;                      // empty: the inventory's (tls/ beside its token)
  std::string journal_dir;                  // empty: $FAULTLINE_STATE_DIR/journal
  std::string db;                           // results store (a SQLite path or a URI)
  int cert_warn_days = 30;
  Nanos probe_timeout = 5 * kNsPerSec;  // per switch
  bool agents = true;                   // the census of an inventory's agents
  Nanos agent_wait = 15 * kNsPerSec;
  Nanos max_clock_offset = 500 * kNsPerMs;
  std::string coordinator_version;  // this build's ("0.1.0 (git ...)"), for the skew check
  Nanos now_wall_ns = 0;            // 0: now
};

std::vector<DoctorLine> RunDoctor(const DoctorOptions& options);

// The worst level among lines (OK when there are none).
lab::GateLevel WorstLevel(const std::vector<DoctorLine>& lines);

// "LEVEL  check: message" per line (and "       fix: ..." under each that is not OK), then
// "faultline doctor: N OK, N WARNING, N CRITICAL".
std::string FormatDoctor(const std::vector<DoctorLine>& lines);
nlohmann::json DoctorJson(const std::vector<DoctorLine>& lines);

}  // namespace fl::harness::suite
