// Runs ftccl-perf as one process per rank on a NetnsLab (ranks 2h and 2h+1 on host h), with a
// file rendezvous, per-rank event and progress files in a temporary directory that is removed
// afterwards. Used by the root-gated failover tests and by bench/ftccl_*.
#pragma once

#include <string>
#include <vector>

#include "netns_lab.h"

namespace fl::ccl::testing {

struct JobSpec {
  std::string perf_binary;
  std::string ccl = "ftccl";
  int ranks_per_host = 2;
  // The rails (NIC indices) every rank uses, in order; empty = all of its host's NICs.
  std::vector<int> rails;
  std::vector<std::string> args;  // extra ftccl-perf arguments (-b, -e, -n, --check-all, ...)
  std::vector<std::string> env;   // "NAME=value" for the rank processes
  // Rail-optimised placement: rank r uses only rail r % ranks_per_host (overrides rails).
  bool rail_per_rank = false;
};

class LabJob {
 public:
  LabJob(NetnsLab& lab, JobSpec spec);
  ~LabJob();  // removes the temporary directory (the lab kills leftover processes)
  Status Start();
  int ranks() const { return static_cast<int>(pids_.size()); }
  // Iterations finished by rank r so far (lines of its progress file).
  int Progress(int r) const;
  int MinProgress() const;
  // Waits until every rank has finished at least n iterations.
  bool WaitProgress(int n, Deadline d) const;
  // Event lines (JSON) of every rank whose text contains all of `needles`.
  std::vector<std::string> Events(const std::vector<std::string>& needles) const;
  // Progress timestamps (wall ns) of rank r.
  std::vector<int64_t> ProgressTimes(int r) const;
  // Waits for every rank to exit; exit codes (-1 for a rank still running at the deadline).
  std::vector<int> WaitAll(Deadline d);
  std::string Log(int r) const;
  const std::string& dir() const { return dir_; }

 private:
  NetnsLab& lab_;
  JobSpec spec_;
  std::string dir_;
  std::vector<pid_t> pids_;
};

}  // namespace fl::ccl::testing
