// A command job in a scenario (`job: {command: [...]}`) and job.env: what loads, and every
// mistake pointing at its file:line:col.
#include <catch2/catch.hpp>

#include "harness/scenario/scenario_loader.h"

namespace fl::harness {
namespace {

constexpr const char* kCommand = R"(name: cmd
lab:
  topology: /labs/rail.yaml
job:
  command: [/usr/bin/python3, train.py, --steps, "100"]
  env: {NCCL_IB_TIMEOUT: "18", MASTER_PORT: "29600"}
  ranks_per_host: 2
  progress: {format: nccl-tests}
  duration: 10s
  warmup_iterations: 3
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto p = s.find(from);
  REQUIRE(p != std::string::npos);
  return s.replace(p, from.size(), to);
}

std::string ErrorOf(const std::string& text) {
  auto s = ParseScenario(text, "x.yaml");
  REQUIRE_FALSE(s.ok());
  return s.status().message();
}

TEST_CASE("command job: a command, its env, ranks per host and progress format load", "[unit]") {
  auto s = ParseScenario(kCommand, "x.yaml");
  REQUIRE(s.ok());
  CHECK(s->job.command ==
        std::vector<std::string>{"/usr/bin/python3", "train.py", "--steps", "100"});
  CHECK(s->job.env.at("NCCL_IB_TIMEOUT") == "18");
  CHECK(s->job.env.at("MASTER_PORT") == "29600");
  CHECK(s->job.ranks_per_host == 2);
  CHECK(s->job.progress_format == "nccl-tests");
  CHECK(s->job.duration_ns == 10 * kNsPerSec);
  CHECK(s->job.warmup_iterations == 3);
  // A black box verifies nothing unless asked: exact correctness is not expected by default.
  CHECK_FALSE(s->expect.exact_correctness);
}

TEST_CASE(
    "command job: neither iterations nor duration runs until the command exits, the "
    "progress format defaults to lines",
    "[unit]") {
  auto s = ParseScenario(
      Replace(Replace(kCommand, "  duration: 10s\n", ""), "  progress: {format: nccl-tests}\n", ""),
      "x.yaml");
  REQUIRE(s.ok());
  CHECK(s->job.iterations == 0);
  CHECK(s->job.duration_ns == 0);
  CHECK(s->job.progress_format == "lines");
}

TEST_CASE("command job: mistakes point at their file:line:col", "[unit]") {
  CHECK(ErrorOf(Replace(kCommand, "[/usr/bin/python3, train.py, --steps, \"100\"]", "[]"))
            .rfind("x.yaml:5:12: command must name a program", 0) == 0);
  CHECK(ErrorOf(Replace(kCommand, "/usr/bin/python3", "python3"))
            .rfind("x.yaml:5:13: command[0] must be an absolute path", 0) == 0);
  CHECK(ErrorOf(Replace(kCommand, "NCCL_IB_TIMEOUT", "nccl-ib"))
            .rfind("x.yaml:6:9: env key 'nccl-ib' is not a variable name", 0) == 0);
  CHECK(ErrorOf(Replace(kCommand, "NCCL_IB_TIMEOUT", "RANK"))
            .rfind("x.yaml:6:9: env.RANK is set by faultline", 0) == 0);
  CHECK(ErrorOf(Replace(kCommand, "\"18\"", "[1, 2]"))
            .rfind("x.yaml:6:26: env values must be single values", 0) == 0);
  CHECK(ErrorOf(Replace(kCommand, "format: nccl-tests", "format: csv"))
            .rfind("x.yaml:8:22: progress.format must be nccl-tests, lines or exit", 0) == 0);
  CHECK(ErrorOf(Replace(kCommand, "ranks_per_host: 2", "ranks_per_host: 0"))
            .rfind("x.yaml:7:19: ranks_per_host", 0) == 0);
  CHECK(ErrorOf(Replace(kCommand, "  duration: 10s\n", "  duration: 10s\n  iterations: 5\n"))
            .rfind("x.yaml:5:3: a command job takes 'iterations' or 'duration'", 0) == 0);
  CHECK(ErrorOf(Replace(kCommand, "  ranks_per_host: 2\n", "  ranks_per_host: 2\n  size: 1MiB\n"))
            .rfind("x.yaml:8:9: 'size' configures faultline-worker's workload", 0) == 0);
  CHECK(ErrorOf(Replace(kCommand, "  ranks_per_host: 2\n", "  ranks_per_host: 2\n  cmd: x\n"))
            .rfind("x.yaml:8:3: unknown key 'cmd' in job", 0) == 0);
}

TEST_CASE("job.env applies to faultline-worker jobs too, command-only keys do not", "[unit]") {
  constexpr const char* kWorker = R"(name: w
lab:
  topology: /labs/rail.yaml
job:
  workload: allreduce_loop
  iterations: 10
  env: {FTCCL_LOG: debug}
)";
  auto s = ParseScenario(kWorker, "x.yaml");
  REQUIRE(s.ok());
  CHECK(s->job.env.at("FTCCL_LOG") == "debug");
  CHECK(s->job.command.empty());
  CHECK(s->expect.exact_correctness);
  CHECK(ErrorOf(Replace(kWorker, "  iterations: 10\n", "  iterations: 10\n  ranks_per_host: 1\n"))
            .rfind("x.yaml:7:19: 'ranks_per_host' applies to a command job", 0) == 0);
}

}  // namespace
}  // namespace fl::harness
