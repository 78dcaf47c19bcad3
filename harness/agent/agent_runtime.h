// What an agent does on its host: starts and stops the ranks (faultline-worker in containers),
// relays their telemetry, and applies and reverts faults through the injectors and the fault
// journal, within its local policy. This is the router; each role is a part of its own:
//   rank_supervisor.h   the ranks: Launch, reaping (rank_exit), StopRanks, their cgroups;
//   telemetry_relay.h   the workers' Unix socket (run_dir/<host>.sock), JSON lines -> batches
//                       to the coordinator, the host's NIC counters while ranks run;
//   fault_keeper.h      the faults: inject (at once, sent ahead, armed), revert, the agent's
//                       own deadlines, RevertAll; the safety-critical part, apart from the
//                       socket and process plumbing.
// The runtime opens the site (harness/lab/lab.h OpenSite), reverts the journal entries of dead
// owners at start-up (an agent that was SIGKILLed), checks every command (ValidateCommand:
// sizes and ranges) and hands it to its part.
//
// Policy: a YAML file the agent reads at start-up (agent_policy.h, docs/control_plane.md):
// which fault kinds and targets it accepts, the longest fault and lease, what launches may
// ask. The coordinator cannot widen it: a command outside it is refused with
// FailedPrecondition.
//
// On a lapsed lease (the session's on_lease_lapsed calls RevertAllAndStop), on Shutdown and at
// destruction, every prepared fault is cancelled, every applied fault reverted and every rank
// stopped; NIC sampling stops with the ranks.
//
// Thread-safety: Handle() is called on the session's command thread; RevertAllAndStop() also
// on its timer thread (a lapsed lease). Telemetry runs on the relay's Asio thread; faults sent
// ahead fire on the keeper's fire thread (a revert of one being fired waits for it), which
// sends their acks through the ack sink.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harness/agent/agent_policy.h"
#include "harness/lab/lab.h"
#include "harness/proto/faultline.pb.h"

namespace fl::harness {

class AgentSession;

struct AgentRuntimeOptions {
  std::string host;         // the host this agent serves ("fabric" for the switch-side agent)
  lab::SiteOptions site;    // where it runs (harness/lab/lab.h OpenSite); none: faults and
                            // ranks are refused
  std::string token_file;   // the control token, also the workers' TCP store token
  std::string journal_dir;  // empty: the default journal
  std::string run_dir;      // telemetry socket lives here
  std::string worker_binary;
  AgentPolicy policy;
  Nanos flush_interval_ns = 50 * kNsPerMs;  // unless the coordinator's Welcome sets the pace
  Nanos nic_interval_ns = 100 * kNsPerMs;   // data NIC counters, while ranks run
};

class AgentRuntime {
 public:
  static StatusOr<std::unique_ptr<AgentRuntime>> Create(AgentRuntimeOptions options);
  ~AgentRuntime();

  // Where telemetry is sent; set after the session is up. Borrowed.
  void AttachSession(AgentSession* session);
  // The ack to send, or nullopt for a fault sent ahead (InjectFault.due_agent_wall_ns): its
  // ack goes to the ack sink when it fired, failed or was cancelled.
  std::optional<faultline::v1::Ack> HandleCommand(const faultline::v1::CoordinatorMessage& msg);
  // HandleCommand, with an ok Ack (no handle) for a fault sent ahead; for tests.
  faultline::v1::Ack Handle(const faultline::v1::CoordinatorMessage& msg);
  // Where deferred acks go (AttachSession sets the session's SendAck). Any thread.
  void SetAckSink(std::function<void(const faultline::v1::Ack&)> sink);
  faultline::v1::Heartbeat Heartbeat();
  // Reverts every fault and stops every rank. Idempotent.
  void RevertAllAndStop(const std::string& why);

  class Impl;

 private:
  explicit AgentRuntime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fl::harness
