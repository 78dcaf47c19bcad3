// The end of a run in the store: metrics computed from what was stored (reports/metrics),
// verdicts from the scenario's expectations and the run's own checks (every planned fault
// fired, no telemetry dropped), the run's final status, and its summary printed (the same text
// or JSON as `faultline report RUN`). A run that ended early is only marked (error, aborted).
//
// Thread-safety: driver's thread only, after the ranks were stopped.
#pragma once

#include <string>
#include <string_view>

#include "harness/run/console.h"
#include "harness/run/fault_book.h"
#include "harness/run/run_context.h"
#include "harness/run/telemetry_sink.h"
#include "reports/metrics/ledger.h"

namespace fl::harness::run {

// A run whose job ran to its end: analysed, judged, finished in the store, summarised.
// Returns kExitPass (every verdict passed), kExitExpectation, or kExitInfra (the run could not
// be read back or analysed, or some of its results were lost).
int Analyse(RunContext& run, Progress& progress, const FaultBook& book, const Console& console);

// What the detection ledger (reports/metrics/ledger.h) needs of a fault kind, from its
// injector's registry entry; defaults for a kind no injector registered.
reports::FaultTraits LedgerTraits(std::string_view kind);

// A run that ended early (rc: kExitInfra or kExitInterrupted; failure: why): its telemetry
// flushed and its status stored (error or aborted), what was lost listed. Returns rc.
int FinishUnanalysed(RunContext& run, int rc, const std::string& failure);

}  // namespace fl::harness::run
