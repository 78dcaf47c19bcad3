// What each workload says about itself without its code: name, one-line doc and the options it
// takes (common/options.h), so that the coordinator checks a scenario's job against them and
// `faultline workloads` lists them without linking any CCL. RegisterBuiltinWorkloads
// (workload.h) registers each factory with the same schema.
//
// A workload's options are job keys in a scenario (job.compute, job.compute_device for
// training_step), checked at load against its schema (file:line:col), and reach the rank as
// `faultline-worker --workload-option NAME=VALUE`; the worker parses them against the schema the
// workload registered with and hands them to its factory typed (OptionValues). What every
// workload takes (job.size, job.dtype, job.collective_timeout, and the loop's job.check_every)
// is not an option: WorkloadConfig and LoopOptions carry it (kCommonJobKeys).
//
// Adding a workload: its class in workloads.cc, its descriptor (name, doc, schema) in
// workload_plugins.cc, and its one registration line in workload_list.h, which both read. Adding an
// option: its spec in the descriptor, read from OptionValues in the workload's constructor; the
// loader, the worker and `faultline workloads` take it from the schema.
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
// "training_step: compute, compute_device" (workloads that take options), for --help texts.
std::string WorkloadOptionSummary();

// The job keys every workload takes (not options of one), for listings and messages.
inline constexpr const char* kCommonJobKeys =
    "size, dtype, collective_timeout, check_every, on_rank_loss, shrink_grace";

}  // namespace fl::workloads
