#include "workloads/workload_plugins.h"

#include "common/plugin_list.h"

namespace fl::workloads {

namespace {

using T = OptionType;

// The descriptors (name, doc, options), listed in workload_list.h.
const WorkloadPlugin kAllReduceLoopPlugin{
    "allreduce_loop", "one AllReduce of job.size per iteration, verified exactly",
    OptionSchema("allreduce_loop", {})};

const WorkloadPlugin kMoeAllToAllPlugin{
    "moe_alltoall", "an AllToAll of job.size per iteration (expert routing), verified",
    OptionSchema("moe_alltoall", {})};

const WorkloadPlugin kTrainingStepPlugin{
    "training_step", "a compute phase, then an AllReduce of job.size (gradients), per iteration",
    OptionSchema("training_step",
                 {
                     {"compute",
                      T::kDurationMs,
                      0,
                      3600 * 1000,
                      {},
                      "20ms",
                      "the compute phase of each step (whole ms)"},
                     {"compute_device",
                      T::kEnum,
                      0,
                      0,
                      {"cpu", "gpu", "auto"},
                      "auto",
                      "where it runs: cuBLAS GEMMs on a GPU, host arithmetic, or auto"},
                 })};

}  // namespace

const std::vector<const WorkloadPlugin*>& WorkloadPlugins() {
  static const auto* all = new std::vector<const WorkloadPlugin*>{
#define FL_WORKLOAD(name, descriptor, cls) &descriptor,
#include "workloads/workload_list.h"
#undef FL_WORKLOAD
  };
  return *all;
}

std::vector<std::string> WorkloadNames() { return PluginNames(WorkloadPlugins()); }

std::string WorkloadOptionSummary() { return PluginOptionSummary(WorkloadPlugins(), true); }

StatusOr<const WorkloadPlugin*> FindWorkloadPlugin(std::string_view name) {
  return FindPlugin(WorkloadPlugins(), name, "workload");
}

}  // namespace fl::workloads
