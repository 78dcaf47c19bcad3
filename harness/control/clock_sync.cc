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

}  // namespace fl::harness
