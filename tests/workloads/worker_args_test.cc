// faultline-worker's command line (workloads/worker_args.h): what ToArgv writes, AddWorkerFlags
// reads back as the same invocation; the defaults of both sides agree.
#include "workloads/worker_args.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <catch2/catch.hpp>

namespace fl::workloads {
namespace {

WorkerInvocation Parse(const std::vector<std::string>& args) {
  CLI::App app{"test"};
  WorkerInvocation inv;
  AddWorkerFlags(app, &inv);
  std::vector<std::string> argv = {"faultline-worker"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<const char*> cargv;
  for (const auto& a : argv) cargv.push_back(a.c_str());
  app.parse(static_cast<int>(cargv.size()), cargv.data());
  return inv;
}

bool Has(const std::vector<std::string>& argv, const std::string& flag) {
  return std::find(argv.begin(), argv.end(), flag) != argv.end();
}

TEST_CASE("worker args: the defaults write nothing and parse back as the defaults", "[unit]") {
  const WorkerInvocation d;
  CHECK(d.ToArgv().empty());
  CHECK(Parse({}) == d);
  CHECK(d.rank.Nics() == std::vector<std::string>{"127.0.0.1"});
}

TEST_CASE("worker args: a workload job round-trips through ToArgv and AddWorkerFlags", "[unit]") {
  WorkerInvocation inv;
  inv.rank.rank = 3;
  inv.rank.world_size = 8;
  inv.rank.nics = {"10.0.0.1", "eth1"};
  inv.rank.telemetry = "/run/fl/agent.sock";
  inv.rank.store_token_file = "/run/fl/token";
  inv.rank.local_rank = 1;
  inv.rank.local_world_size = 4;
  inv.rank.log_dir = "/var/run/fl/ranks";
  WorkerJobArgs& j = inv.job;
  j.job_id = "run-7-2";
  j.store = "tcp://10.0.0.9:4000";
  j.ccl = "gloo";
  j.workload = "training_step";
  j.size_bytes = 4096;
  j.dtype = "bfloat16";
  j.iterations = 500;
  j.first_iteration = 120;
  j.check_every = 5;
  j.collective_timeout_ns = 1500 * kNsPerMs;
  j.init_timeout_ns = 90 * kNsPerSec;
  j.workload_options = {{"compute", "5ms"}, {"compute_device", "cpu"}};
  j.ccl_options = {{"dead_timeout_ms", "2s"}};
  j.failover = false;
  j.on_rank_loss = "shrink";
  j.shrink_grace_ns = 0;  // given as 0 is not the same as not given
  j.env = {{"NCCL_IB_TIMEOUT", "22"}, {"EMPTY", ""}, {"WITH_EQ", "a=b"}};
  const std::vector<std::string> argv = inv.ToArgv();
  CHECK(Has(argv, "--store"));
  CHECK(!Has(argv, "--store-dir"));
  CHECK(Has(argv, "--no-failover"));
  CHECK(Parse(argv) == inv);

  // The agent's part comes first and is only what WorkerRankArgs holds.
  const std::vector<std::string> agent = inv.rank.ToArgv();
  REQUIRE(agent.size() <= argv.size());
  CHECK(std::equal(agent.begin(), agent.end(), argv.begin()));
  for (size_t k = 0; k < agent.size(); k += 2)
    CHECK(std::find(std::begin(kAgentOwnedWorkerFlags), std::end(kAgentOwnedWorkerFlags),
                    agent[k]) != std::end(kAgentOwnedWorkerFlags));
  for (const auto& a : inv.job.ToArgv())
    CHECK(std::find(std::begin(kAgentOwnedWorkerFlags), std::end(kAgentOwnedWorkerFlags), a) ==
          std::end(kAgentOwnedWorkerFlags));
}

TEST_CASE("worker args: a command job round-trips, its program after --", "[unit]") {
  WorkerInvocation inv;
  inv.rank.rank = 0;
  inv.rank.world_size = 2;
  inv.job.job_id = "run-1-0";
  inv.job.store = "/tmp/rdv";
  inv.job.duration_ns = 30 * kNsPerSec;
  inv.job.progress_format = "nccl-tests";
  inv.job.master_addr = "10.0.0.1";
  inv.job.slurm_env = true;
  inv.job.env = {{"MASTER_PORT", "29600"}};
  inv.job.command = {"/usr/bin/all_reduce_perf", "-b", "8", "--env", "x", "--", "-e"};
  const std::vector<std::string> argv = inv.ToArgv();
  CHECK(Has(argv, "--store-dir"));
  REQUIRE(argv.size() > inv.job.command.size());
  CHECK(std::equal(inv.job.command.rbegin(), inv.job.command.rend(), argv.rbegin()));
  CHECK(Parse(argv) == inv);
}

TEST_CASE("worker args: bad values are parse errors naming the flag", "[unit]") {
  CHECK_THROWS_AS(Parse({"--size", "lots"}), CLI::ParseError);
  CHECK_THROWS_AS(Parse({"--duration", "soon"}), CLI::ParseError);
  CHECK_THROWS_AS(Parse({"--shrink-grace", "soon"}), CLI::ParseError);
  CHECK_THROWS_AS(Parse({"--env", "NOVALUE"}), CLI::ParseError);
  CHECK_THROWS_AS(Parse({"--ccl-option", "=x"}), CLI::ParseError);
  CHECK_THROWS_AS(Parse({"--store", "/a", "--store-dir", "/b"}), CLI::ParseError);
  CHECK_THROWS_WITH(Parse({"--collective-timeout", "x"}), Catch::Contains("--collective-timeout"));
  // Human-written values are read as the worker always did.
  const WorkerInvocation inv = Parse({"--size", "16MiB", "--duration", "1.5s", "--store", "/d"});
  CHECK(inv.job.size_bytes == 16ull << 20);
  CHECK(inv.job.duration_ns == 1500 * kNsPerMs);
  CHECK(inv.job.store == "/d");
}

}  // namespace
}  // namespace fl::workloads
