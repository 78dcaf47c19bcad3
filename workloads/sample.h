// One iteration of a rank, as the worker measures it and the agent relays it (the telemetry
// line's "sample", harness/agent/telemetry_line.h): the same struct on both sides.
//
// Thread-safety: a value.
#pragma once

#include <cstdint>

#include "common/clock.h"

namespace fl::workloads {

struct IterationSample {
  int rank = 0;
  // The job's iteration number (from first_iteration on after a restart).
  uint64_t iteration = 0;
  // When the iteration's collectives started and ended, on the rank's wall clock.
  Nanos start_wall_ns = 0;
  Nanos end_wall_ns = 0;
  // Payload bytes the rank moved in the iteration.
  uint64_t bytes = 0;
  // Checked this iteration (every check_every), and the check found a wrong result.
  bool verified = false;
  bool mismatch = false;
};

}  // namespace fl::workloads
