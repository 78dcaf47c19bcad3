// The agents' telemetry as it arrives (the control server's telemetry handler): each record is
// checked, stored through the run's writer and counted into Progress, what the rest of the run
// knows of the job while it runs.
//
// Thread-safety: Progress is guarded by its mutex (mu); OnTelemetry runs on the control
// server's threads, everything else reads Progress on the driver's thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "harness/proto/faultline.pb.h"
#include "harness/run/run_context.h"
#include "reports/store/records.h"

namespace fl::harness::run {

// What the telemetry tells us about the job while it runs.
struct Progress {
  std::mutex mu;
  std::condition_variable anchor_event_cv;  // an anchor event arrived: the timeline looks
  std::map<int, int64_t> last_iteration;    // rank -> last completed iteration
  std::map<int, int> exit_code;             // rank -> code (-signal) once its process ended
  Nanos last_sample_mono = 0;
  uint64_t samples = 0;
  uint64_t mismatches = 0;
  uint64_t bad_telemetry = 0;                   // records dropped by OnTelemetry
  std::set<std::string> bad_telemetry_hosts;    // agents already logged for it
  std::deque<std::pair<Nanos, uint64_t>> rate;  // (mono, samples) for iterations/s
  // Events the terminal tells of (a fault's detection, failover and restored path; a rank
  // that exited badly), until the console prints them.
  std::vector<reports::EventRecord> notable;
  // The CCL events a fault can be timed against (after_event / during), kept for the run.
  std::vector<reports::EventRecord> anchor_events;

  // The least last iteration over the ranks (-1 until all have reported); skip_lost: leaves
  // out ranks that exited badly (lost ranks the survivors shrank away from).
  int64_t MinIteration(int world, bool skip_lost = false);
  int FailedRanks();
  int Exited();
  std::optional<std::pair<int, int>> FirstFailure();  // (rank, code) of the first bad exit
};

// One batch of an agent's telemetry: each record is checked (rank within the world, a valid
// event kind, a JSON-object detail, a readable rank_exit, a named NIC) before it counts or is
// stored. A bad record is counted, logged once per agent and dropped; it never ends the run.
void OnTelemetry(RunContext& run, Progress& progress, const std::string& host,
                 const faultline::v1::TelemetryBatch& batch);

}  // namespace fl::harness::run
