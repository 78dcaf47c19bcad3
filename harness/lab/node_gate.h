// The Slurm gate over one node's fault journal (`faultline gate prolog|epilog|health`,
// docs/operations.md "Slurm gate"): whether the node still holds a fault, reverting what a
// finished job left, and the drain or resume that tells Slurm.
//
// Levels are Nagios's (OK 0, WARNING 1, CRITICAL 2). A node holds a fault while its journal
// (injectors/journal.h) has any entry, whoever owns it: the prolog and the health check refuse
// such a node. The epilog reverts (and verifies) the entries whose owner is dead, which is every
// entry a finished job's agent left (Slurm ends a job's processes before its epilog runs); a
// fault it cannot revert, or a corrupt entry, is CRITICAL with a drain reason naming it.
//
// Thread-safety: one gate at a time per journal (as journal_recovery.h).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "injectors/injector.h"
#include "injectors/journal.h"

namespace fl::lab {

enum class GateLevel { kOk = 0, kWarning = 1, kCritical = 2 };

// "OK", "WARNING", "CRITICAL".
const char* GateLevelName(GateLevel level);

struct GateResult {
  GateLevel level = GateLevel::kOk;
  std::string summary;               // one line: what the node is in
  std::vector<std::string> details;  // a line per fault: what was done or is held
  // Set when the node must be drained: "faultline: ..." (at most kMaxDrainReason bytes).
  std::string drain_reason;
};

inline constexpr size_t kMaxDrainReason = 200;

// Every reason this gate sets starts with this, so that `health` resumes only the nodes it
// drained.
inline constexpr const char* kDrainPrefix = "faultline: ";

// Prolog and health check: CRITICAL when the journal holds any fault (or an entry that cannot
// be read), naming each with its kind, target and owner; OK otherwise. Touches nothing.
GateResult CheckNodeHoldsNoFault(const injectors::FaultJournal& journal);

// Epilog: reverts the faults whose owner is dead (include_live: every fault), then reports:
// OK with nothing left or everything reverted (each named), WARNING when a fault of a live
// owner is left to it, CRITICAL when a revert failed or an entry was corrupt.
GateResult RevertLeftFaults(injectors::FaultJournal& journal,
                            const injectors::InjectorRegistry& registry, bool include_live);

// The Nagios-style text: "FAULTLINE LEVEL - summary" then each detail on its own line.
std::string FormatGateResult(const GateResult& result);

// scontrol's arguments (after the program) that drain `node` with `reason`, and that resume it.
std::vector<std::string> DrainArgs(const std::string& node, const std::string& reason);
std::vector<std::string> ResumeArgs(const std::string& node);

// From `scontrol show node NODE` (one record, "Key=Value" words, Reason to the end of its
// line): whether the node is drained or draining with a reason this gate set.
bool DrainedByGate(const std::string& scontrol_show_node);

}  // namespace fl::lab
