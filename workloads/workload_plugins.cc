#include "workloads/workload_plugins.h"

namespace fl::workloads {

const std::vector<const WorkloadPlugin*>& WorkloadPlugins() {
  using T = OptionType;
  static const auto* all = new std::vector<const WorkloadPlugin*>{
      new WorkloadPlugin{"allreduce_loop",
                         "one AllReduce of job.size per iteration, verified exactly",
                         OptionSchema("allreduce_loop", {})},
      new WorkloadPlugin{"moe_alltoall",
                         "an AllToAll of job.size per iteration (expert routing), verified",
                         OptionSchema("moe_alltoall", {})},
      new WorkloadPlugin{
          "training_step",
          "a compute phase, then an AllReduce of job.size (gradients), per iteration",
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
                       })},
  };
  return *all;
}

std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const WorkloadPlugin* p : WorkloadPlugins()) names.push_back(p->name);
  return names;
}

std::string WorkloadOptionSummary() {
  std::string s;
  for (const WorkloadPlugin* p : WorkloadPlugins()) {
    if (p->options.specs().empty()) continue;
    std::string names;
    for (const auto& n : p->options.Names()) names += (names.empty() ? "" : ", ") + n;
    s += (s.empty() ? "" : "; ") + p->name + ": " + names;
  }
  return s.empty() ? "none" : s;
}

StatusOr<const WorkloadPlugin*> FindWorkloadPlugin(std::string_view name) {
  for (const WorkloadPlugin* p : WorkloadPlugins())
    if (p->name == name) return p;
  std::string known;
  for (const auto& n : WorkloadNames()) known += (known.empty() ? "" : ", ") + n;
  return NotFoundError("unknown workload '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace fl::workloads
