// The first phase of a run: the scenario (or the stored run it replays, with its seed, lab
// text and CCL overrides) read, checked against its lab and the injectors, and planned with
// its seed. Touches nothing outside the process; bad input is InvalidArgument or NotFound at
// its place in the file.
#pragma once

#include "common/status.h"
#include "harness/lab/lab.h"
#include "harness/run/run_context.h"
#include "harness/run/run_options.h"
#include "reports/store/store.h"

namespace fl::harness::run {

// REQUIRES: store is open when opts.replay_of names a run (it is read from there).
StatusOr<Prepared> Prepare(const RunOptions& opts, reports::Store* store);

// Provisions the lab for the run, then takes its hosts as they are now (with the NICs'
// addresses, an allocation's node names) and validates and plans again: the same seed picks
// the same positions, now with real names.
Status Provision(Prepared& p, const lab::LabRun& run);

}  // namespace fl::harness::run
