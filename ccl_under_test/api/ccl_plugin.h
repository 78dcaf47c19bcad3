// What a CCL plug-in says about itself without its engine: its name, its options (schema), the
// environment it wants by default for a job, and the timeouts inside it that decide how fast a
// fault is noticed and how long an outage it rides out, and what the harness asks instead of
// spelling its name (NIC binding, GPU, failover). Each CCL defines one in its own folder
// (ftccl/ftccl_plugin.h, adapters/gloo/gloo_plugin.h, adapters/nccl/nccl_plugin.h), in a small
// library that links fl_common only, so that the coordinator (scenario loader, timeout lint,
// `faultline ccls`) knows every CCL without linking any engine; the CCL's factory registers
// with the same schema. ccl_under_test/tools/ccl_plugins.h lists them.
//
// Thread-safety: immutable after construction; the hooks are pure functions.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/options.h"

namespace fl::ccl {

// What the lab tells a CCL about where its ranks run, for its default environment.
struct CclEnvContext {
  std::vector<std::string> nic_names;     // the ranks' data NICs (interface names), rail order
  std::vector<std::string> rdma_devices;  // RDMA devices behind them (mlx5_0, ...); may be empty
};

// One timeout inside the CCL, with where its value came from.
struct CclTimeout {
  enum class Kind {
    kDetect,  // how long a silent fault goes unnoticed (a dead path is declared after this)
    kGiveUp,  // the longest outage the CCL rides out before it fails the collective
  };
  Kind kind = Kind::kDetect;
  std::string name;  // "ftccl dead_timeout_ms", "NCCL_IB_TIMEOUT x NCCL_IB_RETRY_CNT"
  Nanos value = 0;
  std::string source;  // "job.ccl_options", "the ftccl default"; "" = from env_vars
  // The environment variables the value was computed from; when source is "", the caller
  // names where they came from (job.env, the CCL's default env).
  std::vector<std::string> env_vars;
};

struct CclTimeouts {
  std::vector<CclTimeout> timeouts;
  // true when a fault on one path is routed around (the job keeps progressing during the
  // fault): outer timeouts then need only outlast detection, not the fault.
  bool routes_around_path_faults = false;
};

// Which of its host's NICs a rank is given (the coordinator's launch; the worker's --nics).
enum class NicBinding {
  kAllRails,    // every NIC of the host, rail order: the CCL spreads over them
  kOnePerRank,  // one NIC per rank: local rank g binds rail g (mod the host's NICs)
};

struct CclPlugin {
  std::string name;  // the registry name: "ftccl"
  std::string doc;   // one line
  OptionSchema options;
  // Environment variables the CCL wants in every rank unless the job's env sets them.
  std::function<std::map<std::string, std::string>(const CclEnvContext&)> default_env;
  // The CCL's timeouts for these options (already validated), the ranks' effective environment
  // and the job's failover setting.
  std::function<CclTimeouts(const OptionValues& options,
                            const std::map<std::string, std::string>& env, bool failover)>
      timeouts;
  // Whether the CCL's communicators may support Communicator::Shrink (communicator.h): true
  // means "where the run-time library allows" (nccl: a libnccl with ncclCommShrink; the
  // communicator's ShrinkSupport() decides), false means never, so that a job asking to
  // shrink (on_rank_loss: shrink) over it can be refused before anything starts.
  bool may_shrink = false;
  // What the rest of faultline asks about a CCL instead of spelling its name.
  NicBinding nic_binding = NicBinding::kAllRails;
  // Its ranks need a GPU (a lab of CPU ranks cannot run it).
  bool needs_gpu = false;
  // With failover on (job.failover), a path fault is routed around inside the job rather than
  // failing it; such a job is not restarted (restart applies to fail-stop jobs).
  bool fails_over = false;
};

}  // namespace fl::ccl
