// What an agent does on its host: starts and stops the ranks (faultline-worker in containers),
// relays their telemetry, and applies and reverts faults through the injectors and the fault
// journal, within its local policy.
//
// Telemetry: workers connect to a Unix socket (run_dir/<host>.sock) and write JSON lines;
// a Boost.Asio loop reads them, converts them to proto Samples/Events and batches them to the
// coordinator every flush interval (and on demand before a StopRanks ack, so nothing is lost
// at the end of a job).
//
// NIC counters: from LaunchRanks to StopRanks (or Shutdown, a lapsed lease, the agent's
// exit) a NicSampler (nic_counters.h) reads the host's data NICs every 100 ms; the samples go
// to the coordinator in the same telemetry batches (TelemetryBatch.nics).
//
// Faults: InjectFault goes through injectors::InjectFault (journal first, verify after); one
// sent ahead (due_agent_wall_ns) through PrepareFault at once and FireFault on the fire
// thread at its due time, and its ack is sent then. A prepared fault that a RevertFault, a
// lapsed lease, Shutdown or the agent's exit reaches before its time is cancelled: nothing
// applied, its journal entry removed, its inject answered Unavailable ("cancelled").
// RevertFault through RevertFault (verify, then journal removal). On a lapsed lease, on
// Shutdown and at destruction, every applied fault is reverted and every rank stopped. At
// start-up, journal entries of dead owners (an agent that was SIGKILLed) are reverted.
//
// Policy: a YAML file the agent reads at start-up (agent_policy.h, docs/control_plane.md):
// which fault kinds and targets it accepts, the longest fault and lease, what launches may
// ask. The coordinator cannot widen it: a command outside it is refused with
// FailedPrecondition. Every applied fault has an agent-side deadline (agent_policy.h
// DecideInject): a deadline thread reverts it then, even while the coordinator is alive.
//
// Thread-safety: Handle() is called on the session's command thread; OnLeaseLapsed() on its
// timer thread; both take the runtime's lock. Telemetry runs on the Asio thread; faults sent
// ahead fire on the runtime's fire thread (a revert of one being fired waits for it), which
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
