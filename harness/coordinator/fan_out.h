// One command to many agents: FanOut runs a call per host with bounded parallelism, FirstError
// reads its statuses. Used by the run driver for every per-agent command (launch, stop, revert,
// shutdown) and by bench_coordinator_agents.
//
// Thread-safety: FanOut may be called from any thread; fn runs concurrently with itself.
// Blocking: FanOut returns once every host's call has returned or been skipped at the deadline.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::harness {

// How many agents a command fanned out to the fleet is in flight to at once. A call waits for
// its ack, so the width sets the fan-out's pace: 4096 agents took 2.1-2.2 s at 256 and
// 1.1-1.3 s at 1024 (bench_coordinator_agents, docs/performance.md).
inline constexpr int kFanOutWidth = 1024;

// Runs fn(host) for every host, at most max_in_flight at a time (on threads of its own, so
// that one slow or silent agent holds up only its own call), and returns fn's statuses in the
// order of hosts. A host whose turn has not come by the deadline is not called
// (DeadlineExceeded); fn enforces its own deadline once called. fn may run concurrently
// with itself.
std::vector<Status> FanOut(const std::vector<std::string>& hosts, int max_in_flight,
                           const std::function<Status(const std::string& host)>& fn,
                           Deadline deadline);
// The first error of FanOut's statuses, in host order, or OK.
Status FirstError(const std::vector<Status>& statuses);

}  // namespace fl::harness
