// The Workload contract: what one rank of a resilience job does each iteration, so that the
// harness can measure any job shape the same way (like nccl-tests' testColl).
//
//   Init(comm, config)   allocate buffers, fill deterministic data; called again with a new
//                        communicator after a shrink (worker.h): the workload rebinds to it
//                        (its rank, its size) and drops what it had for the old one
//   Step(iteration)      one iteration: compute (if any) and the collective(s)
//   Verify(iteration)    exact check of the last Step's result against a closed-form
//                        expected value; DataLoss names the first wrong element
//   bytes_per_step()     the bytes one Step moves per rank (algorithm bytes), for algbw
//
// Data are small integers chosen so that every reduction is exact in every supported type
// (float32, float16, bfloat16, int32, int64): a mismatch is a real correctness failure, never
// rounding.
//
// Thread-safety: a Workload is used by one thread (the rank's).
// Ownership: the Communicator is borrowed and must outlive the Workload.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ccl_under_test/api/communicator.h"
#include "common/registry.h"
#include "common/status.h"

namespace fl::workloads {

// What every workload takes (job.size, job.dtype, job.collective_timeout). A workload's own
// options (training_step's compute, compute_device) are in its schema (workload_plugins.h)
// and reach its factory typed, as OptionValues.
struct WorkloadConfig {
  uint64_t size_bytes = 16ull << 20;  // per-rank message size of the main collective
  ccl::DataType dtype = ccl::DataType::kFloat32;
  Nanos collective_timeout = 10 * kNsPerSec;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  virtual Status Init(ccl::Communicator* comm, const WorkloadConfig& config) = 0;
  virtual Status Step(uint64_t iteration) = 0;
  virtual Status Verify(uint64_t iteration) = 0;
  virtual uint64_t bytes_per_step() const = 0;
  // The collective whose bus bandwidth this workload reports.
  virtual ccl::Collective collective() const = 0;
};

// A factory takes the workload's own options, parsed against the schema it registered with
// (Schema(name), the same as its descriptor's in workload_plugins.h); options not given take
// the schema's defaults; a value the schema refuses is InvalidArgument.
using WorkloadRegistry = Registry<Workload, const OptionValues&>;

// Registers allreduce_loop, training_step and moe_alltoall, each with its descriptor's schema.
Status RegisterBuiltinWorkloads(WorkloadRegistry& registry);

}  // namespace fl::workloads
