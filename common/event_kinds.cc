#include "common/event_kinds.h"

namespace fl::events {

const std::vector<EventKind>& AllKinds() {
  using S = Source;
  static const std::vector<EventKind> kKinds = {
      {kInjected, S::kCoordinator, false, true, "a fault took effect (its effective time)"},
      {kFaultDetected, S::kCcl, true, true, "a rank noticed a path or peer failed"},
      {kFailoverDone, S::kCcl, true, true, "a rank moved its traffic off the failed path"},
      {kReverted, S::kCoordinator, false, true, "a fault was undone (its revert's time)"},
      {kPathRestored, S::kCcl, true, true, "a rank took a repaired path back into use"},
      {kCollectiveBegin, S::kCcl, false, false, "a collective started (hang dumps)"},
      {kCollectiveEnd, S::kCcl, false, false, "a collective finished"},
      {kCommError, S::kCcl, false, false, "the CCL returned an error to the workload"},
      {kHangDump, S::kCcl, false, false, "what a rank waited for when it hung"},
      {kRelayRoute, S::kCcl, false, false, "ftccl routed a channel through a relay rank"},
      {kCollectiveFailed, S::kWorker, false, false, "a collective returned an error"},
      {kRankLost, S::kWorker, false, false, "a rank's peer died (fail-stop jobs, shrink)"},
      {kShrunk, S::kWorker, false, false, "the survivors shrank the communicator"},
      {kWorkerStart, S::kWorker, false, false, "faultline-worker started its rank"},
      {kWorkerExit, S::kWorker, false, false, "faultline-worker ended, with its exit code"},
      {kCommandStart, S::kWorker, false, false, "a command job's process started"},
      {kCommandExit, S::kWorker, false, false, "a command job's process ended"},
      {kProgressLineBad, S::kWorker, false, false, "a progress line the parser refused"},
      {kTelemetryDropped, S::kAgent, false, false, "telemetry lost before the store"},
      {kRouteChange, S::kLab, false, false, "a switch's routes changed (routed labs)"},
      {kJobLaunch, S::kCoordinator, false, false, "the job's ranks were started"},
      {kFirstIteration, S::kCoordinator, false, false, "the first iteration was reported"},
      {kSteadyState, S::kCoordinator, false, false, "warm-up ended; faults may start"},
      {kWarmupTimeout, S::kCoordinator, false, false, "warm-up did not end in time"},
      {kJobFailed, S::kCoordinator, false, false, "a rank exited with an error"},
      {kJobHung, S::kCoordinator, false, false, "no progress for the hang timeout"},
      {kJobRestarted, S::kCoordinator, false, false, "a fail-stop job was relaunched"},
      {kRestartRefused, S::kCoordinator, false, false,
       "a fail-stop job was not relaunched: a host's ranks did not stop (reason)"},
      {kAgentLost, S::kCoordinator, false, false, "an agent's lease lapsed or it left"},
      {kInjectFailed, S::kCoordinator, false, false, "an agent refused or failed an inject"},
      {kFaultSkipped, S::kCoordinator, false, false, "a fault was not injected, and why"},
      {kBlackBoxNote, S::kCoordinator, false, false, "what a black-box job did not measure"},
  };
  return kKinds;
}

const EventKind* Find(std::string_view name) {
  for (const auto& k : AllKinds())
    if (k.name == name) return &k;
  return nullptr;
}

bool IsRecovery(std::string_view name) {
  const EventKind* k = Find(name);
  return k != nullptr && k->recovery;
}

std::vector<std::string_view> AnchorNames() {
  std::vector<std::string_view> out;
  for (const auto& k : AllKinds())
    if (k.anchor) out.push_back(k.name);
  return out;
}

}  // namespace fl::events
