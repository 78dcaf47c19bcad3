// ftccl-perf: an nccl-tests-compatible collective benchmark with a correctness check: the same
// options (-b -e -f -i -n -w -c -N -d -o -r -T), output format and exit codes as nccl-tests'
// all_reduce_perf and friends (docs/ftccl.md "ftccl-perf").
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "ccl_under_test/api/launch_env.h"
#include "ccl_under_test/ftccl/device_info.h"
#include "ccl_under_test/tools/perf.h"
#include "common/log.h"
#include "common/main_guard.h"
#include "common/units.h"

namespace {

// nccl-tests' exit codes: 0 passed; 1 wrong results (or the average bus bandwidth under 90% of
// NCCL_TESTS_MIN_BW; also testInternalError); 2 a CUDA failure (testCudaError); 3 a failure
// of the collective library (testNcclError); 255 a bad argument (nccl-tests' `return -1`).
constexpr int kExitOk = 0;
constexpr int kExitWrong = 1;
constexpr int kExitCuda = 2;
constexpr int kExitCcl = 3;
constexpr int kExitUsage = 255;

std::atomic<bool> g_stop{false};

// The first SIGTERM/SIGINT ends the run after the current size (the ranks agree on it), with
// the summary; a second one kills the process as the default action would.
void OnStopSignal(int sig) {
  if (g_stop.exchange(true)) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

std::string ShortHostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  std::string h(buf);
  return h.substr(0, h.find('.'));
}

std::string Env(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

int PerfMain(int argc, char** argv) {
  fl::log::ConfigureFromEnv();
  CLI::App app{
      "ftccl-perf: collective benchmark with correctness check, nccl-tests compatible.\n"
      "  ftccl-perf [COLLECTIVE] [options]: COLLECTIVE is an nccl-tests program name\n"
      "  (all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, alltoall_perf)\n"
      "  or allreduce, ..., barrier; also --collective, or the program's own name when it is\n"
      "  run through a link called all_reduce_perf etc. Prints nccl-tests' table (size, count,\n"
      "  type, redop, root, then time, algbw, busbw, #wrong out of place and in place).\n"
      "All ranks in this process: --ranks N --nics K (loopback NICs 127.0.<k+1>.<rank+1>).\n"
      "One process per rank: --rank R --world-size N --store tcp://HOST:PORT\n"
      "--store-token-file F (or --rendezvous DIR) --nic-addrs A,B (addresses or interfaces).\n"
      "Rank and size default to the launcher's variables (Slurm, torchrun, mpirun, or\n"
      "FL_RANK/FL_WORLD_SIZE); also FL_RENDEZVOUS, FL_JOB_ID, FL_NICS.\n"
      "Exit: 0 passed, 1 wrong results (or under NCCL_TESTS_MIN_BW), 2 CUDA failure,\n"
      "3 collective library failure, 255 bad arguments (as nccl-tests)."};
  bool devices = false;
  fl::ccl::PerfOptions o;
  std::string min_b = "8", max_b = "64MiB", step_b = "1MiB", coll, coll_pos, dtype = "float",
              op = "sum";
  std::string json_path, memory = "host", nics_csv = Env("FL_NICS"), timeout = "60s";
  int check = 1, nthreads = 1, ngpus = 1;
  bool no_failover = false;
  o.rendezvous_dir = Env("FL_RENDEZVOUS");
  o.job_id = Env("FL_JOB_ID", "perf");
  app.add_option("collective", coll_pos, "the collective (nccl-tests program name or ours)");
  app.add_flag("--devices", devices,
               "list the CUDA and RDMA devices this build can use, then exit");
  app.add_option("-b,--minbytes", min_b, "smallest message size (e.g. 8, 1M, 1MiB)");
  app.add_option("-e,--maxbytes", max_b, "largest message size");
  app.add_option("-f,--stepfactor", o.factor, "multiply the size by this between steps (> 1)");
  app.add_option("-i,--stepbytes", step_b, "add this between steps when -f is 1");
  app.add_option("-n,--iters", o.iters, "timed iterations per size");
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations per size");
  app.add_option("-N,--run_cycles", o.run_cycles,
                 "sweeps over all sizes (0 = until SIGTERM/SIGINT, then the summary)");
  app.add_option("-c,--check", check, "check results (#wrong): 0 no, else yes");
  app.add_flag("--check-all", o.check_all, "check every timed iteration, not just the first call");
  app.add_option("--collective,--coll", coll,
                 "all_reduce_perf|all_gather_perf|reduce_scatter_perf|broadcast_perf|"
                 "alltoall_perf (or allreduce, allgather, reducescatter, broadcast, alltoall, "
                 "barrier)");
  app.add_option("-o,--op", op, "sum|max|min|all");
  app.add_option("-d,--datatype,--dtype", dtype, "float|half|bfloat16|int32|int64|all");
  app.add_option("-r,--root", o.root, "Broadcast's root rank");
  app.add_option("-t,--nthreads", nthreads, "nccl-tests' threads per process: only 1 (--ranks)");
  app.add_option("-g,--ngpus", ngpus, "nccl-tests' GPUs per thread: only 1");
  app.add_option("--ccl", o.ccl, "ftccl|gloo|nccl");
  app.add_option("--memory", memory, "host|cuda");
  app.add_option("-T,--timeout", timeout,
                 "per-collective timeout (e.g. 10s; a bare number is seconds, as nccl-tests)");
  app.add_option("--algo", o.algorithm,
                 "algorithm of the measured calls; ftccl AllReduce: auto (default: hier when "
                 "the ranks of every host share its NICs evenly), ring, hier");
  app.add_flag("--no-failover", no_failover, "fail-stop: the first path fault fails the job");
  app.add_option("--json", json_path, "also write the results as JSON to this file ('-' = stdout)");
  app.add_option("--ranks", o.ranks, "run N ranks as threads of this process (loopback)");
  app.add_option("--nics", o.nics, "loopback NICs per rank with --ranks");
  auto* rank_opt =
      app.add_option("--rank", o.rank, "this process's rank (default: the launcher's variables)");
  auto* world_opt = app.add_option("--world-size", o.world_size,
                                   "number of ranks (default: the launcher's variables)");
  auto* rdv_opt = app.add_option("--rendezvous,--store-dir", o.rendezvous_dir,
                                 "rendezvous directory shared by the ranks");
  auto* store_opt = app.add_option("--store", o.store_spec,
                                   "rendezvous store: tcp://HOST:PORT (with --store-token-file) "
                                   "or a directory");
  store_opt->excludes(rdv_opt);
  app.add_option("--store-token-file", o.store_token_file,
                 "file holding the tcp:// store's shared token (0600)");
  app.add_option("--job-id", o.job_id, "job id (keys in the rendezvous)");
  app.add_option("--nic-addrs", nics_csv,
                 "this rank's NICs, rail order, comma-separated: IPv4 addresses or interface "
                 "names");
  app.add_option("--events", o.events_path, "append the CCL's events as JSON lines to this file");
  app.add_option("--progress", o.progress_path, "append one line per finished iteration");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is 0; every bad argument (unknown, missing value, --store with --store-dir) is
    // nccl-tests' -1.
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (store_opt->count() && !rdv_opt->count()) o.rendezvous_dir.clear();  // FL_RENDEZVOUS
  if (devices) {
    std::fputs(fl::ccl::ftccl::DescribeDevices().c_str(), stdout);
    return kExitOk;
  }
  auto fail = [](const fl::Status& s) {
    std::fprintf(stderr, "ftccl-perf: %s\n", s.ToString().c_str());
    return s.code() == fl::Code::kInvalidArgument ? kExitUsage : kExitCcl;
  };
  if (!coll.empty() && !coll_pos.empty() && coll != coll_pos)
    return fail(
        fl::InvalidArgumentError("two collectives: '" + coll_pos + "' and --collective " + coll));
  if (coll.empty()) coll = coll_pos;
  if (coll.empty()) {
    // Run through a link named like an nccl-tests program (all_reduce_perf -> ftccl-perf).
    std::string self = argv[0];
    self = self.substr(self.rfind('/') + 1);
    coll = self.size() > 5 && self.substr(self.size() - 5) == "_perf" ? self : "all_reduce_perf";
  }
  if (nthreads != 1 || ngpus != 1)
    return fail(fl::InvalidArgumentError(
        "-t/-g: ftccl-perf runs one rank per process (or --ranks N threads): give -t 1 -g 1"));
  if (std::all_of(timeout.begin(), timeout.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) &&
      !timeout.empty())
    timeout += "s";  // nccl-tests' -T is seconds
  auto b = fl::ParseBytes(min_b);
  auto e = fl::ParseBytes(max_b);
  auto step = fl::ParseBytes(step_b);
  auto c = fl::ccl::ParsePerfCollective(coll);
  auto t = fl::ccl::ParsePerfTypes(dtype);
  auto r = fl::ccl::ParsePerfOps(op);
  auto to = fl::ParseDuration(timeout);
  for (const fl::Status* s : {&b.status(), &e.status(), &step.status(), &c.status(), &t.status(),
                              &r.status(), &to.status()}) {
    if (!s->ok()) return fail(*s);
  }
  if (memory != "host" && memory != "cuda")
    return fail(fl::InvalidArgumentError("--memory host|cuda"));
  if (o.run_cycles < 0) return fail(fl::InvalidArgumentError("-N: 0 (forever) or more"));
  o.min_bytes = *b;
  o.max_bytes = *e;
  o.step_bytes = *step;
  o.coll = *c;
  o.types = *t;
  o.ops = *r;
  o.timeout = *to;
  o.check = check != 0;
  o.failover = !no_failover;
  o.memory = memory == "cuda" ? fl::ccl::MemoryKind::kCuda : fl::ccl::MemoryKind::kHost;
  {
    std::string cur;
    for (char ch : nics_csv + ",") {
      if (ch == ',') {
        if (!cur.empty()) o.nic_addrs.push_back(cur);
        cur.clear();
      } else {
        cur.push_back(ch);
      }
    }
  }
  if (o.ranks == 0) {
    auto who = fl::ccl::ResolveRank(
        rank_opt->count() ? std::optional<int>(o.rank) : std::nullopt,
        world_opt->count() ? std::optional<int>(o.world_size) : std::nullopt,
        [](const char* n) { return static_cast<const char*>(std::getenv(n)); });
    if (who.ok()) {
      o.rank = who->rank;
      o.world_size = who->world_size;
    } else if (who.status().code() == fl::Code::kNotFound) {
      o.rank = 0;  // no launcher: a single process
      o.world_size = 1;
    } else {
      return fail(fl::InvalidArgumentError(who.status().message()));
    }
    auto resolved = fl::ccl::ResolveNics(o.nic_addrs);
    if (!resolved.ok()) return fail(resolved.status());
    o.nic_addrs = *resolved;
  }
  if (o.root < 0 || o.root >= (o.ranks > 0 ? o.ranks : o.world_size))
    return fail(fl::InvalidArgumentError("-r: the root must be a rank"));
  o.stop = &g_stop;
  std::signal(SIGTERM, OnStopSignal);
  std::signal(SIGINT, OnStopSignal);
  const bool print = o.ranks > 0 || o.rank == 0;
  auto res = fl::ccl::RunPerf(
      o,
      [&](const fl::ccl::PerfRow& row) {
        if (print) {
          std::fputs(fl::ccl::FormatPerfRow(o, row).c_str(), stdout);
          std::fflush(stdout);
        }
      },
      [&](const std::vector<std::string>& lines) {
        if (print) {
          std::fputs(fl::ccl::PerfHeader(o, lines).c_str(), stdout);
          std::fflush(stdout);
        }
      });
  if (!res.ok()) {
    // nccl-tests' failure line on stdout (what its output's readers look for), the status on
    // stderr.
    if (print) {
      std::printf("%s: Test CCL failure ftccl-perf '%s: %s'\n", ShortHostName().c_str(),
                  std::string(fl::CodeName(res.status().code())).c_str(),
                  res.status().message().c_str());
      std::fflush(stdout);
    }
    int code = fail(res.status());
    return res.status().code() == fl::Code::kFailedPrecondition ? kExitCuda : code;
  }
  const std::string min_bw_env = Env("NCCL_TESTS_MIN_BW");
  const double min_bw = min_bw_env.empty() ? 0 : std::atof(min_bw_env.c_str());
  if (print) {
    std::fputs(fl::ccl::PerfSummary(*res, min_bw).c_str(), stdout);
    std::fflush(stdout);
  }
  if (!json_path.empty() && print) {
    std::string j = fl::ccl::PerfJson(o, *res) + "\n";
    if (json_path == "-") {
      std::fputs(j.c_str(), stdout);
    } else {
      std::ofstream(json_path) << j;
    }
  }
  const bool slow = min_bw > 0 && fl::ccl::PerfAvgBusbw(*res) < min_bw * 0.9;
  return fl::ccl::PerfWrongResults(*res) > 0 || slow ? kExitWrong : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return fl::GuardedMain("ftccl-perf", [&] { return PerfMain(argc, argv); });
}
