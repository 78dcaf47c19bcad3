// The one table of event names: every kind of event a run stores (EventRecord::kind), who
// emits it, and what the harness does with it. A CCL's, a worker's, an agent's or the
// coordinator's code names an event through the constants below, never a string of its own;
// docs/metrics.md ("Events") mirrors the table.
//
// Thread-safety: constant data only.
#pragma once

#include <string_view>
#include <vector>

namespace fl::events {

// Who writes the event into the run's telemetry.
enum class Source {
  kCcl,          // the CCL under test, through its event sink (ccl_under_test/api/events.h)
  kWorker,       // faultline-worker or the command runner, on the rank's telemetry socket
  kAgent,        // the agent, beside its ranks
  kLab,          // the lab (the local lab's route monitor)
  kCoordinator,  // the run driver
};

inline constexpr std::string_view kInjected = "injected";
inline constexpr std::string_view kReverted = "reverted";
inline constexpr std::string_view kFaultDetected = "fault_detected";
inline constexpr std::string_view kFailoverDone = "failover_done";
inline constexpr std::string_view kPathRestored = "path_restored";
inline constexpr std::string_view kCollectiveBegin = "collective_begin";
inline constexpr std::string_view kCollectiveEnd = "collective_end";
inline constexpr std::string_view kCommError = "comm_error";
inline constexpr std::string_view kHangDump = "hang_dump";
inline constexpr std::string_view kRelayRoute = "relay_route";
inline constexpr std::string_view kCollectiveFailed = "collective_failed";
inline constexpr std::string_view kRankLost = "rank_lost";
inline constexpr std::string_view kShrunk = "shrunk";
inline constexpr std::string_view kWorkerStart = "worker_start";
inline constexpr std::string_view kWorkerExit = "worker_exit";
inline constexpr std::string_view kCommandStart = "command_start";
inline constexpr std::string_view kCommandExit = "command_exit";
inline constexpr std::string_view kProgressLineBad = "progress_line_bad";
inline constexpr std::string_view kTelemetryDropped = "telemetry_dropped";
inline constexpr std::string_view kRouteChange = "route_change";
inline constexpr std::string_view kJobLaunch = "job_launch";
inline constexpr std::string_view kFirstIteration = "first_iteration";
inline constexpr std::string_view kSteadyState = "steady_state";
inline constexpr std::string_view kWarmupTimeout = "warmup_timeout";
inline constexpr std::string_view kJobFailed = "job_failed";
inline constexpr std::string_view kJobHung = "job_hung";
inline constexpr std::string_view kJobRestarted = "job_restarted";
inline constexpr std::string_view kRestartRefused = "restart_refused";
inline constexpr std::string_view kAgentLost = "agent_lost";
inline constexpr std::string_view kInjectFailed = "inject_failed";
inline constexpr std::string_view kFaultSkipped = "fault_skipped";
inline constexpr std::string_view kBlackBoxNote = "black_box_note";

struct EventKind {
  std::string_view name;
  Source source;
  // A step of a recovery (a rank detected a fault, failed over, got its path back): the
  // metrics' detection and recovery times read these, and the agent flushes its telemetry
  // batch at once when one arrives.
  bool recovery = false;
  // A fault can be anchored to it (scenario `after_event.event`), in the order they happen.
  bool anchor = false;
  std::string_view meaning;
};

// Every event kind, the anchors in the order they happen to a fault.
const std::vector<EventKind>& AllKinds();
// nullptr for a name no one emits.
const EventKind* Find(std::string_view name);
bool IsRecovery(std::string_view name);
// The anchor events' names, in the order they happen to a fault.
std::vector<std::string_view> AnchorNames();

}  // namespace fl::events
