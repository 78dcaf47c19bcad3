// The timeout lint: from a scenario alone, the timeouts that nest and the ones that are set
// the wrong way round, so that a run is not spent finding out that an outer timeout fires
// before an inner one can recover. Warnings, never errors: `faultline run --dry-run` and every
// run print them.
//
// What it sees (each named with where its value came from):
//   inner  the CCL's detection and give-up timeouts, from its plug-in's hook
//          (ccl_under_test/api/ccl_plugin.h; ftccl: dead_timeout_ms, peer_dead_ms;
//          nccl: 4.096 us x 2^NCCL_IB_TIMEOUT x NCCL_IB_RETRY_CNT from the effective env)
//   outer  job.collective_timeout (faultline-worker jobs), a process-group timeout in the
//          job's env (FAULTLINE_PG_TIMEOUT: a duration, e.g. 30s or 1800000ms, bare = seconds;
//          what a training script passes to init_process_group(timeout=)), job.hang_timeout
//   faults the durations of faults that stop a path (nic_port_flap, tor_port_down,
//          tor_uplink_down, link_blackhole, pfc_storm)
// Rules:
//   1. every outer timeout must be longer than the CCL's detection timeout;
//   2. job.hang_timeout must be longer than the collective and process-group timeouts;
//   3. for a CCL that does not route around a path fault but rides it out (it has a give-up
//      timeout: nccl's IB retries), a path fault must end before
//      the give-up timeout (else the CCL fails the job) and before every outer timeout (else
//      that fires while the CCL is still waiting for the path to come back).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "harness/scenario/scenario.h"

namespace fl::harness {

// The name of the process-group timeout variable the lint reads from the job's env.
inline constexpr const char* kPgTimeoutEnv = "FAULTLINE_PG_TIMEOUT";

// One line per problem, naming both timeouts, their values and their sources.
std::vector<std::string> LintTimeouts(const Scenario& scenario,
                                      const std::map<std::string, std::string>& effective_env);
// With EffectiveJobEnv(scenario) (no lab context).
std::vector<std::string> LintTimeouts(const Scenario& scenario);

}  // namespace fl::harness
