// The agent's ranks: starts them (faultline-worker, each in a container of the site), reaps
// them, stops them, and cleans up their cgroups.
//
// Launch checks the command and the policy (what a launch may ask, agent_policy.h CheckLaunch)
// before anything starts, then starts each rank with its worker arguments (telemetry socket,
// local rank, log dir, the store token). A reaper thread per rank waits for its container's
// init and reports a rank_exit event; a rank that ended badly brings the end of its log
// (ranks/rank-N.log under run_dir). StopRanks sends SIGTERM, waits the grace, then kills and
// removes each container's cgroup. Close removes the site's rank cgroup folder.
//
// Thread-safety: every method may be called from any thread (one lock guards the ranks).
// Ownership: borrows the policy and the site (they outlive it); owns the ranks' reaper threads
// (StopRanks joins them; StopRanks before destruction).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harness/agent/agent_policy.h"
#include "harness/agent/outbound.h"
#include "harness/lab/lab.h"
#include "harness/proto/faultline.pb.h"

namespace fl::harness {

struct RankSupervisorOptions {
  std::string run_dir;                  // ranks/rank-N.log live under it; empty: no logs
  std::string worker_binary;            // faultline-worker
  std::string token_file;               // the workers' TCP store token
  std::string telemetry_socket;         // TelemetryRelay::SocketPath; empty: none
  const AgentPolicy* policy = nullptr;  // borrowed; required
  lab::Site* site = nullptr;            // borrowed; null: every launch is refused
  AgentEventSink on_event;              // rank_exit (reaper threads)
};

class RankSupervisor {
 public:
  explicit RankSupervisor(RankSupervisorOptions options);
  ~RankSupervisor();  // stops what still runs, without a grace

  // At agent start: ranks an earlier agent of this host left running are killed (logged).
  void KillLeftovers();
  // Starts the launch's ranks; FailedPrecondition / InvalidArgument when the policy or the
  // command refuses it (nothing started). A rank that fails to start ends the launch there.
  Status Launch(const faultline::v1::LaunchRanks& launch);
  // SIGTERM, `grace` to exit, then each container killed and removed. Blocks until done.
  // An error names the ranks still running after the kill (they stay this supervisor's).
  Status StopRanks(Nanos grace);
  // After every rank is gone: the site's rank cgroup folder goes.
  void Close();
  // Ranks started and not exited.
  uint32_t running();

 private:
  struct Rank {
    int rank = 0;
    injectors::ContainerInfo container;
    std::thread reaper;
    std::atomic<bool> exited{false};
  };
  void Reap(Rank* r);

  RankSupervisorOptions opts_;
  std::mutex mu_;  // guards ranks_
  std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace fl::harness
