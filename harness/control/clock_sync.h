// Clock offset between the coordinator and an agent, measured NTP-style at registration:
// the coordinator sends its wall time t0, the agent answers with its wall time t1, the reply
// arrives at t2. offset = t1 - (t0 + t2) / 2 (agent minus coordinator), uncertainty = half
// the round trip. Of several probes the one with the shortest round trip wins. Agent
// timestamps are moved onto the coordinator's clock with ToCoordinator().
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

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

// One probe of the agent's clock, made by the caller's transport: sends the coordinator's wall
// time t0 and waits, until the deadline, for the agent's t1; t2 on arrival. nullopt: no answer
// by the deadline; an error: the probe could not be sent (the agent is gone).
using ClockProbe = std::function<StatusOr<std::optional<ClockProbeSample>>(Deadline deadline)>;

// Probes the clock of `agent` (its name in messages) up to `probes` times, one after the other,
// until the deadline, and estimates the offset from the answered ones. A probe's error ends the
// measurement with it; none answered by the deadline is DeadlineExceeded.
// Blocking: until the deadline at most (each probe is given the deadline).
StatusOr<ClockOffset> MeasureClockOffset(const std::string& agent, int probes, Deadline deadline,
                                         const ClockProbe& probe);

}  // namespace fl::harness
