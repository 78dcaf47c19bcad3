// The run's row in the store as it starts: what ran (scenario and lab text, seed, build
// revision), who runs it (the coordinator's pid and host: how a dead coordinator's run is told
// apart, cleanup.h) and its tags (the CCL, its options and the ranks' environment, replay_of,
// a CI system's commit and pipeline, the cluster).
#pragma once

#include <string>

#include "common/status.h"
#include "harness/run/run_context.h"
#include "reports/store/records.h"
#include "reports/store/store.h"

namespace fl::harness::run {

// Who runs a coordinator, for telling a dead coordinator's run from a live one: the host name
// and the start of /etc/machine-id, so that two clusters' hosts of one name that share a
// PostgreSQL store never judge each other's pids.
std::string CoordinatorHost();

// The record of a new run of `p` (its id still to be drawn: CreateRun).
reports::RunRecord NewRunRecord(const Prepared& p);

// Draws the run's id and creates its row. An id drawn twice (another coordinator, the same
// second, the same random part) is drawn again, at most 3 times. Returns the run's ids.
StatusOr<RunIds> CreateRun(reports::Store& store, reports::RunRecord rr);

}  // namespace fl::harness::run
