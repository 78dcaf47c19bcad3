// What the end-to-end tests of `faultline run` and `faultline suite` share: the faultline
// binary as a child process, a small lab file, and the namespaces of faultline's labs.
#pragma once

#include <dirent.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "reports/store/store.h"
#include "tests/child_process.h"

namespace fl::testing {

// Processes alive now whose /proc/PID/FILE ("cmdline", "environ") holds every one of needles.
inline int ProcessesWhose(const char* file, const std::vector<std::string>& needles) {
  int n = 0;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    auto text = ReadFile(std::string("/proc/") + e->d_name + "/" + file);
    if (!text.ok()) continue;
    bool all = true;
    for (const auto& needle : needles) all = all && text->find(needle) != std::string::npos;
    n += all;
  }
  closedir(d);
  return n;
}

// The one run a results file holds, loaded (fails the test when there is not exactly one).
inline reports::RunData OnlyRun(const std::string& db) {
  auto store = reports::Store::Open(db, {.create = false});
  REQUIRE(store.ok());
  auto runs = (*store)->ListRuns({});
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  auto data = (*store)->LoadRun(runs->front().id);
  REQUIRE(data.ok());
  return std::move(*data);
}

// The namespaces of labs made by `faultline run` ("fl-fl<6 hex>-<node>"); other tests'
// namespaces come and go concurrently and are not ours to judge.
inline std::set<std::string> Netns() {
  std::set<std::string> out;
  if (DIR* d = opendir("/run/netns")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind("fl-fl", 0) == 0) out.insert(e->d_name);
    closedir(d);
  }
  return out;
}

// Two hosts x 2 ranks x 2 NICs: the smallest lab where a NIC fault can be survived.
inline std::string WriteLab(const std::string& dir) {
  std::string p = dir + "/lab2.yaml";
  REQUIRE(WriteFileAtomic(p,
                          "name: lab2\nhosts: 2\ngpus_per_host: 2\nnics_per_host: 2\n"
                          "link: {rate: 1gbit, burst: 256KiB, mtu: 1500}\n")
              .ok());
  return p;
}

// build/bin/faultline with args, run from the source tree (configs/), stdout and stderr into
// files in dir (out.txt/err.txt, or TAG.out/TAG.err). Interrupted (SIGINT: the coordinator
// and the suite tear down on it) if still running at the end.
class Faultline {
 public:
  Faultline(const std::vector<std::string>& args, const std::string& dir,
            const std::string& tag = "")
      : out_(dir + "/" + (tag.empty() ? "out.txt" : tag + ".out")),
        err_(dir + "/" + (tag.empty() ? "err.txt" : tag + ".err")),
        proc_(Argv(args), Options(out_, err_)) {}
  std::optional<int> Wait(Deadline d) { return proc_.Wait(d); }
  int pid() const { return proc_.pid(); }
  std::string out() const { return ReadFile(out_).value_or(""); }
  std::string err() const { return ReadFile(err_).value_or(""); }

 private:
  static ChildProcess::Options Options(const std::string& out, const std::string& err) {
    ChildProcess::Options o;
    o.out = out;
    o.err = err;
    o.cwd = FL_SOURCE_DIR;
    o.stop_signal = SIGINT;
    o.stop_grace = 90 * kNsPerSec;
    return o;
  }
  static std::vector<std::string> Argv(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {std::string(FL_BUILD_DIR) + "/bin/faultline"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  std::string out_, err_;
  ChildProcess proc_;
};

// A local lab brought up with `faultline lab up` for the test (runs go on it with --on-lab)
// and brought down when the scope ends.
class LabUp {
 public:
  LabUp(const std::string& topology, const std::string& name, const std::string& dir)
      : name_(name), dir_(dir) {
    Faultline up({"lab", "up", topology, "--name", name}, dir, "lab_up");
    ok_ = up.Wait(Deadline::After(60 * kNsPerSec)) == std::optional<int>(0);
  }
  ~LabUp() {
    Faultline down({"lab", "down", name_}, dir_, "lab_down");
    down.Wait(Deadline::After(60 * kNsPerSec));
  }
  LabUp(const LabUp&) = delete;
  LabUp& operator=(const LabUp&) = delete;
  bool ok() const { return ok_; }

 private:
  std::string name_, dir_;
  bool ok_ = false;
};

}  // namespace fl::testing
