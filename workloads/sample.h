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
  uint64_t iteration = 0;
  Nanos start_wall_ns = 0;
  Nanos end_wall_ns = 0;
  uint64_t bytes = 0;
  bool verified = false;
  bool mismatch = false;
};

}  // namespace fl::workloads
