// faultline-worker's command line, defined once: the coordinator writes a job's part of it, the
// agent writes each rank's part (ToArgv), and the worker parses it (AddWorkerFlags). A flag's
// name, its default and how its value is written all live here, so that the three cannot
// disagree.
//
// The argv the worker gets is the agent's part (WorkerRankArgs: who this rank is and where it
// reports) followed by the coordinator's (WorkerJobArgs: the same for every rank of a job; a
// command job's program comes last, after "--"). ToArgv writes only what differs from the
// default, so that the parser's defaults and the writers' agree by construction.
//
// Thread-safety: plain values. AddWorkerFlags binds the App's options to *invocation, which
// must outlive the App's parse.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "workloads/progress/formats.h"

namespace CLI {
class App;
}  // namespace CLI

namespace fl::workloads {

// What the agent gives each rank it starts. The coordinator may not set these
// (kAgentOwnedWorkerFlags, checked by the agent's policy).
struct WorkerRankArgs {
  std::optional<int> rank;              // unset: from the launcher (FL_RANK, RANK, ...)
  std::optional<int> world_size;        // unset: from the launcher
  std::vector<std::string> nics;        // rail order; empty: 127.0.0.1 (see Nics())
  std::string telemetry;                // the agent's Unix socket; empty: JSON lines on stdout
  std::string store_token_file;         // the tcp:// store's token
  std::optional<int> local_rank;        // command mode: LOCAL_RANK (unset: 0)
  std::optional<int> local_world_size;  // command mode: LOCAL_WORLD_SIZE (unset: 1)
  std::string log_dir;                  // rank-N.log (and a command's output); empty: stderr

  // The NICs the rank uses: nics, or the loopback address when none were given.
  std::vector<std::string> Nics() const;
  std::vector<std::string> ToArgv() const;
  bool operator==(const WorkerRankArgs&) const = default;
};

// The flags of WorkerRankArgs: what the agent alone writes.
inline constexpr std::string_view kAgentOwnedWorkerFlags[] = {
    "--rank",       "--world-size",       "--nics",   "--telemetry", "--store-token-file",
    "--local-rank", "--local-world-size", "--log-dir"};

// What the coordinator gives every rank of a job. A command job (command not empty) reads
// job_id, store, iterations, duration, first_iteration, progress_format, master_addr,
// slurm_env and env; the workload's fields are not used by it.
struct WorkerJobArgs {
  std::string job_id = "job";
  // The rendezvous store: "tcp://HOST:PORT" (written as --store) or a directory (written as
  // --store-dir); empty: none given.
  std::string store;
  std::string ccl = "ftccl";
  std::string workload = "allreduce_loop";
  uint64_t size_bytes = 16ull << 20;
  std::string dtype = "float32";
  uint64_t iterations = 0;  // or duration_ns
  Nanos duration_ns = 0;
  uint64_t first_iteration = 0;
  uint64_t check_every = 1;
  Nanos collective_timeout_ns = 10 * kNsPerSec;
  Nanos init_timeout_ns = 30 * kNsPerSec;
  std::map<std::string, std::string> workload_options;
  std::map<std::string, std::string> ccl_options;
  bool failover = true;  // false: --no-failover
  std::string on_rank_loss = "abort";
  std::optional<Nanos> shrink_grace_ns;  // unset: the collective timeout + 5 s
  // The rank's environment: a command job's, or the worker's own.
  std::map<std::string, std::string> env;
  std::string progress_format{progress::kDefaultProgressFormat};
  std::string master_addr;           // command mode; empty: the rank's first NIC
  bool slurm_env = false;            // command mode: also SLURM_PROCID, ...
  std::vector<std::string> command;  // command mode: the program and its arguments

  // Ends with "--" and the command when there is one.
  std::vector<std::string> ToArgv() const;
  bool operator==(const WorkerJobArgs&) const = default;
};

struct WorkerInvocation {
  WorkerRankArgs rank;
  WorkerJobArgs job;

  // The whole argv after the program name: rank.ToArgv(), then job.ToArgv().
  std::vector<std::string> ToArgv() const;
  bool operator==(const WorkerInvocation&) const = default;
};

// Adds every worker flag to app, bound to *invocation (which keeps its defaults for flags not
// given). A bad value (a size, a duration, an --env that is not NAME=VALUE, --store with
// --store-dir) is a CLI::ParseError from app.parse, naming the flag.
void AddWorkerFlags(CLI::App& app, WorkerInvocation* invocation);

}  // namespace fl::workloads
