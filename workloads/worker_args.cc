#include "workloads/worker_args.h"

#include <CLI/CLI.hpp>

#include "common/options.h"
#include "common/units.h"
#include "workloads/progress/formats.h"

namespace fl::workloads {
namespace {

std::string NsText(Nanos ns) { return std::to_string(ns) + "ns"; }

void Add(std::vector<std::string>& argv, std::string_view flag, std::string value) {
  argv.emplace_back(flag);
  argv.push_back(std::move(value));
}

void AddEach(std::vector<std::string>& argv, std::string_view flag,
             const std::map<std::string, std::string>& kv) {
  for (const auto& [k, v] : kv) Add(argv, flag, k + "=" + v);
}

bool IsTcpStore(const std::string& store) { return store.rfind("tcp://", 0) == 0; }

// The value of a flag as the parser wants it, or a ValidationError naming the flag.
template <typename T>
T ValueOr(std::string_view flag, StatusOr<T> v) {
  if (!v.ok()) throw CLI::ValidationError(std::string(flag), v.status().message());
  return *std::move(v);
}

// Binds a repeatable key=value flag to a map (a repeated key: the last one wins).
void AddKeyValues(CLI::App& app, const std::string& flag, std::map<std::string, std::string>* to,
                  const std::string& help) {
  app.add_option_function<std::vector<std::string>>(
         flag,
         [flag, to](const std::vector<std::string>& given) {
           for (const auto& kv : given) {
             auto split = SplitKeyValue(kv);
             if (!split.ok()) throw CLI::ValidationError(flag, split.status().message());
             (*to)[split->first] = split->second;
           }
         },
         help)
      // One value per flag: CLI11 lets a vector option swallow the arguments after it, and
      // with them a command job's "--" and the command's own options.
      ->allow_extra_args(false);
}

void AddDuration(CLI::App& app, const std::string& flag, Nanos* to, const std::string& help,
                 const std::string& default_text = "") {
  auto* o = app.add_option_function<std::string>(
      flag, [flag, to](const std::string& text) { *to = ValueOr(flag, ParseDuration(text)); },
      help);
  if (!default_text.empty()) o->default_str(default_text);
}

}  // namespace

std::vector<std::string> WorkerRankArgs::Nics() const {
  return nics.empty() ? std::vector<std::string>{"127.0.0.1"} : nics;
}

std::vector<std::string> WorkerRankArgs::ToArgv() const {
  std::vector<std::string> a;
  if (rank) Add(a, "--rank", std::to_string(*rank));
  if (world_size) Add(a, "--world-size", std::to_string(*world_size));
  if (!nics.empty()) {
    std::string csv;
    for (const auto& n : nics) csv += (csv.empty() ? "" : ",") + n;
    Add(a, "--nics", csv);
  }
  if (!telemetry.empty()) Add(a, "--telemetry", telemetry);
  if (local_rank) Add(a, "--local-rank", std::to_string(*local_rank));
  if (local_world_size) Add(a, "--local-world-size", std::to_string(*local_world_size));
  if (!log_dir.empty()) Add(a, "--log-dir", log_dir);
  if (!store_token_file.empty()) Add(a, "--store-token-file", store_token_file);
  return a;
}

std::vector<std::string> WorkerJobArgs::ToArgv() const {
  const WorkerJobArgs d;  // the defaults: what the worker assumes for a flag not given
  std::vector<std::string> a;
  if (job_id != d.job_id) Add(a, "--job-id", job_id);
  if (!store.empty()) Add(a, IsTcpStore(store) ? "--store" : "--store-dir", store);
  if (ccl != d.ccl) Add(a, "--ccl", ccl);
  if (workload != d.workload) Add(a, "--workload", workload);
  if (size_bytes != d.size_bytes) Add(a, "--size", std::to_string(size_bytes));
  if (dtype != d.dtype) Add(a, "--dtype", dtype);
  if (check_every != d.check_every) Add(a, "--check-every", std::to_string(check_every));
  if (collective_timeout_ns != d.collective_timeout_ns)
    Add(a, "--collective-timeout", NsText(collective_timeout_ns));
  if (init_timeout_ns != d.init_timeout_ns) Add(a, "--init-timeout", NsText(init_timeout_ns));
  if (first_iteration != d.first_iteration)
    Add(a, "--first-iteration", std::to_string(first_iteration));
  if (iterations != d.iterations) Add(a, "--iterations", std::to_string(iterations));
  if (duration_ns != d.duration_ns) Add(a, "--duration", NsText(duration_ns));
  if (!failover) a.emplace_back("--no-failover");
  if (on_rank_loss != d.on_rank_loss) Add(a, "--on-rank-loss", on_rank_loss);
  if (shrink_grace_ns) Add(a, "--shrink-grace", NsText(*shrink_grace_ns));
  AddEach(a, "--workload-option", workload_options);
  AddEach(a, "--ccl-option", ccl_options);
  if (progress_format != d.progress_format) Add(a, "--progress-format", progress_format);
  if (!master_addr.empty()) Add(a, "--master-addr", master_addr);
  if (slurm_env) a.emplace_back("--slurm-env");
  AddEach(a, "--env", env);
  if (!command.empty()) {
    a.emplace_back("--");
    a.insert(a.end(), command.begin(), command.end());
  }
  return a;
}

std::vector<std::string> WorkerInvocation::ToArgv() const {
  std::vector<std::string> a = rank.ToArgv();
  std::vector<std::string> j = job.ToArgv();
  a.insert(a.end(), j.begin(), j.end());
  return a;
}

void AddWorkerFlags(CLI::App& app, WorkerInvocation* invocation) {
  WorkerRankArgs* r = &invocation->rank;
  WorkerJobArgs* j = &invocation->job;
  // The rank's own (the agent's part).
  app.add_option_function<int>(
      "--rank", [r](int v) { r->rank = v; },
      "this rank (default: from the launcher: FL_RANK, RANK, OMPI_COMM_WORLD_RANK or "
      "SLURM_PROCID; see docs/ftccl.md)");
  app.add_option_function<int>(
      "--world-size", [r](int v) { r->world_size = v; },
      "number of ranks in the job (default: from the launcher)");
  app.add_option("--nics", r->nics,
                 "local NICs, one per rail, rail order: IPv4 addresses or interface names "
                 "(default: 127.0.0.1)")
      ->delimiter(',');
  app.add_option("--telemetry", r->telemetry,
                 "Unix socket of the agent (default: JSON lines on stdout)");
  app.add_option("--store-token-file", r->store_token_file,
                 "file holding the tcp:// store's shared token (0600)");
  app.add_option("--log-dir", r->log_dir,
                 "where this rank's log (rank-N.log) and a command job's rank-N.stdout/.stderr "
                 "are kept (default: stderr)");
  app.add_option_function<int>(
      "--local-rank", [r](int v) { r->local_rank = v; }, "command mode: LOCAL_RANK");
  app.add_option_function<int>(
      "--local-world-size", [r](int v) { r->local_world_size = v; },
      "command mode: LOCAL_WORLD_SIZE");

  // The job's (the coordinator's part).
  app.add_option("--job-id", j->job_id, "job id: keys in the rendezvous store")
      ->capture_default_str();
  auto* store_opt = app.add_option_function<std::string>(
      "--store", [j](const std::string& s) { j->store = s; },
      "rendezvous store: tcp://HOST:PORT (with --store-token-file) or DIR");
  auto* dir_opt = app.add_option_function<std::string>(
      "--store-dir", [j](const std::string& s) { j->store = s; },
      "rendezvous directory shared by all ranks (= --store DIR)");
  store_opt->excludes(dir_opt);
  app.add_option("--ccl", j->ccl, "collective library: ftccl | gloo | nccl")->capture_default_str();
  app.add_option("--workload", j->workload, "allreduce_loop | training_step | moe_alltoall")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--size",
         [j](const std::string& text) { j->size_bytes = ValueOr("--size", ParseBytes(text)); },
         "per-rank message size")
      ->default_str("16MiB");
  app.add_option("--dtype", j->dtype, "float32 | float16 | bfloat16 | int32 | int64")
      ->capture_default_str();
  app.add_option("--iterations", j->iterations, "iterations to run (or --duration)");
  AddDuration(app, "--duration", &j->duration_ns, "how long to run, e.g. 30s (or --iterations)");
  app.add_option("--first-iteration", j->first_iteration,
                 "resume at this iteration (after a restart)");
  app.add_option("--check-every", j->check_every, "verify the result every k iterations")
      ->capture_default_str();
  AddDuration(app, "--collective-timeout", &j->collective_timeout_ns, "deadline of one collective",
              "10s");
  AddDuration(app, "--init-timeout", &j->init_timeout_ns, "deadline for joining the group", "30s");
  AddKeyValues(app, "--workload-option", &j->workload_options,
               "the workload's options, key=value (repeatable; `faultline workloads` lists them)");
  AddKeyValues(app, "--ccl-option", &j->ccl_options,
               "the CCL's options, key=value (repeatable; `faultline ccls` lists them)");
  app.add_flag_callback(
      "--no-failover", [j] { j->failover = false; },
      "fail-stop mode: the first path fault fails the job");
  app.add_option("--on-rank-loss", j->on_rank_loss,
                 "when a collective fails because a peer is gone: abort (fail-stop) | shrink "
                 "(the survivors shrink the communicator and go on; CCLs with Shrink only)")
      ->capture_default_str();
  app.add_option_function<std::string>(
      "--shrink-grace",
      [j](const std::string& text) {
        j->shrink_grace_ns = ValueOr("--shrink-grace", ParseDuration(text));
      },
      "shrink: how long survivors wait for each other (default: the collective timeout + 5s)");
  AddKeyValues(app, "--env", &j->env,
               "NAME=VALUE for this rank's environment (repeatable; a command job's, or the "
               "worker's own)");
  app.add_option("--progress-format", j->progress_format,
                 "command mode: " + progress::ProgressFormatNames(" | ", " | "))
      ->capture_default_str();
  app.add_option("--master-addr", j->master_addr, "command mode: MASTER_ADDR (rank 0's address)");
  app.add_flag("--slurm-env", j->slurm_env,
               "command mode: also set SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID");
  app.add_option("command", j->command,
                 "command mode: the program (absolute path) and its arguments, after --");
}

}  // namespace fl::workloads
