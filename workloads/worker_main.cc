// faultline-worker: one rank of a resilience job. Joins its group through a rendezvous store
// (a directory, or a TcpStoreServer: --store), runs a workload over a CCL, and streams one sample
// per iteration plus the CCL's events as JSON lines to its agent (a Unix socket) or to stdout.
//
// Command mode (`-- PROGRAM ARGS...`): runs the command as this rank of a command job
// instead of a workload (workloads/command_runner.h), with the rank's environment (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, FAULTLINE_PROGRESS, ...,
// then --env), and reports its progress the same way.
//
// Exit codes: 0 the loop completed (mismatches, if any, are in the samples), 1 a collective
// failed (the communicator broke: fail-stop; with --on-rank-loss shrink, a failure the
// survivors could not shrink away, or this rank was left out of the shrunk group), 2 bad
// arguments (also --on-rank-loss shrink with a CCL that cannot shrink), 3 could not join.
// Command mode: the command's exit code (128 + signal), 0 when the worker ended it (its
// iterations or duration reached), 127 when it could not be started.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "ccl_under_test/api/launch_env.h"
#include "ccl_under_test/api/rendezvous.h"
#include "ccl_under_test/tools/ccl_builtin.h"
#include "ccl_under_test/tools/ccl_plugins.h"
#include "common/log.h"
#include "common/main_guard.h"
#include "common/units.h"
#include "workloads/command_runner.h"
#include "workloads/worker.h"
#include "workloads/workload_plugins.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

int ConnectUnix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Where samples and events go: the agent's telemetry socket, else stdout (-1: cannot
// connect, said on stderr). Also installs the stop handlers: from here on a SIGTERM or
// SIGINT ends the job in order, and a closed socket is an error, not a signal.
int OpenTelemetry(const std::string& telemetry) {
  int out_fd = 1;
  if (!telemetry.empty()) {
    out_fd = ConnectUnix(telemetry);
    if (out_fd < 0) {
      std::fprintf(stderr, "faultline-worker: cannot connect to telemetry socket %s: %s\n",
                   telemetry.c_str(), std::strerror(errno));
      return -1;
    }
  }
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  signal(SIGPIPE, SIG_IGN);
  return out_fd;
}

int WorkerMain(int argc, char** argv) {
  using namespace fl;
  log::ConfigureFromEnv();
  CLI::App app{
      "faultline-worker: one rank of a resilience job (normally started by faultline-agent).\n"
      "Runs a workload over a collective library and reports a sample per iteration.\n\n"
      "Exit codes: 0 completed, 1 a collective failed, 2 bad arguments, 3 could not join."};
  int rank = 0, world = 1;
  std::string job_id = "job", store_dir, store_spec, store_token_file, ccl_name = "ftccl",
              workload_name = "allreduce_loop";
  std::string size = "16MiB", dtype = "float32", duration = "0", telemetry, coll_timeout = "10s",
              init_timeout = "30s";
  std::vector<std::string> nics = {"127.0.0.1"};
  uint64_t iterations = 0, check_every = 1, first_iteration = 0;
  bool no_failover = false;
  std::string on_rank_loss = "abort", shrink_grace;
  std::vector<std::string> ccl_options, workload_options;
  std::vector<std::string> env_kv, command;
  std::string progress_format = "lines", log_dir, master_addr;
  int local_rank = -1, local_world = 0;
  bool slurm_env = false;
  auto* rank_opt = app.add_option(
      "--rank", rank,
      "this rank (default: from the launcher: FL_RANK, RANK, OMPI_COMM_WORLD_RANK or "
      "SLURM_PROCID; see docs/ftccl.md)");
  auto* world_opt = app.add_option("--world-size", world,
                                   "number of ranks in the job (default: from the launcher)");
  app.add_option("--job-id", job_id, "job id: keys in the rendezvous store")->capture_default_str();
  auto* store_opt = app.add_option(
      "--store", store_spec, "rendezvous store: tcp://HOST:PORT (with --store-token-file) or DIR");
  app.add_option("--store-token-file", store_token_file,
                 "file holding the tcp:// store's shared token (0600)");
  auto* dir_opt = app.add_option("--store-dir", store_dir,
                                 "rendezvous directory shared by all ranks (= --store DIR)");
  store_opt->excludes(dir_opt);
  app.add_option("--nics", nics,
                 "local NICs, one per rail, rail order: IPv4 addresses or interface names")
      ->delimiter(',');
  app.add_option("--ccl", ccl_name, "collective library: ftccl | gloo | nccl")
      ->capture_default_str();
  app.add_option("--workload", workload_name, "allreduce_loop | training_step | moe_alltoall")
      ->capture_default_str();
  app.add_option("--size", size, "per-rank message size")->capture_default_str();
  app.add_option("--dtype", dtype, "float32 | float16 | bfloat16 | int32 | int64")
      ->capture_default_str();
  app.add_option("--iterations", iterations, "iterations to run (or --duration)");
  app.add_option("--duration", duration, "how long to run, e.g. 30s (or --iterations)");
  app.add_option("--first-iteration", first_iteration,
                 "resume at this iteration (after a restart)");
  app.add_option("--check-every", check_every, "verify the result every k iterations")
      ->capture_default_str();
  app.add_option("--collective-timeout", coll_timeout, "deadline of one collective")
      ->capture_default_str();
  app.add_option("--init-timeout", init_timeout, "deadline for joining the group")
      ->capture_default_str();
  app.add_option("--workload-option", workload_options,
                 "the workload's options, key=value (repeatable; `faultline workloads` lists "
                 "them): " +
                     workloads::WorkloadOptionSummary())
      ->allow_extra_args(false);
  app.add_option("--ccl-option", ccl_options,
                 "the CCL's options, key=value (repeatable; `faultline ccls` lists them): " +
                     ccl::CclOptionSummary())
      ->allow_extra_args(false);
  app.add_flag("--no-failover", no_failover, "fail-stop mode: the first path fault fails the job");
  app.add_option("--on-rank-loss", on_rank_loss,
                 "when a collective fails because a peer is gone: abort (fail-stop) | shrink "
                 "(the survivors shrink the communicator and go on; CCLs with Shrink only)")
      ->capture_default_str();
  app.add_option("--shrink-grace", shrink_grace,
                 "shrink: how long survivors wait for each other (default: the collective "
                 "timeout + 5s)");
  app.add_option("--telemetry", telemetry,
                 "Unix socket of the agent (default: JSON lines on stdout)");
  // One value per --env / --ccl-option: CLI11 lets a vector option swallow the arguments
  // after it, and with them a command job's "--" and the command's own options.
  app.add_option("--env", env_kv,
                 "NAME=VALUE for this rank's environment (repeatable; a command job's, or the "
                 "worker's own)")
      ->allow_extra_args(false);
  app.add_option("--progress-format", progress_format, "command mode: nccl-tests | lines | exit")
      ->capture_default_str();
  app.add_option("--log-dir", log_dir,
                 "where this rank's log (rank-N.log) and a command job's rank-N.stdout/.stderr "
                 "are kept (default: stderr)");
  app.add_option("--master-addr", master_addr, "command mode: MASTER_ADDR (rank 0's address)");
  app.add_option("--local-rank", local_rank, "command mode: LOCAL_RANK");
  app.add_option("--local-world-size", local_world, "command mode: LOCAL_WORLD_SIZE");
  app.add_flag("--slurm-env", slurm_env,
               "command mode: also set SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID");
  app.add_option("command", command,
                 "command mode: the program (absolute path) and its "
                 "arguments, after --");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is 0; every bad argument (unknown, missing value, --store with --store-dir) is 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  auto bad_args = [](const Status& st) {
    std::fprintf(stderr, "faultline-worker: %s\n", st.message().c_str());
    return 2;
  };
  auto who =
      ccl::ResolveRank(rank_opt->count() ? std::optional<int>(rank) : std::nullopt,
                       world_opt->count() ? std::optional<int>(world) : std::nullopt,
                       [](const char* n) { return static_cast<const char*>(std::getenv(n)); });
  if (!who.ok()) {
    if (who.status().code() == Code::kNotFound)
      return bad_args(
          InvalidArgumentError("give --rank and --world-size, or start it under a launcher (" +
                               who.status().message() + ")"));
    return bad_args(who.status());
  }
  rank = who->rank;
  world = who->world_size;
  log::SetContext({"", "", rank});
  // With --log-dir (every rank an agent starts), what this rank logs -- its own lines and the
  // CCL's warnings -- goes to rank-N.log there instead of the agent's terminal; the agent
  // sends its tail to the coordinator when the rank exits badly (docs/operations.md).
  if (!log_dir.empty()) {
    mkdir(log_dir.c_str(), 0755);  // EEXIST is fine
    const std::string path = workloads::RankLogPath(log_dir, rank, "log");
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      std::fprintf(stderr, "faultline-worker: cannot open %s: %s\n", path.c_str(),
                   std::strerror(errno));
      return 3;
    }
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  std::map<std::string, std::string> job_env;
  for (const auto& kv : env_kv) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return bad_args(InvalidArgumentError("--env wants NAME=VALUE, got '" + kv + "'"));
    job_env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!command.empty()) {
    auto dur = ParseDuration(duration);
    if (!dur.ok()) return bad_args(dur.status());
    workloads::CommandOptions co;
    co.argv = command;
    co.rank = rank;
    co.progress_format = progress_format;
    if (co.progress_format != "nccl-tests" && co.progress_format != "lines" &&
        co.progress_format != "exit")
      return bad_args(InvalidArgumentError("--progress-format nccl-tests|lines|exit"));
    co.log_dir = log_dir;
    co.iterations = iterations;
    co.duration_ns = *dur;
    co.first_iteration = first_iteration;
    const int lr = local_rank >= 0 ? local_rank : 0;
    const int lw = local_world > 0 ? local_world : 1;
    std::string nic_csv;
    for (const auto& n : nics) nic_csv += (nic_csv.empty() ? "" : ",") + n;
    co.env = {{"RANK", std::to_string(rank)},
              {"WORLD_SIZE", std::to_string(world)},
              {"LOCAL_RANK", std::to_string(lr)},
              {"LOCAL_WORLD_SIZE", std::to_string(lw)},
              {"MASTER_ADDR", master_addr.empty() ? nics.front() : master_addr},
              {"MASTER_PORT", "29500"},
              {"FL_JOB_ID", job_id},
              {"FL_NICS", nic_csv},
              {"PYTHONUNBUFFERED", "1"}};
    if (!store_dir.empty()) co.env["FL_RENDEZVOUS"] = store_dir;
    if (store_opt->count() && store_spec.rfind("tcp://", 0) != 0)
      co.env["FL_RENDEZVOUS"] = store_spec;
    if (slurm_env) {
      co.env["SLURM_PROCID"] = std::to_string(rank);
      co.env["SLURM_NTASKS"] = std::to_string(world);
      co.env["SLURM_NPROCS"] = std::to_string(world);
      co.env["SLURM_LOCALID"] = std::to_string(lr);
    }
    for (const auto& [k, v] : job_env) co.env[k] = v;  // the job's env last (MASTER_PORT...)
    const int out_fd = OpenTelemetry(telemetry);
    if (out_fd < 0) return 3;
    workloads::JsonLinesSink sink(out_fd, rank);
    sink.OnWorkerEvent("worker_start",
                       "{\"pid\":" + std::to_string(getpid()) + ",\"mode\":\"command\"}");
    workloads::CommandResult r = workloads::RunCommand(co, sink, g_stop);
    sink.OnWorkerEvent("worker_exit", "{\"code\":" + std::to_string(r.exit_code) +
                                          ",\"iterations\":" + std::to_string(r.progress_units) +
                                          "}");
    return r.exit_code;
  }
  for (const auto& [k, v] : job_env) setenv(k.c_str(), v.c_str(), /*overwrite=*/1);
  if (store_opt->count() == 0 && dir_opt->count() == 0)
    return bad_args(InvalidArgumentError("give --store SPEC or --store-dir DIR"));
  auto store = ccl::OpenStore(store_opt->count() ? store_spec : store_dir, store_token_file);
  if (!store.ok()) return bad_args(store.status());
  auto nic_addrs = ccl::ResolveNics(nics);
  if (!nic_addrs.ok()) return bad_args(nic_addrs.status());

  workloads::WorkloadConfig wc;
  auto bytes = ParseBytes(size);
  auto dt = ccl::ParseDataType(dtype);
  auto dur = ParseDuration(duration);
  auto ct = ParseDuration(coll_timeout);
  auto it = ParseDuration(init_timeout);
  auto orl = workloads::ParseOnRankLoss(on_rank_loss);
  auto grace = ParseDuration(shrink_grace.empty() ? "0" : shrink_grace);
  for (const Status* s : {&bytes.status(), &dt.status(), &dur.status(), &ct.status(), &it.status(),
                          &orl.status(), &grace.status()}) {
    if (!s->ok()) {
      std::fprintf(stderr, "faultline-worker: %s\n", s->message().c_str());
      return 2;
    }
  }
  if ((iterations == 0) == (*dur == 0)) {
    std::fprintf(stderr, "faultline-worker: give exactly one of --iterations or --duration\n");
    return 2;
  }
  wc.size_bytes = *bytes;
  wc.dtype = *dt;
  wc.collective_timeout = *ct;

  const int out_fd = OpenTelemetry(telemetry);
  if (out_fd < 0) return 3;
  workloads::JsonLinesSink sink(out_fd, rank);

  ccl::CclRegistry ccls("ccl");
  workloads::WorkloadRegistry wls("workload");
  if (Status s = ccl::RegisterBuiltinCcls(ccls); !s.ok()) return 3;
  if (Status s = workloads::RegisterBuiltinWorkloads(wls); !s.ok()) return 3;
  // `flag` key=value options checked against the schema the plug-in registered with; nullopt
  // (said on stderr) when one is not key=value or the schema refuses it.
  auto parse_options = [](const char* flag, const OptionSchema& schema,
                          const std::vector<std::string>& given) -> std::optional<OptionValues> {
    std::map<std::string, std::string> text;
    for (const auto& kv : given) {
      auto split = SplitKeyValue(kv);
      if (!split.ok()) {
        std::fprintf(stderr, "faultline-worker: %s %s\n", flag, split.status().message().c_str());
        return std::nullopt;
      }
      text[split->first] = split->second;
    }
    auto parsed = schema.Parse(text);
    if (!parsed.ok()) {
      std::fprintf(stderr, "faultline-worker: %s: %s\n", flag, parsed.status().message().c_str());
      return std::nullopt;
    }
    return *std::move(parsed);
  };
  // The workload's options, handed to its factory typed.
  const OptionSchema* wl_schema = wls.Schema(workload_name);
  if (!wl_schema) {
    std::fprintf(stderr, "faultline-worker: %s\n",
                 wls.Create(workload_name, OptionValues{}).status().message().c_str());
    return 2;
  }
  std::optional<OptionValues> wl_options =
      parse_options("--workload-option", *wl_schema, workload_options);
  if (!wl_options) return 2;
  auto workload = wls.Create(workload_name, *wl_options);
  if (!workload.ok()) {
    std::fprintf(stderr, "faultline-worker: %s\n", workload.status().message().c_str());
    return 2;
  }

  // The CCL's options, checked against the schema it registered with and handed to its
  // factory typed (CommConfig::options).
  const OptionSchema* schema = ccls.Schema(ccl_name);
  if (!schema) {
    std::fprintf(stderr, "faultline-worker: %s\n",
                 ccls.Create(ccl_name, ccl::CommConfig{}).status().message().c_str());
    return 2;
  }
  std::optional<OptionValues> options = parse_options("--ccl-option", *schema, ccl_options);
  if (!options) return 2;

  ccl::CommConfig cfg;
  cfg.rank = rank;
  cfg.world_size = world;
  cfg.job_id = job_id;
  cfg.store = store->get();
  cfg.nics = *nic_addrs;
  cfg.init_timeout = *it;
  cfg.failover = !no_failover;
  cfg.events = &sink;
  cfg.options = *std::move(options);
  sink.OnWorkerEvent("worker_start", "{\"pid\":" + std::to_string(getpid()) + "}");
  auto comm = ccls.Create(ccl_name, cfg);
  if (!comm.ok()) {
    FL_LOG(kError, "worker") << "cannot join the group: " << comm.status().ToString();
    sink.OnWorkerEvent("worker_exit", "{\"code\":3}");
    return 3;
  }
  if (*orl == workloads::OnRankLoss::kShrink) {
    // Before the run: a CCL (or a libnccl) that cannot shrink is a bad job, not a failure.
    if (Status s = (*comm)->ShrinkSupport(); !s.ok()) {
      FL_LOG(kError, "worker") << "--on-rank-loss shrink: " << s.message();
      sink.OnWorkerEvent("worker_exit", "{\"code\":2}");
      return 2;
    }
  }
  if (Status s = (*workload)->Init(comm->get(), wc); !s.ok()) {
    FL_LOG(kError, "worker") << s.ToString();
    return 3;
  }
  workloads::LoopOptions lo;
  lo.iterations = iterations;
  lo.duration_ns = *dur;
  lo.check_every = check_every;
  lo.first_iteration = first_iteration;
  lo.comm = comm->get();
  std::unique_ptr<ccl::Communicator> shrunk;  // after a shrink: the workload's communicator
  lo.on_rank_loss = *orl;
  lo.shrink.store = store->get();
  lo.shrink.key_prefix = "shrink/" + job_id;
  lo.shrink.grace = shrink_grace.empty() ? *ct + 5 * kNsPerSec : *grace;
  lo.shrink.timeout = *it + lo.shrink.grace;
  lo.shrink.workload = wc;
  lo.shrink.shrunk = &shrunk;
  auto result = workloads::RunLoop(**workload, rank, lo, sink, g_stop);
  int code = result.ok() ? 0 : 1;
  if (!result.ok()) FL_LOG(kError, "worker") << result.status().ToString();
  sink.OnWorkerEvent("worker_exit", "{\"code\":" + std::to_string(code) + ",\"iterations\":" +
                                        std::to_string(result.ok() ? result->iterations : 0) + "}");
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  return fl::GuardedMain("faultline-worker", [&] { return WorkerMain(argc, argv); });
}
