// `faultline run` end to end on a real (small) local lab, as the user runs it: the binary, its
// agents, workers in containers, real faults, a real SQLite file. Root only.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>

#include "common/file_util.h"
#include "injectors/sys.h"
#include "reports/store/store.h"
#include "tests/test_util.h"

extern char** environ;

namespace fl::harness {
namespace {

using testing::TempDir;

// The namespaces of labs made by `faultline run` ("fl-fl<6 hex>-<node>"); other tests'
// namespaces come and go concurrently and are not ours to judge.
std::set<std::string> Netns() {
  std::set<std::string> out;
  if (DIR* d = opendir("/run/netns")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind("fl-fl", 0) == 0) out.insert(e->d_name);
    closedir(d);
  }
  return out;
}

// Processes whose command line is "faultline-agent ... --lab <lab> ...".
int AgentsOfLab(const std::string& lab) {
  int n = 0;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    auto cmd = ReadFile(std::string("/proc/") + e->d_name + "/cmdline");
    if (!cmd.ok()) continue;
    std::vector<std::string> args;
    for (size_t i = 0; i < cmd->size();) {
      size_t z = cmd->find('\0', i);
      if (z == std::string::npos) z = cmd->size();
      args.push_back(cmd->substr(i, z - i));
      i = z + 1;
    }
    bool agent = !args.empty() && args[0].size() >= 15 &&
                 args[0].rfind("faultline-agent") == args[0].size() - 15;
    for (size_t i = 0; agent && i + 1 < args.size(); ++i)
      if (args[i] == "--lab" && args[i + 1] == lab) ++n;
  }
  closedir(d);
  return n;
}

// faultline with argv, stdout/stderr to files in dir; run from the source tree (configs/).
class Faultline {
 public:
  Faultline(const std::vector<std::string>& args, const std::string& dir)
      : out_(dir + "/out.txt"), err_(dir + "/err.txt") {
    std::vector<std::string> argv = {std::string(FL_BUILD_DIR) + "/bin/faultline"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addchdir_np(&fa, FL_SOURCE_DIR);
    if (posix_spawn(&pid_, a[0], &fa, nullptr, a.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Faultline() {
    if (pid_ > 0 && !done_) {
      kill(pid_, SIGINT);  // the coordinator tears down on SIGINT
      if (!Wait(Deadline::After(60 * kNsPerSec))) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
      }
    }
  }
  std::optional<int> Wait(Deadline d) {
    int status = 0;
    if (!WaitUntil([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, d, 20 * kNsPerMs))
      return std::nullopt;
    done_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }
  int pid() const { return pid_; }
  std::string out() const { return ReadFile(out_).value_or(""); }
  std::string err() const { return ReadFile(err_).value_or(""); }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  bool done_ = false;
};

// Two hosts x 2 ranks x 2 NICs: a small lab where a NIC fault can be survived.
std::string WriteLab(const std::string& dir) {
  std::string p = dir + "/lab2.yaml";
  REQUIRE(WriteFileAtomic(p,
                          "name: lab2\nhosts: 2\ngpus_per_host: 2\nnics_per_host: 2\n"
                          "link: {rate: 1gbit, burst: 256KiB, mtu: 1500}\n")
              .ok());
  return p;
}

// The job runs for job_duration; the fault starts 500 ms into the steady state.
std::string WriteScenario(const std::string& dir, const std::string& lab,
                          const std::string& job_duration, const std::string& fault_yaml) {
  std::string p = dir + "/scenario.yaml";
  REQUIRE(WriteFileAtomic(p, "name: test_run\nseed: 3\nlab: {topology: " + lab +
                                 "}\n"
                                 "job:\n  size: 256KiB\n  duration: " +
                                 job_duration +
                                 "\n  warmup_iterations: 10\n  collective_timeout: 20s\n"
                                 "faults:\n" +
                                 fault_yaml +
                                 "expectations:\n  survives: true\n  exact_correctness: true\n")
              .ok());
  return p;
}

TEST_CASE("faultline run: a malformed scenario exits 2 with its location and creates nothing",
          "[.root][integration]") {
  TempDir dir("fl_run");
  std::string lab = WriteLab(dir.path());
  std::string bad = dir.path() + "/bad.yaml";
  REQUIRE(WriteFileAtomic(bad,
                          "name: bad\nlab: {topology: " + lab +
                              "}\njob: {iterations: 10}\n"
                              "faults:\n  - kind: nic_port_flap\n    target: h0.nic7\n    at: 1s\n")
              .ok());
  auto before = Netns();
  Faultline f({"run", bad, "--db", dir.path() + "/r.db"}, dir.path());
  REQUIRE(f.Wait(Deadline::After(60 * kNsPerSec)) == 2);
  CHECK(f.err().find(bad + ":5:5: target 'h0.nic7' is not in the lab") != std::string::npos);
  CHECK(Netns() == before);
  CHECK(access((dir.path() + "/r.db").c_str(), F_OK) != 0);  // not even the results file
}

// The fault here is one ftccl rides through without a path failure (a throttled NIC), so
// that this test judges the harness, not the CCL: ftccl's own failover has its tests in
// tests/ccl_under_test.
TEST_CASE("faultline run: a throttled NIC on ftccl is survived, recorded and cleaned up",
          "[.root][integration]") {
  TempDir dir("fl_run");
  std::string scenario =
      WriteScenario(dir.path(), WriteLab(dir.path()), "4s",
                    "  - kind: bandwidth_throttle\n    target: h0.nic0\n    at: 500ms\n"
                    "    duration: 1500ms\n    params: {rate: 200mbit}\n");
  auto before = Netns();
  Faultline f({"run", scenario, "--db", dir.path() + "/r.db"}, dir.path());
  auto rc = f.Wait(Deadline::After(300 * kNsPerSec));
  INFO(f.err());
  INFO(f.out());
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(Netns() == before);
  auto store = reports::Store::Open(dir.path() + "/r.db", {.create = false});
  REQUIRE(store.ok());
  auto runs = (*store)->ListRuns({});
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  auto data = (*store)->LoadRun(runs->front().id);
  REQUIRE(data.ok());
  CHECK(data->run.status == reports::RunStatus::kPassed);
  // both ranks reported iterations, fault window included
  std::set<int> ranks;
  for (const auto& smp : data->samples) ranks.insert(smp.rank);
  CHECK(ranks == std::set<int>{0, 1, 2, 3});
  CHECK(data->samples.size() > 40);
  REQUIRE(data->faults.size() == 1);
  CHECK(data->faults[0].effective_wall_ns.has_value());
  CHECK(data->faults[0].revert_verified == true);
  CHECK(data->hosts.size() == 3);  // h0, h1 and the fabric agent
  std::set<std::string> kinds;
  for (const auto& e : data->events) kinds.insert(e.kind);
  CHECK(kinds.count("steady_state"));
  CHECK(kinds.count("rank_exit"));
  CHECK(data->faults[0].kind == "bandwidth_throttle");
  CHECK(*data->faults[0].effective_wall_ns >= *data->faults[0].scheduled_wall_ns);
  CHECK(*data->faults[0].reverted_wall_ns > *data->faults[0].effective_wall_ns);
  CHECK_FALSE(data->metrics.empty());
  CHECK_FALSE(data->verdicts.empty());
  CHECK(f.out().find("PASS") != std::string::npos);
}

TEST_CASE(
    "faultline run: SIGKILL of the coordinator leaves nothing applied, the next command marks the "
    "run aborted",
    "[.root][integration]") {
  TempDir dir("fl_run");
  std::string scenario = WriteScenario(
      dir.path(), WriteLab(dir.path()), "120s",
      "  - kind: nic_port_flap\n    target: h0.nic0\n    at: 500ms\n    duration: 60s\n");
  auto before = Netns();
  std::string db = dir.path() + "/r.db";
  Faultline f({"run", scenario, "--db", db, "--lease", "1"}, dir.path());
  // Wait until the fault is in place (its effective time is in the results file).
  std::string run_id, lab;
  bool applied = WaitUntil(
      [&] {
        auto store = reports::Store::Open(db, {.create = false});
        if (!store.ok()) return false;
        auto runs = (*store)->ListRuns({});
        if (!runs.ok() || runs->empty()) return false;
        run_id = runs->front().id;
        auto data = (*store)->LoadRun(run_id);
        return data.ok() && !data->faults.empty() && data->faults[0].effective_wall_ns.has_value();
      },
      Deadline::After(180 * kNsPerSec), 100 * kNsPerMs);
  INFO(f.err());
  REQUIRE(applied);
  lab = "fl" + run_id.substr(run_id.size() - 6);
  std::string h0 = "fl-" + lab + "-h0";
  auto link_up = [&] {
    std::string cmd = "ip -n " + h0 + " -o link show nic0 | grep -q 'state UP'";
    return std::system(cmd.c_str()) == 0;
  };
  CHECK_FALSE(link_up());  // the flap holds nic0 down

  kill(f.pid(), SIGKILL);
  REQUIRE(f.Wait(Deadline::After(10 * kNsPerSec)) == -SIGKILL);
  // Within the lease (1 s) plus scheduling slack, the agent brings nic0 back and stops ranks.
  CHECK(WaitUntil(link_up, Deadline::After(15 * kNsPerSec), 50 * kNsPerMs));
  auto cgroot = injectors::Cgroup2Root();
  REQUIRE(cgroot.ok());
  const std::string containers = *cgroot + "/faultline/fl-" + lab;
  CHECK(WaitUntil(
      [&] {
        DIR* d = opendir(containers.c_str());
        if (!d) return true;
        bool any = false;
        while (dirent* e = readdir(d))
          any = any || std::string(e->d_name).find("rank") != std::string::npos;
        closedir(d);
        return !any;
      },
      Deadline::After(15 * kNsPerSec), 50 * kNsPerMs));

  // The next faultline command marks the run aborted and removes its lab.
  Faultline runs({"runs", "--db", db}, dir.path());
  REQUIRE(runs.Wait(Deadline::After(120 * kNsPerSec)) == 0);
  CHECK(runs.err().find("marked aborted") != std::string::npos);
  CHECK(runs.out().find("aborted") != std::string::npos);
  CHECK(WaitUntil([&] { return Netns() == before; }, Deadline::After(30 * kNsPerSec)));
  // Agents exit on their own once their lease lapsed and they have reverted.
  CHECK(WaitUntil([&] { return AgentsOfLab(lab) == 0; }, Deadline::After(20 * kNsPerSec)));
}

}  // namespace
}  // namespace fl::harness
