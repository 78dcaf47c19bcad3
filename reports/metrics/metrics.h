// Resilience metrics of one run, computed from its samples (per rank per iteration), events
// (CCL events such as fault_detected) and faults (injection and revert times). Every
// definition — inputs, formula, unit, edge cases — is in docs/metrics.md; this code does
// exactly what that page says, and the page's section names appear next to the code.
//
// Pure computation on plain structs: no SQLite, no clocks, no I/O, so it is unit-tested on
// synthetic traces with hand-computed answers (tests/reports/metrics_test.cc).
//
// Thread-safety: stateless functions; inputs are read only.
// Blocking: none. Cost: O(samples log samples).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/event_kinds.h"
#include "common/status.h"
#include "reports/metrics/expect.h"
#include "reports/store/records.h"

namespace fl::reports {

// Event kinds the metrics read (EventRecord::kind).
// (common/event_kinds.h holds every event name and who emits it.)
inline constexpr std::string_view kEventFaultDetected = events::kFaultDetected;
inline constexpr std::string_view kEventFailoverDone = events::kFailoverDone;
inline constexpr std::string_view kEventPathRestored = events::kPathRestored;
// The coordinator relaunched a failed (fail-stop) job.
inline constexpr std::string_view kEventJobRestarted = events::kJobRestarted;

struct AnalysisInput {
  std::string run_id;
  std::vector<SampleRecord> samples;
  std::vector<EventRecord> events;
  std::vector<FaultRecord> faults;
  // Ranks in the job; 0: the number of distinct ranks in samples.
  int num_ranks = 0;
  // Iterations each rank should have run (0..N-1); unset: up to the highest one reported.
  std::optional<int64_t> expected_iterations;
  // When collection stopped (the job ended or was given up on); unset: the latest sample end
  // or event time.
  std::optional<Nanos> run_end_ns;
  // The job failed: a rank exited with an error or the CCL returned one (and why).
  bool job_failed = false;
  std::string job_failure;
};

struct AnalysisOptions {
  int64_t warmup_iterations = 0;  // iterations with a lower index are not in the baseline
  int window = 5;                 // W: iterations in a recovery / failback window
  double tolerance = 0.10;        // "within 10%"
  Nanos hang_timeout = 30 * kNsPerSec;
  int gpus_per_rank = 1;
  // A black-box job (a command job, docs/scenarios.md): what it does not tell is absent, not
  // zero. Detection without a fault_detected event (the job's own error line) is the first
  // abnormal gap: the moment after the fault at which no iteration has completed for
  // gap_factor times the baseline's median iteration period; correctness (mismatches) is
  // absent when nothing was verified.
  bool black_box = false;
  double gap_factor = 3.0;
};

struct FaultMetrics {
  std::string fault_id;
  bool applied = false;   // the fault has an effective (or at least requested) time
  Nanos injected_ns = 0;  // T: effective time, else requested time
  std::optional<Nanos> reverted_ns;
  Nanos interval_end_ns = 0;  // E: next fault's T, else run end
  std::optional<double> injection_error_ms;
  std::optional<double> detection_latency_ms;
  std::string detection_source;  // "event" (fault_detected), "gap" (black box), "" (none)
  // The job's progress stalled (a gap of more than gap_factor baseline periods between
  // completions, from T): what a progress watchdog would see, for every job.
  std::optional<double> stall_ms;
  std::optional<double> failover_ms;
  std::optional<double> time_to_first_progress_ms;
  int64_t fault_iterations = 0;          // |F|
  std::optional<double> degraded_algbw;  // D, B/s
  std::optional<double> degraded_ratio;
  std::optional<double> recovery_ms;
  std::optional<double> failback_ms;
  std::optional<double> path_restored_ms;
  std::optional<double> restart_cost_ms;  // fail-stop jobs relaunched by the coordinator
  std::optional<double> throughput_loss_s;
  std::optional<double> throughput_loss_gpu_s;
};

struct Correctness {
  int64_t verified_collectives = 0;
  int64_t mismatches = 0;
  int64_t lost_iterations = 0;
  int64_t duplicated_iterations = 0;
  int64_t complete_iterations = 0;
};

enum class OutcomeKind { kSurvived = 0, kFailed = 1, kHung = 2 };
std::string_view OutcomeName(OutcomeKind kind);  // "survived", "failed", "hung"

struct StuckRank {
  int32_t rank = 0;
  std::optional<int64_t> last_iteration;  // last iteration it completed (none: never)
  Nanos idle_ns = 0;                      // run end minus its last completion

  bool operator==(const StuckRank&) const = default;
};

struct Outcome {
  OutcomeKind kind = OutcomeKind::kSurvived;
  std::vector<StuckRank> stuck_ranks;
  Nanos hang_timeout_ns = 0;
  std::string reason;  // for people: "rank 1 made no progress for 49.0s after iteration 9"
};

struct RunMetrics {
  std::string run_id;
  int num_ranks = 0;
  Nanos run_end_ns = 0;
  int64_t baseline_iterations = 0;
  std::optional<double> baseline_algbw;     // B, B/s
  std::optional<double> baseline_progress;  // Bp, B/s
  std::vector<FaultMetrics> faults;         // in injection order
  Correctness correctness;
  bool correctness_measured = true;  // false: a black box verified nothing (mismatches absent)
  // What a black box could not tell, for the report ("correctness: ...").
  std::vector<std::string> absent_notes;
  Outcome outcome;

  // The rows stored in the metrics table (names and units as in docs/metrics.md).
  std::vector<MetricRecord> ToRecords() const;
};

// Overlapping faults (docs/metrics.md): whether fault m is nested in fault k, i.e. m's anchor
// chain (anchor_of: a fault's id -> the id of the fault it was timed against) leads to k. A
// cycle (not from a loaded scenario) is nested in nothing.
bool NestedIn(const std::map<std::string, std::string>& anchor_of, const std::string& m,
              const std::string& k);

// InvalidArgument for options out of range (window < 1, tolerance outside [0,1),
// hang_timeout <= 0, gpus_per_rank < 1) or a sample that ends before it starts.
[[nodiscard]] StatusOr<RunMetrics> ComputeMetrics(const AnalysisInput& input,
                                                  const AnalysisOptions& options);

// ---- expectations -> verdicts (docs/metrics.md, "Expectations and verdicts") ----
// Expectations itself is in expect.h.

// One verdict per set expectation: run-level ones (survives, exact_correctness) once, per-fault
// ones once per fault of the run (in injection order). A metric that could not be computed
// fails its expectation, with observed unset and the reason in the message.
std::vector<VerdictRecord> EvaluateExpectations(const RunMetrics& metrics,
                                                const Expectations& expectations);

}  // namespace fl::reports
