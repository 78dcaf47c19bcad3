// What each workload says about itself without its code: name, one-line doc and the options it
// takes (common/options.h), so that the coordinator checks a scenario's job against them and
// `faultline workloads` lists them without linking any CCL. RegisterBuiltinWorkloads
// (workload.h) registers each factory with the same schema.
//
// The options are job keys in a scenario (job.compute, job.compute_device) and flags of
// faultline-worker (--compute, --compute-device); WorkloadConfig carries them typed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/options.h"
#include "common/status.h"

namespace fl::workloads {

struct WorkloadPlugin {
  std::string name;
  std::string doc;
  OptionSchema options;
};

// In name order: allreduce_loop, moe_alltoall, training_step.
const std::vector<const WorkloadPlugin*>& WorkloadPlugins();
// NotFound naming the known workloads for an unknown name.
StatusOr<const WorkloadPlugin*> FindWorkloadPlugin(std::string_view name);
std::vector<std::string> WorkloadNames();

}  // namespace fl::workloads
