// The interpreter of the pure timeline (timeline.h): it looks (the clock, the telemetry, the
// answers of faults sent ahead), asks NextTimelineStep what to do, does it over the control
// plane (FaultBook, Job), prints (Console), and sleeps until the step's wake time.
//
// Thread-safety: driver's thread only. Blocking: until the job ends, hangs, fails past its
// restart policy, a fault cannot be injected or reverted, an agent is lost, or Ctrl-C.
#pragma once

#include "harness/run/console.h"
#include "harness/run/fault_book.h"
#include "harness/run/job.h"
#include "harness/run/run_context.h"
#include "harness/run/telemetry_sink.h"

namespace fl::harness::run {

// Runs the fault timeline from launch to the job's end. Returns kExitPass when the job ended
// (passed, failed or hung: Analyse judges it), kExitInterrupted on Ctrl-C, else kExitInfra
// (said on stderr).
int RunTimeline(RunContext& run, Progress& progress, FaultBook& book, Console& console, Job& job);

}  // namespace fl::harness::run
