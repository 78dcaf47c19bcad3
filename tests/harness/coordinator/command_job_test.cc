// Command jobs end to end on a real local lab (docs/scenarios.md, "Command jobs"): a command
// runs once per rank in the ranks' containers with the rank environment, its progress comes
// from outside (the line protocol here), its output is kept per rank, and nothing of it
// survives the run. Root only.
#include <dirent.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "common/file_util.h"
#include "injectors/sys.h"
#include "tests/harness/run_testing.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using testing::Faultline;
using testing::Netns;
using testing::OnlyRun;
using testing::TempDir;
using testing::WriteLab;

// Processes whose command line mentions `needle` (the test's own script path).
int ProcessesWith(const std::string& needle) {
  int n = 0;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    auto cmd = ReadFile(std::string("/proc/") + e->d_name + "/cmdline");
    if (cmd.ok() && cmd->find(needle) != std::string::npos) ++n;
  }
  closedir(d);
  return n;
}

// A training loop as a framework would write it: the rank environment printed, one progress
// line per step (verified), forever (the runner ends it at the job's duration).
constexpr const char* kLoop = R"(import os, sys, time
env = {k: os.environ.get(k, '') for k in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE',
                                          'MASTER_ADDR', 'MASTER_PORT', 'FAULTLINE_PROGRESS',
                                          'STEP_NOTE')}
print(' '.join(k + '=' + v for k, v in sorted(env.items())), flush=True)
print('stderr of rank', env['RANK'], file=sys.stderr, flush=True)
with open(os.environ['FAULTLINE_PROGRESS'], 'a', buffering=1) as p:
    i = 0
    while True:
        time.sleep(0.02)
        p.write('it=%d bytes=4096 ok=1\n' % i)
        i += 1
)";

TEST_CASE(
    "command job: a Python loop with the line protocol runs once per rank, its samples "
    "arrive, its output is kept per rank, and nothing survives",
    "[.root][integration]") {
  TempDir dir("fl_cmdjob");
  const std::string script = dir.path() + "/loop.py";
  REQUIRE(WriteFileAtomic(script, kLoop).ok());
  const std::string scenario = dir.path() + "/cmd.yaml";
  REQUIRE(WriteFileAtomic(scenario,
                          "name: cmd_lines\nseed: 3\nlab: {topology: " + WriteLab(dir.path()) +
                              "}\njob:\n  command: [/usr/bin/python3, " + script +
                              "]\n  env: {STEP_NOTE: hello, MASTER_PORT: \"29611\"}\n"
                              "  duration: 3s\n  warmup_iterations: 5\n"
                              "  progress: {format: lines}\n"
                              "expectations:\n  survives: true\n")
              .ok());
  auto before = Netns();
  Faultline f({"run", scenario, "--db", dir.path() + "/r.db", "--keep-run-dir"}, dir.path());
  auto rc = f.Wait(Deadline::After(120 * kNsPerSec));
  INFO(f.err());
  INFO(f.out());
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(Netns() == before);
  CHECK(ProcessesWith(script) == 0);

  reports::RunData data = OnlyRun(dir.path() + "/r.db");
  const std::string run_dir = injectors::StateDir() + "/runs/" + data.run.id;
  CHECK(data.run.status == reports::RunStatus::kPassed);
  std::set<int> ranks;
  size_t verified = 0;
  for (const auto& s : data.samples) {
    ranks.insert(s.rank);
    verified += s.verified;
    CHECK(s.end_ns >= s.start_ns);
  }
  CHECK(ranks == std::set<int>{0, 1, 2, 3});
  CHECK(data.samples.size() > 100);  // ~3 s at 50 steps/s on 4 ranks
  CHECK(verified == data.samples.size());
  int exits = 0;
  for (const auto& e : data.events)
    if (e.kind == "command_exit") {
      ++exits;
      CHECK(e.detail_json.find("\"stopped_by_runner\":true") != std::string::npos);
    }
  CHECK(exits == 4);

  // The output of every rank, with the environment it got.
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    auto out = ReadFile(run_dir + "/ranks/rank-" + std::to_string(r) + ".stdout");
    REQUIRE(out.ok());
    CHECK(out->find("RANK=" + std::to_string(r) + " ") != std::string::npos);
    CHECK(out->find("WORLD_SIZE=4") != std::string::npos);
    CHECK(out->find("LOCAL_RANK=" + std::to_string(r % 2)) != std::string::npos);
    CHECK(out->find("LOCAL_WORLD_SIZE=2") != std::string::npos);
    CHECK(out->find("MASTER_ADDR=198.") != std::string::npos);   // rank 0's first NIC
    CHECK(out->find("MASTER_PORT=29611") != std::string::npos);  // the job's env wins
    CHECK(out->find("STEP_NOTE=hello") != std::string::npos);
    auto err = ReadFile(run_dir + "/ranks/rank-" + std::to_string(r) + ".stderr");
    REQUIRE(err.ok());
    CHECK(err->find("stderr of rank " + std::to_string(r)) != std::string::npos);
  }
  std::error_code ec;
  std::filesystem::remove_all(run_dir, ec);  // kept for the checks above (--keep-run-dir)
  CHECK_FALSE(std::filesystem::exists(run_dir));
}

}  // namespace
}  // namespace fl::harness
