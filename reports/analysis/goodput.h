// The goodput projection of `faultline project` (docs/goodput.md has the method): measured
// costs of faults (from stored runs) and failure rates of a fleet's components give the
// effective training time ratio (ETTR: productive time / wall time) of a job of N GPUs, in
// closed form (its expectation) and by a seeded Monte Carlo simulation (its spread), with the
// share of the lost time each class of failure is to blame for.
//
// Thread-safety: pure functions. Cost: O(trials x expected failures per job).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/rng.h"
#include "common/status.h"
#include "reports/analysis/failure_rates.h"

namespace fl::reports::analysis {

// One applied fault of a stored run, with what its metrics say it cost (docs/metrics.md).
struct MeasuredFault {
  std::string run_id;
  std::string fault_id;
  std::string kind;
  std::optional<double> throughput_loss_s;
  std::optional<double> restart_cost_ms;  // the coordinator relaunched the job
  // The job did not survive it: the run's outcome is failed or hung and this is its last
  // applied fault.
  bool ended_job = false;
  // When it hung: the run's hang timeout, the time a real job's watchdog takes to notice.
  std::optional<double> hang_s;
};

struct ProjectionOptions {
  int64_t cluster_gpus = 0;             // N
  double job_days = 30;                 // H, the job's wall time
  double checkpoint_interval_s = 3600;  // C: a restart loses U(0, C) of work
  double restart_s = 600;               // R: relaunching a job that died, to its first step
  int trials = 10000;
  uint64_t seed = 1;
};

// What one failure costs the job, in seconds of productive time, before the checkpoint loss.
struct FaultCost {
  double lost_s = 0;
  bool restart = false;  // adds U(0, C) of lost work since the last checkpoint
};

// The cost docs/goodput.md gives a measured fault: R (plus the hang timeout when it hung) when
// it ended the job; its restart cost when the job was relaunched; else its throughput loss (at
// least 0). Unset when the fault has none of them (no baseline before it).
std::optional<FaultCost> CostOf(const MeasuredFault& fault, const ProjectionOptions& options);

struct ClassProjection {
  std::string name;
  std::string fault_kind;       // "" for a fixed cost
  int64_t components = 0;       // ceil(N / gpus_per_component)
  double failures_per_job = 0;  // expected: components x failures_per_day x H
  size_t samples = 0;           // measured faults behind the cost (0: fixed)
  size_t restarts = 0;          // of those, the ones that restarted the job
  double mean_cost_s = 0;       // expected cost of one failure, checkpoint loss included
  double cost_p25_s = 0, cost_median_s = 0, cost_p75_s = 0;  // of the samples' costs
  double expected_lost_s = 0;                                // failures_per_job x mean_cost_s
  double share = 0;                                          // of all classes' expected lost time
};

struct Projection {
  ProjectionOptions options;
  std::vector<ClassProjection> classes;  // costliest first
  double expected_failures = 0;          // per job, all classes
  double expected_lost_s = 0;
  double expected_ettr = 1;  // 1 - expected_lost_s / H (closed form; may be below 0)
  // Over the trials (each ETTR clamped to [0, 1]).
  double ettr_mean = 1, ettr_p5 = 1, ettr_median = 1, ettr_p95 = 1;
  std::vector<std::string> notes;  // faults left out, kinds measured but not used, warnings
};

// InvalidArgument for options out of range, or a class whose fault kind no measured fault has
// a cost for (naming the class's place in its file and the kinds that were measured).
StatusOr<Projection> ProjectGoodput(const FailureRates& rates,
                                    const std::vector<MeasuredFault>& measured,
                                    const ProjectionOptions& options);

std::string RenderProjectionText(const Projection& p);
std::string ProjectionJson(const Projection& p);

// A Poisson(mean) draw from rng (exact: Knuth's product method on pieces of mean <= 16, whose
// sum is Poisson of the whole). REQUIRES: 0 <= mean <= 1e7.
int64_t DrawPoisson(Rng& rng, double mean);

}  // namespace fl::reports::analysis
