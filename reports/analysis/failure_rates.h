// The failure-rates file of `faultline project` (docs/goodput.md): how often each class of
// component of a cluster fails, how many GPUs share one, and what stands for a failure's cost:
// the measured cost of a fault kind in stored runs, or a fixed cost for failures faultline does
// not inject (a GPU that falls off the bus).
//
//   classes:
//     - name: nic
//       fault_kind: nic_port_flap     # measured: the runs' nic_port_flap faults
//       gpus_per_component: 1          # one NIC per GPU
//       failures_per_day: 0.0002       # per NIC
//     - name: gpu
//       cost: 2min                     # not injected: a fixed cost per failure
//       restart: true                  # ... and the job restarts from its last checkpoint
//       gpus_per_component: 1
//       failures_per_day: 0.0003
//
// Errors are InvalidArgument "FILE:LINE:COL: what is wrong" (common/yaml_util.h).
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fl::reports::analysis {

struct FailureClass {
  std::string name;               // "nic", "tor_link", "host"
  std::string where;              // "FILE:LINE:COL" of the entry, for errors about it later
  std::string fault_kind;         // whose measured faults give the cost; "" with a fixed cost
  std::optional<double> cost_s;   // a fixed cost per failure, in seconds (no fault_kind)
  bool restart = false;           // with cost: the job also loses the work since its checkpoint
  double gpus_per_component = 1;  // GPUs that share one component (a host: 8)
  double failures_per_day = 0;    // failures of one component per day
};

struct FailureRates {
  std::string source;
  std::vector<FailureClass> classes;  // as in the file; names are unique
};

StatusOr<FailureRates> ParseFailureRates(std::string_view text, const std::string& name);
// Read through ReadInputFile (kind "failure rates", 1 MiB at most).
StatusOr<FailureRates> LoadFailureRates(const std::string& path);

}  // namespace fl::reports::analysis
