// The run's agents: the control server they dial (with the lab's token and TLS), the ranks'
// rendezvous (a directory, or a TCP store served here), the lab's agents started and waited
// for, their clocks synchronised and their hosts recorded (fingerprints, tags from them); and
// agents lost while the run goes on.
//
// Thread-safety: driver's thread only. Blocking: StartAgents waits up to the lab's
// agent_wait() for the agents to dial in (returning early on Ctrl-C) and up to 60 s for the
// clock sync.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "harness/run/fault_book.h"
#include "harness/run/run_context.h"
#include "harness/run/telemetry_sink.h"

namespace fl::harness::run {

// The control plane up, the lab's agents started, registered and their clocks measured; the
// agents' telemetry goes to OnTelemetry(run, progress, ...) from here on.
Status StartAgents(RunContext& run, Progress& progress);

// An agent of this run that ended on its own (crash, kill -9; its lab reverted its faults from
// the journal and the book records them), or that the control plane lost (no session for a
// lease, or a restarted instance claimed its host): "host (how)", once per agent; else nullopt.
std::optional<std::string> LostAgent(RunContext& run, FaultBook& book);

}  // namespace fl::harness::run
