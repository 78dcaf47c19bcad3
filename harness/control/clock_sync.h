// Clock offset between the coordinator and an agent, measured NTP-style at registration:
// the coordinator sends its wall time t0, the agent answers with its wall time t1, the reply
// arrives at t2. offset = t1 - (t0 + t2) / 2 (agent minus coordinator), uncertainty = half
// the round trip. Of several probes the one with the shortest round trip wins. Agent
// timestamps are moved onto the coordinator's clock with ToCoordinator().
#pragma once

#include <vector>

#include "common/clock.h"

namespace fl::harness {

struct ClockProbeSample {
  Nanos t0_coordinator;
  Nanos t1_agent;
  Nanos t2_coordinator;
};

struct ClockOffset {
  Nanos offset_ns = 0;       // agent clock minus coordinator clock
  Nanos uncertainty_ns = 0;  // +/- bound on offset_ns
  int probes = 0;
  Nanos ToCoordinator(Nanos agent_wall_ns) const { return agent_wall_ns - offset_ns; }
};

// REQUIRES: !samples.empty()
ClockOffset EstimateClockOffset(const std::vector<ClockProbeSample>& samples);

}  // namespace fl::harness
