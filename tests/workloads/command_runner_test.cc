// faultline-worker's command mode (workloads/command_runner.h) on real child processes: the
// progress it reads (nccl-tests rows, the line protocol), the error lines it turns into CCL
// events, exit codes, and that nothing of the command's process group survives.
#include "workloads/command_runner.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "tests/test_util.h"

namespace fl::workloads {
namespace {

struct Collect : TelemetrySink {
  std::mutex mu;
  std::vector<IterationSample> samples;
  std::vector<ccl::Event> events;
  std::vector<std::pair<std::string, std::string>> worker;
  void OnSample(const IterationSample& s) override {
    std::lock_guard l(mu);
    samples.push_back(s);
  }
  void OnEvent(const ccl::Event& e) override {
    std::lock_guard l(mu);
    events.push_back(e);
  }
  void OnWorkerEvent(const std::string& k, const std::string& d) override {
    std::lock_guard l(mu);
    worker.emplace_back(k, d);
  }
  nlohmann::json Worker(const std::string& kind) {
    for (auto& [k, d] : worker)
      if (k == kind) return nlohmann::json::parse(d);
    return nullptr;
  }
};

// Processes of process group pgid that are not zombies (/proc/PID/stat: "pid (comm) S ppid
// pgrp ...").
int LiveInGroup(pid_t pgid) {
  int n = 0;
  DIR* d = opendir("/proc");
  if (!d) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    auto st = ReadFile(std::string("/proc/") + e->d_name + "/stat");
    if (!st.ok()) continue;
    auto close = st->rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (std::sscanf(st->c_str() + close + 1, " %c %d %d", &state, &ppid, &pgrp) != 3) continue;
    n += pgrp == pgid && state != 'Z' && state != 'X';
  }
  closedir(d);
  return n;
}

std::string Script(const std::string& dir, const std::string& body) {
  const std::string p = dir + "/job.sh";
  REQUIRE(WriteFileAtomic(p, "#!/bin/sh\n" + body).ok());
  REQUIRE(chmod(p.c_str(), 0755) == 0);
  return p;
}

TEST_CASE(
    "command runner: nccl-tests rows on stdout become samples, numbered from the "
    "restart's first iteration",
    "[unit]") {
  testing::TempDir dir("fl_cmdrun");
  CommandOptions o;
  o.argv = {Script(dir.path(),
                   "echo '#       size         count      type   redop    root     time   algbw "
                   "  busbw #wrong     time   algbw   busbw #wrong'\n"
                   "echo '     1048576        262144     float     sum      -1    13.06   80.32  "
                   "140.55      0    12.93   81.10  141.92      0'\n"
                   "echo '     2097152        524288     float     sum      -1    15.95  131.51  "
                   "230.14    N/A    16.05  130.70  228.72    N/A'\n")};
  o.progress_format = "nccl-tests";
  o.log_dir = dir.path() + "/ranks";
  o.first_iteration = 100;
  Collect sink;
  std::atomic<bool> stop{false};
  CommandResult r = RunCommand(o, sink, stop);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.stopped_by_us);
  REQUIRE(sink.samples.size() == 4);  // two rows, out of place and in place each
  CHECK(sink.samples[0].iteration == 100);
  CHECK(sink.samples[3].iteration == 103);
  CHECK(sink.samples[0].bytes == 1048576);
  CHECK(sink.samples[2].bytes == 2097152);
  CHECK(sink.samples[0].verified);
  CHECK_FALSE(sink.samples[2].verified);  // #wrong N/A: not checked
  for (const auto& s : sink.samples) CHECK(s.end_wall_ns >= s.start_wall_ns);
  // The in-place half ends when the row is read, the out-of-place one its time before.
  CHECK(sink.samples[1].start_wall_ns - sink.samples[0].end_wall_ns == 0);
  CHECK(sink.samples[1].end_wall_ns - sink.samples[1].start_wall_ns == 12930);
  auto out = ReadFile(o.log_dir + "/rank-0.stdout");
  REQUIRE(out.ok());
  CHECK(out->find("1048576") != std::string::npos);
  CHECK(sink.Worker("command_exit")["nccl_tests"]["rows"] == 2);
}

TEST_CASE("command runner: the line protocol, an NCCL WARN line and the exit status", "[unit]") {
  testing::TempDir dir("fl_cmdrun");
  CommandOptions o;
  o.argv = {Script(dir.path(),
                   "echo \"it=0 bytes=8 ok=1\" >> \"$FAULTLINE_PROGRESS\"\n"
                   "echo \"it=1 bytes=8 ok=0 dur=1000\" >> \"$FAULTLINE_PROGRESS\"\n"
                   "echo \"garbage\" >> \"$FAULTLINE_PROGRESS\"\n"
                   "echo \"rank=$RANK local=$LOCAL_RANK x=$X\"\n"
                   "echo 'node1:123:456 [0] NCCL WARN NET/IB : Got completion from peer "
                   "10.0.0.2<55123> with status=12 opcode=0 len=0 vendor err 129 (Recv)' >&2\n"
                   "echo 'last words' >&2\n"
                   "exit 5\n")};
  o.log_dir = dir.path() + "/ranks";
  o.rank = 3;
  o.env = {{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"X", "y"}};
  Collect sink;
  std::atomic<bool> stop{false};
  CommandResult r = RunCommand(o, sink, stop);
  CHECK(r.exit_code == 5);
  CHECK(r.command_code == 5);
  CHECK(r.stderr_tail.find("last words") != std::string::npos);
  REQUIRE(sink.samples.size() == 2);
  CHECK(sink.samples[0].rank == 3);
  CHECK(sink.samples[0].verified);
  CHECK_FALSE(sink.samples[0].mismatch);
  CHECK(sink.samples[1].mismatch);
  CHECK(sink.samples[1].end_wall_ns - sink.samples[1].start_wall_ns == 1000);
  REQUIRE(sink.events.size() == 1);
  CHECK(sink.events[0].type == ccl::EventType::kFaultDetected);
  CHECK(sink.events[0].cause == "log:nccl");
  CHECK(sink.events[0].rank == 3);
  auto exit = sink.Worker("command_exit");
  CHECK(exit["code"] == 5);
  CHECK(exit["bad_progress_lines"] == 1);
  auto out = ReadFile(o.log_dir + "/rank-3.stdout");
  REQUIRE(out.ok());
  CHECK(*out == "rank=3 local=1 x=y\n");
  auto err = ReadFile(o.log_dir + "/rank-3.stderr");
  REQUIRE(err.ok());
  CHECK(err->find("NCCL WARN") != std::string::npos);
}

TEST_CASE(
    "command runner: the duration ends the command's whole process group, even one that "
    "ignores SIGTERM",
    "[unit]") {
  testing::TempDir dir("fl_cmdrun");
  CommandOptions o;
  o.argv = {"/bin/sh", "-c", "trap '' TERM; sleep 60 & sleep 61"};
  o.progress_format = "exit";
  o.log_dir = dir.path() + "/ranks";
  o.duration_ns = 200 * kNsPerMs;
  o.stop_grace_ns = 300 * kNsPerMs;
  Collect sink;
  std::atomic<bool> stop{false};
  const Nanos t0 = MonoNowNs();
  CommandResult r = RunCommand(o, sink, stop);
  CHECK(MonoNowNs() - t0 < 5 * kNsPerSec);
  CHECK(r.stopped_by_us);
  CHECK(r.exit_code == 0);
  CHECK(r.command_signal == SIGKILL);
  auto start = sink.Worker("command_start");
  REQUIRE(start.is_object());
  const pid_t pgid = start["pid"].get<pid_t>();
  // No process of the group is left (zombies are dead). The orphaned `sleep 60` was SIGKILLed
  // with the group; its pipes close early in its exit, which can end the runner's wait a few
  // microseconds before /proc shows it dead, so its death is waited for (briefly).
  CHECK(
      WaitUntil([&] { return LiveInGroup(pgid) == 0; }, Deadline::After(2 * kNsPerSec), kNsPerMs));
}

TEST_CASE(
    "command runner: a stop request ends the command, a relative or missing program is "
    "127",
    "[unit]") {
  testing::TempDir dir("fl_cmdrun");
  Collect sink;
  std::atomic<bool> stop{true};
  CommandOptions o;
  o.argv = {"/bin/sleep", "60"};
  o.log_dir = dir.path();
  CommandResult r = RunCommand(o, sink, stop);
  CHECK(r.stopped_by_us);
  CHECK(r.exit_code == 0);
  CHECK(r.command_signal == SIGTERM);

  std::atomic<bool> go{false};
  o.argv = {"sleep", "1"};
  CHECK(RunCommand(o, sink, go).exit_code == 127);
  o.argv = {dir.path() + "/no-such-program"};
  r = RunCommand(o, sink, go);
  CHECK(r.exit_code == 127);
  CHECK(r.stderr_tail.find("cannot execute") != std::string::npos);
}

TEST_CASE("command runner: logs that cannot be kept are errors, not silence", "[unit]") {
  testing::TempDir dir("fl_cmdrun");
  std::atomic<bool> go{false};
  CommandOptions o;
  o.argv = {Script(dir.path(), "echo out; echo err >&2\n")};
  {
    // The log directory cannot be made (a file is in the way): the command is not started.
    Collect sink;
    o.log_dir = dir.path() + "/job.sh/ranks";
    CommandResult r = RunCommand(o, sink, go);
    CHECK(r.exit_code == 127);
    CHECK(r.stderr_tail.find("cannot open " + o.log_dir + "/rank-0.stdout") != std::string::npos);
    CHECK(sink.Worker("command_start").is_null());
    CHECK(sink.Worker("command_exit")["started"] == false);
  }
  {
    // A log whose writes fail (a full disk): said in command_exit, the job still runs.
    Collect sink;
    o.log_dir = dir.path() + "/ranks";
    REQUIRE(mkdir(o.log_dir.c_str(), 0755) == 0);
    REQUIRE(symlink("/dev/full", (o.log_dir + "/rank-0.stdout").c_str()) == 0);
    CommandResult r = RunCommand(o, sink, go);
    CHECK(r.exit_code == 0);
    auto exit = sink.Worker("command_exit");
    REQUIRE(exit["log_errors"].is_array());
    REQUIRE(exit["log_errors"].size() == 1);
    CHECK(exit["log_errors"][0].get<std::string>().find("rank-0.stdout") != std::string::npos);
    auto err = ReadFile(o.log_dir + "/rank-0.stderr");
    REQUIRE(err.ok());
    CHECK(*err == "err\n");
  }
}

}  // namespace
}  // namespace fl::workloads
