// ftccl-perf: an nccl-tests-style collective benchmark with a correctness check.
#include <CLI/CLI.hpp>

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

std::string Env(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

int PerfMain(int argc, char** argv) {
  fl::log::ConfigureFromEnv();
  CLI::App app{
      "ftccl-perf: collective benchmark with correctness check (nccl-tests style).\n"
      "Prints size, time, algbw, busbw and #wrong per message size.\n"
      "All ranks in this process: --ranks N --nics K (loopback NICs 127.0.<k+1>.<rank+1>).\n"
      "One process per rank: --rank R --world-size N --store tcp://HOST:PORT\n"
      "--store-token-file F (or --rendezvous DIR) --nic-addrs A,B (addresses or interfaces).\n"
      "Rank and size default to the launcher's variables (Slurm, torchrun, mpirun, or\n"
      "FL_RANK/FL_WORLD_SIZE); also FL_RENDEZVOUS, FL_JOB_ID, FL_NICS."};
  bool devices = false;
  fl::ccl::PerfOptions o;
  std::string min_b = "8", max_b = "64MiB", coll = "allreduce", dtype = "float32", op = "sum";
  std::string json_path, memory = "host", nics_csv = Env("FL_NICS"), timeout = "60s";
  int check = 1;
  bool no_failover = false;
  o.rendezvous_dir = Env("FL_RENDEZVOUS");
  o.job_id = Env("FL_JOB_ID", "perf");
  app.add_flag("--devices", devices,
               "list the CUDA and RDMA devices this build can use, then exit");
  app.add_option("-b,--minbytes", min_b, "smallest message size (e.g. 8, 1MiB)");
  app.add_option("-e,--maxbytes", max_b, "largest message size");
  app.add_option("-f,--stepfactor", o.factor, "multiply the size by this between steps");
  app.add_option("-n,--iters", o.iters, "timed iterations per size");
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations per size");
  app.add_option("-c,--check", check, "check results (#wrong), 0 or 1");
  app.add_flag("--check-all", o.check_all, "check every timed iteration, not just the first call");
  app.add_option("--coll", coll, "allreduce|allgather|reducescatter|broadcast|alltoall|barrier");
  app.add_option("--op", op, "sum|max|min");
  app.add_option("--dtype,-d", dtype, "float32|float16|bfloat16|int32|int64");
  app.add_option("--ccl", o.ccl, "ftccl|gloo|nccl");
  app.add_option("--memory", memory, "host|cuda");
  app.add_option("--timeout", timeout, "per-collective timeout (e.g. 10s)");
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
    // --help is 0; every bad argument (unknown, missing value, --store with --store-dir) is 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (store_opt->count() && !rdv_opt->count()) o.rendezvous_dir.clear();  // FL_RENDEZVOUS
  if (devices) {
    std::fputs(fl::ccl::ftccl::DescribeDevices().c_str(), stdout);
    return 0;
  }
  auto fail = [](const fl::Status& s) {
    std::fprintf(stderr, "ftccl-perf: %s\n", s.ToString().c_str());
    return s.code() == fl::Code::kInvalidArgument ? 2 : 1;
  };
  auto b = fl::ParseBytes(min_b);
  auto e = fl::ParseBytes(max_b);
  auto c = fl::ccl::ParseCollective(coll);
  auto t = fl::ccl::ParseDataType(dtype);
  auto r = fl::ccl::ParseReduceOp(op);
  auto to = fl::ParseDuration(timeout);
  for (const fl::Status* s :
       {&b.status(), &e.status(), &c.status(), &t.status(), &r.status(), &to.status()}) {
    if (!s->ok()) return fail(*s);
  }
  if (memory != "host" && memory != "cuda")
    return fail(fl::InvalidArgumentError("--memory host|cuda"));
  o.min_bytes = *b;
  o.max_bytes = *e;
  o.coll = *c;
  o.type = *t;
  o.op = *r;
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
  bool print = o.ranks > 0 || o.rank == 0;
  if (print) std::fputs(fl::ccl::PerfHeader(o).c_str(), stdout);
  auto res = fl::ccl::RunPerf(o, [&](const fl::ccl::PerfRow& row) {
    if (print) {
      std::fputs(fl::ccl::FormatPerfRow(o, row).c_str(), stdout);
      std::fflush(stdout);
    }
  });
  if (!res.ok()) return fail(res.status());
  int64_t wrong = 0;
  for (const auto& row : res->rows) wrong += row.wrong > 0 ? row.wrong : 0;
  if (print)
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong),
                wrong ? "FAILED" : "OK");
  if (!json_path.empty() && print) {
    std::string j = fl::ccl::PerfJson(o, *res) + "\n";
    if (json_path == "-") {
      std::fputs(j.c_str(), stdout);
    } else {
      std::ofstream(json_path) << j;
    }
  }
  return wrong ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fl::GuardedMain("ftccl-perf", [&] { return PerfMain(argc, argv); });
}
