// The NIC counters as the control plane carries them (pb::NicSample) and as the records keep
// them (reports::NicCounters), converted in one place, both ways: the agent fills a sample from
// what it read, the run reads the sample back into a row. One table of fields serves both
// directions, so they cannot disagree (tests/harness/agent/nic_counters_test.cc checks that every
// field of the sample is written).
//
// Thread-safety: pure functions.
#pragma once

#include "harness/proto/faultline.pb.h"
#include "reports/store/records.h"

namespace fl::harness {

// Writes every counter of `c` into `n` (its nic and wall_ns are the caller's).
void SetNicCounters(const reports::NicCounters& c, faultline::v1::NicSample* n);

// The counters of a sample; an unset pause count stays nullopt.
reports::NicCounters NicCountersOf(const faultline::v1::NicSample& n);

}  // namespace fl::harness
