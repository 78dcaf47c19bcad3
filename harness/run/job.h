// The job under test: its ranks launched on every host (the worker's command line), stopped,
// and restarted when a rank failed and the scenario's restart policy allows it. The facts of
// the job's shape that the rest of the run asks about (which ranks report progress, whether
// there is a warm-up, whether lost ranks are tolerated) are answered here, in one place.
//
// Thread-safety: driver's thread only. Blocking: each call waits for the agents' answers (at
// most 30 s; a restart also waits out the policy's delay and up to 60 s for the first sample).
#pragma once

#include <optional>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "harness/run/run_context.h"
#include "harness/run/telemetry_sink.h"

namespace fl::harness::run {

// The ranks that report progress: all of them, except for nccl-tests output, which only
// rank 0 prints (nccl-tests and ftccl-perf alike).
int ProgressRanks(const Prepared& p);
// The progress ranks that run on the host of `agent` (none for the fabric's agent).
std::vector<int> ProgressRanksOn(const Prepared& p, const std::string& agent);
// False for a command job that reports no progress (progress.format exit): no warm-up to
// wait for.
bool WaitsForWarmup(const JobSpec& j);
// The survivors go on without a lost rank (on_rank_loss: shrink, the worker's own job only).
bool ToleratesRankLoss(const JobSpec& j);

class Job {
 public:
  Job(RunContext& run, Progress& progress) : run_(run), progress_(progress) {}

  // Launches every host's ranks (attempt 0 first, then each restart), from first_iteration.
  Status Launch(int attempt, uint64_t first_iteration);
  // Stops every host's ranks (2 s of grace, then SIGKILL: the agent's rank supervisor).
  Status StopRanks();
  // A rank failed and the restart policy allows another attempt: stop the ranks, wait the
  // policy's delay and launch again from the last iteration every rank completed. -1: the run
  // goes on; else its exit code. It does not wait for the new ranks: the timeline goes on
  // meanwhile (a fault due during the relaunch is injected and reverted on time), and
  // PollRestart records the restart's cost when their first sample comes.
  int Restart();
  // After a Restart: the first new sample is in, so the restart's cost (the first failure to
  // that sample, over relaunches that failed again) is recorded as a job_restarted event.
  void PollRestart();

  int restarts() const { return restarts_; }
  bool restart_pending() const { return pending_.has_value(); }

 private:
  RunContext& run_;
  Progress& progress_;
  int restarts_ = 0;
  struct PendingRestart {
    Nanos failure_mono = 0;  // the first failure of the chain of relaunches
    Nanos relaunch_mono = 0;
    uint64_t samples_before = 0;
    int64_t resume = 0;
  };
  std::optional<PendingRestart> pending_;
};

}  // namespace fl::harness::run
