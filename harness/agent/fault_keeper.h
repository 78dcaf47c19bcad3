// The agent's faults: applies and reverts them through the injectors and the fault journal,
// within the agent's policy, and keeps the agent's own promises about them whatever the
// coordinator does. The safety-critical part of the agent: no socket, no process here.
//
// Inject goes through injectors::InjectFault (journal first, verify after). A fault sent ahead
// (due_agent_wall_ns) goes through PrepareFault at once and FireFault on the fire thread at its
// due time; its ack is sent then, through the ack sink. An armed one (after_iteration) has no
// due time until its ranks have passed the iteration (OnIterations): then it is due at once. A
// prepared fault that a revert or RevertAll reaches before its time is cancelled: nothing
// applied, its journal entry removed, its inject answered Unavailable ("cancelled").
//
// Revert goes through injectors::RevertFault (verify, then journal removal); one sent ahead is
// journaled ("reverting") at once and reverted by the fire thread at its time. Reverting is
// idempotent: a fault already reverted (deadline, RevertAll, an earlier revert) is answered
// with when that was.
//
// Deadlines: every applied fault has an agent-side deadline (agent_policy.h DecideInject); the
// deadline thread reverts it then, even while the coordinator is alive, and reports an
// agent_fault_deadline event. A revert that fails leaves the fault applied (the journal keeps
// it); at its deadline it is tried again every second.
//
// Switch ports the policy does not name are refused before any switch is contacted: the
// target's switch-side ports as the fabric resolves them (the kind's InjectorInfo says which
// end it acts on), and again the prepared fault's own ports, before anything is journaled.
//
// Thread-safety: every method may be called from any thread; one lock guards the faults. A
// revert of a fault being fired waits for it. The fire thread runs at a real-time priority
// where the agent may have one (root).
// Ownership: borrows the policy, the fabric, the registry and the journal (they outlive it);
// owns the fire and deadline threads (Stop() or the destructor joins them).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "harness/agent/agent_policy.h"
#include "harness/agent/outbound.h"
#include "harness/proto/faultline.pb.h"
#include "injectors/injector.h"
#include "injectors/journal.h"

namespace fl::harness {

struct FaultKeeperOptions {
  std::string host;                                 // the host this agent serves
  const AgentPolicy* policy = nullptr;              // borrowed; required
  const injectors::Fabric* fabric = nullptr;        // the site's; null: every fault is refused
  bool disposable = false;                          // the site's (lab::Site::disposable)
  injectors::InjectorRegistry* registry = nullptr;  // borrowed; required
  injectors::FaultJournal* journal = nullptr;       // borrowed; required
  AgentEventSink on_event;                          // agent_fault_deadline
  // An armed fault was prepared: call OnIterations soon with the iterations seen so far (its
  // ranks may be past its iteration already). Called without the keeper's lock.
  std::function<void()> on_armed;
};

class FaultKeeper {
 public:
  using AckSink = std::function<void(const faultline::v1::Ack&)>;

  // Starts the fire and deadline threads.
  explicit FaultKeeper(FaultKeeperOptions options);
  ~FaultKeeper();  // Stop()

  // The inject's ack, or nullopt for a fault sent ahead or armed (its ack goes to the sink
  // when it fired, failed or was cancelled).
  std::optional<faultline::v1::Ack> Inject(const faultline::v1::InjectFault& f,
                                           uint64_t command_id);
  // The revert's ack, or nullopt for a revert sent ahead (answered through the sink then).
  std::optional<faultline::v1::Ack> Revert(const faultline::v1::RevertFault& r,
                                           uint64_t command_id);
  // Cancels every prepared fault and reverts every applied one, now; reverts sent ahead are
  // answered with the result. A revert that fails is logged (the journal keeps the fault).
  void RevertAll(const std::string& why);
  // Armed faults whose ranks have all reached their iteration fire at once. last_iteration:
  // each rank's highest iteration so far. Cheap when nothing is armed.
  void OnIterations(const std::map<int, uint64_t>& last_iteration);
  // Where deferred acks go; empty: nowhere (logged). Any thread.
  void SetAckSink(AckSink sink);
  // Faults applied now.
  uint32_t applied();
  // Joins the fire and deadline threads (faults stay as they are: RevertAll first). Idempotent.
  void Stop();

 private:
  struct AppliedFault {
    std::unique_ptr<injectors::Injector> injector;
    injectors::FaultHandle handle;
    Nanos deadline_mono = 0;  // the agent reverts it then (policy); 0: only on revert or lease
    bool capped = false;      // the deadline is the policy's cap, not the declared duration
  };
  // A fault sent ahead: prepared (policy, target, injector, "applying" journal entry), waiting
  // for the fire thread to apply it at due_wall_ns (agent clock). An armed one (an iteration
  // trigger) has no due time until its ranks have passed the iteration: then it is due at once.
  struct PendingFault {
    std::string fault_id;
    uint64_t command_id = 0;  // its inject's ack is sent when it fired
    Nanos due_wall_ns = 0;
    std::unique_ptr<injectors::Injector> injector;
    injectors::FaultHandle handle;
    InjectDecision decision;
    bool armed = false;  // waiting for its iteration (due_wall_ns not set yet)
    uint64_t after_iteration = 0;
    std::vector<int> iteration_ranks;
    Nanos triggered_wall_ns = 0;  // when its ranks passed the iteration
  };
  // A revert sent ahead (RevertFault.due_agent_wall_ns): the fire thread reverts the applied
  // fault at due_wall_ns (agent clock) and answers the revert's command then.
  struct PendingRevert {
    uint64_t command_id = 0;
    Nanos due_wall_ns = 0;
  };
  // A fault the agent reverted (deadline, revert): what a later RevertFault is answered with.
  struct ExpiredFault {
    std::string handle_id;
    Nanos reverted_wall_ns = 0;
  };

  void FireLoop();
  void DeadlineLoop();
  faultline::v1::Ack RevertNow(const std::string& fault_id, bool prepared = false);
  void CancelPending(PendingFault& p, const std::string& why);
  void SendDeferredAck(const faultline::v1::Ack& ack);

  FaultKeeperOptions opts_;
  std::mutex mu_;  // guards everything below up to sink_mu_
  std::map<std::string, AppliedFault> faults_;
  std::map<std::string, PendingFault> pending_;           // sent ahead, not fired yet
  std::atomic<int> armed_{0};                             // pending_ entries still armed
  std::map<std::string, PendingRevert> pending_reverts_;  // reverts sent ahead, by fault id
  std::map<std::string, ExpiredFault> expired_;  // reverted: what a later revert is answered with
  std::string firing_;                           // the fault the fire thread is applying
  std::condition_variable fire_cv_;              // pending_ or firing_ changed, or stopping_
  std::condition_variable deadline_cv_;          // faults_ changed, or stopping_
  bool stopping_ = false;
  std::mutex sink_mu_;  // guards ack_sink_
  AckSink ack_sink_;
  std::thread fire_thread_;
  std::thread deadline_thread_;
};

}  // namespace fl::harness
