#include "harness/control/clock_sync.h"

namespace fl::harness {

ClockOffset EstimateClockOffset(const std::vector<ClockProbeSample>& samples) {
  ClockOffset best;
  Nanos best_rtt = INT64_MAX;
  for (const auto& s : samples) {
    Nanos rtt = s.t2_coordinator - s.t0_coordinator;
    if (rtt < 0) continue;  // coordinator clock stepped during the probe: unusable
    if (rtt < best_rtt) {
      best_rtt = rtt;
      best.offset_ns = s.t1_agent - (s.t0_coordinator + rtt / 2);
      best.uncertainty_ns = (rtt + 1) / 2;
    }
  }
  best.probes = static_cast<int>(samples.size());
  return best;
}

StatusOr<ClockOffset> MeasureClockOffset(const std::string& agent, int probes, Deadline deadline,
                                         const ClockProbe& probe) {
  std::vector<ClockProbeSample> samples;
  for (int i = 0; i < probes && !deadline.Expired(); ++i) {
    StatusOr<std::optional<ClockProbeSample>> sample = probe(deadline);
    if (!sample.ok()) return std::move(sample).TakeStatus();  // as the transport said it
    if (!*sample) break;                                      // unanswered by the deadline
    samples.push_back(**sample);
  }
  if (samples.empty())
    return DeadlineExceededError("no clock probe to " + agent + " was answered in time");
  return EstimateClockOffset(samples);
}

}  // namespace fl::harness
