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
#include "workloads/progress/formats.h"
#include "workloads/worker.h"
#include "workloads/worker_args.h"
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
  using workloads::WorkerInvocation, workloads::WorkerJobArgs, workloads::WorkerRankArgs;
  log::ConfigureFromEnv();
  CLI::App app{
      "faultline-worker: one rank of a resilience job (normally started by faultline-agent).\n"
      "Runs a workload over a collective library and reports a sample per iteration.\n\n"
      "Exit codes: 0 completed, 1 a collective failed, 2 bad arguments, 3 could not join."};
  WorkerInvocation inv;
  AddWorkerFlags(app, &inv);
  // The plug-ins' option names, for --help.
  for (auto [flag, names] : {std::pair{"--workload-option", workloads::WorkloadOptionSummary()},
                             std::pair{"--ccl-option", ccl::CclOptionSummary()}}) {
    CLI::Option* o = app.get_option(flag);
    o->description(o->get_description() + ": " + names);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is 0; every bad argument (unknown, missing value, --store with --store-dir) is 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  const WorkerRankArgs& ra = inv.rank;
  const WorkerJobArgs& ja = inv.job;
  auto bad_args = [](const Status& st) {
    std::fprintf(stderr, "faultline-worker: %s\n", st.message().c_str());
    return 2;
  };
  auto who = ccl::ResolveRank(ra.rank, ra.world_size, [](const char* n) {
    return static_cast<const char*>(std::getenv(n));
  });
  if (!who.ok()) {
    if (who.status().code() == Code::kNotFound)
      return bad_args(
          InvalidArgumentError("give --rank and --world-size, or start it under a launcher (" +
                               who.status().message() + ")"));
    return bad_args(who.status());
  }
  const int rank = who->rank;
  const int world = who->world_size;
  log::SetContext({"", "", rank});
  // With --log-dir (every rank an agent starts), what this rank logs -- its own lines and the
  // CCL's warnings -- goes to rank-N.log there instead of the agent's terminal; the agent
  // sends its tail to the coordinator when the rank exits badly (docs/operations.md).
  if (!ra.log_dir.empty()) {
    mkdir(ra.log_dir.c_str(), 0755);  // EEXIST is fine
    const std::string path = workloads::RankLogPath(ra.log_dir, rank, "log");
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      std::fprintf(stderr, "faultline-worker: cannot open %s: %s\n", path.c_str(),
                   std::strerror(errno));
      return 3;
    }
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  const std::vector<std::string> nics = ra.Nics();
  if (!ja.command.empty()) {
    workloads::CommandOptions co;
    co.argv = ja.command;
    co.rank = rank;
    co.progress_format = ja.progress_format;
    if (!workloads::progress::FindProgressFormat(co.progress_format))
      return bad_args(InvalidArgumentError("--progress-format " +
                                           workloads::progress::ProgressFormatNames("|", "|")));
    co.log_dir = ra.log_dir;
    co.iterations = ja.iterations;
    co.duration_ns = ja.duration_ns;
    co.first_iteration = ja.first_iteration;
    const int lr = ra.local_rank.value_or(0) >= 0 ? ra.local_rank.value_or(0) : 0;
    const int lw = ra.local_world_size.value_or(1) > 0 ? ra.local_world_size.value_or(1) : 1;
    std::string nic_csv;
    for (const auto& n : nics) nic_csv += (nic_csv.empty() ? "" : ",") + n;
    co.env = {{"RANK", std::to_string(rank)},
              {"WORLD_SIZE", std::to_string(world)},
              {"LOCAL_RANK", std::to_string(lr)},
              {"LOCAL_WORLD_SIZE", std::to_string(lw)},
              {"MASTER_ADDR", ja.master_addr.empty() ? nics.front() : ja.master_addr},
              {"MASTER_PORT", "29500"},
              {"FL_JOB_ID", ja.job_id},
              {"FL_NICS", nic_csv},
              {"PYTHONUNBUFFERED", "1"}};
    // A directory store is the command's rendezvous too (a tcp:// one is the worker's alone).
    if (!ja.store.empty() && ja.store.rfind("tcp://", 0) != 0) co.env["FL_RENDEZVOUS"] = ja.store;
    if (ja.slurm_env) {
      co.env["SLURM_PROCID"] = std::to_string(rank);
      co.env["SLURM_NTASKS"] = std::to_string(world);
      co.env["SLURM_NPROCS"] = std::to_string(world);
      co.env["SLURM_LOCALID"] = std::to_string(lr);
    }
    for (const auto& [k, v] : ja.env) co.env[k] = v;  // the job's env last (MASTER_PORT...)
    const int out_fd = OpenTelemetry(ra.telemetry);
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
  for (const auto& [k, v] : ja.env) setenv(k.c_str(), v.c_str(), /*overwrite=*/1);
  if (ja.store.empty())
    return bad_args(InvalidArgumentError("give --store SPEC or --store-dir DIR"));
  auto store = ccl::OpenStore(ja.store, ra.store_token_file);
  if (!store.ok()) return bad_args(store.status());
  auto nic_addrs = ccl::ResolveNics(nics);
  if (!nic_addrs.ok()) return bad_args(nic_addrs.status());

  workloads::WorkloadConfig wc;
  auto dt = ccl::ParseDataType(ja.dtype);
  auto orl = workloads::ParseOnRankLoss(ja.on_rank_loss);
  for (const Status* s : {&dt.status(), &orl.status()}) {
    if (!s->ok()) {
      std::fprintf(stderr, "faultline-worker: %s\n", s->message().c_str());
      return 2;
    }
  }
  if ((ja.iterations == 0) == (ja.duration_ns == 0)) {
    std::fprintf(stderr, "faultline-worker: give exactly one of --iterations or --duration\n");
    return 2;
  }
  wc.size_bytes = ja.size_bytes;
  wc.dtype = *dt;
  wc.collective_timeout = ja.collective_timeout_ns;

  const int out_fd = OpenTelemetry(ra.telemetry);
  if (out_fd < 0) return 3;
  workloads::JsonLinesSink sink(out_fd, rank);

  ccl::CclRegistry ccls("ccl");
  workloads::WorkloadRegistry wls("workload");
  if (Status s = ccl::RegisterBuiltinCcls(ccls); !s.ok()) return 3;
  if (Status s = workloads::RegisterBuiltinWorkloads(wls); !s.ok()) return 3;
  // `flag`'s key=value options checked against the schema the plug-in registered with; nullopt
  // (said on stderr) when the schema refuses them.
  auto parse_options =
      [](const char* flag, const OptionSchema& schema,
         const std::map<std::string, std::string>& given) -> std::optional<OptionValues> {
    auto parsed = schema.Parse(given);
    if (!parsed.ok()) {
      std::fprintf(stderr, "faultline-worker: %s: %s\n", flag, parsed.status().message().c_str());
      return std::nullopt;
    }
    return *std::move(parsed);
  };
  // The workload's options, handed to its factory typed.
  const OptionSchema* wl_schema = wls.Schema(ja.workload);
  if (!wl_schema) {
    std::fprintf(stderr, "faultline-worker: %s\n",
                 wls.Create(ja.workload, OptionValues{}).status().message().c_str());
    return 2;
  }
  std::optional<OptionValues> wl_options =
      parse_options("--workload-option", *wl_schema, ja.workload_options);
  if (!wl_options) return 2;
  auto workload = wls.Create(ja.workload, *wl_options);
  if (!workload.ok()) {
    std::fprintf(stderr, "faultline-worker: %s\n", workload.status().message().c_str());
    return 2;
  }

  // The CCL's options, checked against the schema it registered with and handed to its
  // factory typed (CommConfig::options).
  const OptionSchema* schema = ccls.Schema(ja.ccl);
  if (!schema) {
    std::fprintf(stderr, "faultline-worker: %s\n",
                 ccls.Create(ja.ccl, ccl::CommConfig{}).status().message().c_str());
    return 2;
  }
  std::optional<OptionValues> options = parse_options("--ccl-option", *schema, ja.ccl_options);
  if (!options) return 2;

  ccl::CommConfig cfg;
  cfg.rank = rank;
  cfg.world_size = world;
  cfg.job_id = ja.job_id;
  cfg.store = store->get();
  cfg.nics = *nic_addrs;
  cfg.init_timeout = ja.init_timeout_ns;
  cfg.failover = ja.failover;
  cfg.events = &sink;
  cfg.options = *std::move(options);
  sink.OnWorkerEvent("worker_start", "{\"pid\":" + std::to_string(getpid()) + "}");
  auto comm = ccls.Create(ja.ccl, cfg);
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
  lo.iterations = ja.iterations;
  lo.duration_ns = ja.duration_ns;
  lo.check_every = ja.check_every;
  lo.first_iteration = ja.first_iteration;
  lo.comm = comm->get();
  std::unique_ptr<ccl::Communicator> shrunk;  // after a shrink: the workload's communicator
  lo.on_rank_loss = *orl;
  lo.shrink.store = store->get();
  lo.shrink.key_prefix = "shrink/" + ja.job_id;
  lo.shrink.grace = ja.shrink_grace_ns.value_or(ja.collective_timeout_ns + 5 * kNsPerSec);
  lo.shrink.timeout = ja.init_timeout_ns + lo.shrink.grace;
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
