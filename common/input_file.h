// Reading a file that comes from outside the process: a scenario, a topology, an inventory, a
// suite, a policy, a switch preset, a journal entry, a lab's state, a certificate or key, a
// token, a job's output. One way for all of them (issue 29):
//   - regular files only: a FIFO, character or block device, socket or directory is refused
//     before anything is read (opened non-blocking, so a FIFO with no writer does not hang);
//   - a size cap per kind (InputCap), so /dev/zero-like endless input cannot be passed off as
//     a regular file either (a file that grows past the cap while read is refused too).
// Refusals are InvalidArgument (the CLIs' exit 2) and name the path and the kind. Files of the
// kernel's own (procfs, sysfs, cgroupfs) are read with ReadFile (common/file_util.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace fl {

enum class InputKind {
  kScenario,      // configs/scenarios/*.yaml, fault spec files
  kTopology,      // lab topologies
  kLabFile,       // what --lab names: a topology, an inventory or a Slurm lab file
  kInventory,     // inventories of real hosts and switches
  kSuite,         // suite files
  kPolicy,        // agent policies
  kSwitchPreset,  // switch CLI presets
  kJournal,       // one fault journal entry
  kLabState,      // a lab's recorded state (ours, but a user can point at one)
  kCertificate,   // PEM certificates and keys, OpenSSH public keys
  kToken,         // shared tokens (the agents', the TCP store's)
  kJobOutput,     // a job's captured stdout or stderr
  kSpool,         // the results writer's spool (reports/store/spool.h)
  kFailureRates,  // `faultline project --failure-rates` (reports/analysis/failure_rates.h)
  kAlerts,        // `faultline score --alerts`: detectors' alerts (reports/analysis/alerts.h)
  kAlertRules,    // `faultline score --rules`: a Prometheus rules file
  kSweep,         // sweep files (configs/sweeps/*.yaml, harness/suite/sweep_plan.h)
};

// The largest file of each kind that is read, in bytes (docs/scenarios.md, "Files faultline
// reads", lists them).
size_t InputCap(InputKind kind);
// "scenario", "topology", ...: how errors name the kind.
std::string_view InputKindName(InputKind kind);

StatusOr<std::string> ReadInputFile(const std::string& path, InputKind kind);

}  // namespace fl
