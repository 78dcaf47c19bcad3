// Detectors scored against the faults faultline injected (`faultline score`, docs/detectors.md):
// each alert is matched to the faults whose window holds its start and whose target it names;
// per detector, precision (alerts that matched a fault), recall (faults it alerted on, also
// per fault kind), F1, the detection latency of each detected fault, and false alarms per hour
// of observed run time.
//
// Thread-safety: pure functions. Cost: O(alerts x faults of the runs whose window holds them).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "reports/analysis/alerts.h"

namespace fl::reports::analysis {

// The ground truth: a fault as applied (its effective time) and reverted.
struct TruthFault {
  std::string fault_id;
  std::string kind;
  std::string target;  // "h1.nic0", "leaf0:swp1", ...
  Nanos effective_ns = 0;
  std::optional<Nanos> reverted_ns;  // unset: held until the run ended
};

struct TruthRun {
  std::string run_id;
  Nanos start_ns = 0, end_ns = 0;
  std::vector<TruthFault> faults;  // applied ones only
};

struct ScoreOptions {
  // An alert up to this long after a fault's revert still counts for it: rules wait for
  // their `for:` and scrapes come every interval, so alerts come late.
  Nanos grace_ns = 60 * kNsPerSec;
  // ... and up to this long before its effective time (clocks of two machines, and the time
  // from the fault taking hold to faultline's read-back verifying it).
  Nanos skew_ns = 1 * kNsPerSec;
};

// Whether an alert naming `alert_target` is about `fault_target`: both split at '.', '/' and
// ':' into parts, one a prefix of the other ("h1" and "h1/nic0" match "h1.nic0"; "h1.nic1"
// does not). An empty alert target matches every fault.
bool TargetsMatch(std::string_view alert_target, std::string_view fault_target);

struct KindRecall {
  std::string kind;
  size_t faults = 0, detected = 0;
};

struct DetectorScore {
  std::string name;
  size_t alerts = 0;        // in some run's window
  size_t true_alerts = 0;   // of those, matched to a fault
  size_t false_alarms = 0;  // matched to none
  size_t faults = 0, detected = 0;
  std::optional<double> precision;  // unset with no alert
  double recall = 0, f1 = 0;
  std::vector<double> latencies_s;  // per detected fault: first matching alert - effective
  double latency_median_s = 0, latency_p90_s = 0, latency_max_s = 0;
  double false_alarms_per_hour = 0;
  std::vector<KindRecall> by_kind;  // by fault kind, in name order
};

struct ScoreReport {
  ScoreOptions options;
  size_t runs = 0, faults = 0;
  double observed_hours = 0;             // the runs' time, start to end
  size_t outside = 0;                    // alerts in no run's window: not scored
  std::vector<DetectorScore> detectors;  // by name
};

// `known`: detectors to score even when they never fired (named on the command line or the
// alerting rules of a rules file); every detector that has an alert is scored as well.
ScoreReport ScoreDetectors(const std::vector<TruthRun>& runs, const std::vector<Alert>& alerts,
                           const std::vector<std::string>& known, const ScoreOptions& options);

std::string RenderScoreText(const ScoreReport& r);
std::string ScoreJson(const ScoreReport& r);

}  // namespace fl::reports::analysis
