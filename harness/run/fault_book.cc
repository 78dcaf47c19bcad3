#include "harness/run/fault_book.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <optional>

#include "common/log.h"
#include "common/units.h"
#include "harness/coordinator/fan_out.h"
#include "harness/run/job.h"
#include "reports/metrics/metrics.h"

namespace fl::harness::run {

namespace pb = faultline::v1;

namespace {

// What an agent's answer to a command says: the call's error, the agent's, or OK.
Status AckStatus(const StatusOr<pb::Ack>& ack) {
  if (!ack.ok()) return ack.status();
  if (!ack->ok()) return Status(static_cast<Code>(ack->error_code()), ack->error());
  return OkStatus();
}

pb::CoordinatorMessage InjectMessage(const ActiveFault& f) {
  pb::CoordinatorMessage m;
  auto* in = m.mutable_inject();
  in->set_fault_id(f.plan.id);
  in->set_kind(f.plan.kind);
  in->set_target(f.plan.target);
  for (const auto& [k, v] : f.plan.params) (*in->mutable_params())[k] = v;
  in->set_duration_ms(f.plan.duration_ns / kNsPerMs);
  return m;
}

}  // namespace

bool Outstanding(const ActiveFault& f) {
  return f.ahead != nullptr || (f.injected && !f.reverted && !f.failed);
}

Status FaultBook::InjectDue(ActiveFault& f) {
  pb::CoordinatorMessage m = InjectMessage(f);
  Nanos sent = WallNowNs();
  f.record.requested_wall_ns = sent;
  f.injected = true;
  return FinishInject(f, run_.session.server->Call(f.agent, m, Deadline::After(30 * kNsPerSec)));
}

void FaultBook::SendAhead(ActiveFault& f) {
  pb::CoordinatorMessage m = InjectMessage(f);
  const Nanos off = run_.session.OffsetOf(f.agent);
  m.mutable_inject()->set_due_agent_wall_ns(*f.record.scheduled_wall_ns + off);
  f.record.requested_wall_ns = WallNowNs();
  if (*f.record.requested_wall_ns > *f.record.scheduled_wall_ns - kNsPerMs)
    FL_LOG(kWarn, "coord") << "fault " << f.plan.id << " sent "
                           << (*f.record.requested_wall_ns - *f.record.scheduled_wall_ns) / kNsPerUs
                           << " us after its time (the timeline loop was late)";
  ControlServer* server = run_.session.server.get();
  const std::string agent = f.agent;
  f.ahead = std::make_shared<std::future<StatusOr<pb::Ack>>>(std::async(
      std::launch::async,
      [server, agent, m] { return server->Call(agent, m, Deadline::After(30 * kNsPerSec)); }));
}

void FaultBook::ArmAtAgent(ActiveFault& f) {
  pb::CoordinatorMessage m = InjectMessage(f);
  m.mutable_inject()->set_after_iteration(f.plan.after_iteration);
  for (int r : ProgressRanksOn(run_.prepared, f.agent)) m.mutable_inject()->add_iteration_ranks(r);
  f.record.requested_wall_ns = WallNowNs();
  ControlServer* server = run_.session.server.get();
  const std::string agent = f.agent;
  // Answered when it fired, which may be long from now; a revert (the run's end) cancels it
  // and is answered at once, and a broken session ends the call.
  f.ahead = std::make_shared<std::future<StatusOr<pb::Ack>>>(
      std::async(std::launch::async, [server, agent, m] {
        return server->Call(agent, m, Deadline::After(24 * 3600 * kNsPerSec));
      }));
}

void FaultBook::RevertAhead(ActiveFault& f) {
  pb::CoordinatorMessage m;
  m.mutable_revert()->set_fault_id(f.plan.id);
  const Nanos off = run_.session.OffsetOf(f.agent);
  // Its time: in effect for its duration (the coordinator's clock), on the agent's clock.
  m.mutable_revert()->set_due_agent_wall_ns(*f.record.effective_wall_ns + f.plan.duration_ns + off);
  ControlServer* server = run_.session.server.get();
  const std::string agent = f.agent;
  f.revert_ahead = std::make_shared<std::future<StatusOr<pb::Ack>>>(std::async(
      std::launch::async,
      [server, agent, m] { return server->Call(agent, m, Deadline::After(30 * kNsPerSec)); }));
}

Status FaultBook::FinishInject(ActiveFault& f, StatusOr<pb::Ack> ack) {
  f.injected = true;
  Status st = AckStatus(ack);
  if (!st.ok()) {
    f.failed = true;
    run_.results.PutFault(f.record);
    return st.Prepend("fault " + f.plan.id + " (" + f.plan.kind + " on " + f.plan.target + ")");
  }
  const Nanos off = run_.session.OffsetOf(f.agent);
  f.handle_id = ack->handle();
  if (ack->requested_wall_ns()) f.record.requested_wall_ns = ack->requested_wall_ns() - off;
  f.record.effective_wall_ns =
      ack->effective_wall_ns() ? ack->effective_wall_ns() - off : WallNowNs();
  if (f.plan.duration_ns > 0)
    f.revert_at_mono =
        MonoNowNs() + f.plan.duration_ns - (WallNowNs() - *f.record.effective_wall_ns);
  run_.results.PutFault(f.record);
  return OkStatus();
}

Status FaultBook::RevertFault(ActiveFault& f) {
  if (!Outstanding(f)) return OkStatus();
  pb::CoordinatorMessage m;
  m.mutable_revert()->set_fault_id(f.plan.id);
  return FinishRevert(f, run_.session.server->Call(f.agent, m, Deadline::After(30 * kNsPerSec)));
}

void FaultBook::RevertAll() {
  std::vector<ActiveFault*> todo;
  std::vector<std::string> agents;
  for (auto& f : faults_) {
    if (!Outstanding(f)) continue;
    todo.push_back(&f);
    if (std::find(agents.begin(), agents.end(), f.agent) == agents.end()) agents.push_back(f.agent);
  }
  std::vector<StatusOr<pb::Ack>> acks(todo.size(), UnavailableError("revert not sent"));
  FanOut(
      agents, kFanOutWidth,
      [&](const std::string& agent) {
        for (size_t i = 0; i < todo.size(); ++i) {
          if (todo[i]->agent != agent) continue;
          pb::CoordinatorMessage m;
          m.mutable_revert()->set_fault_id(todo[i]->plan.id);
          acks[i] = run_.session.server->Call(agent, m, Deadline::After(30 * kNsPerSec));
        }
        return OkStatus();
      },
      Deadline::After(30 * kNsPerSec));
  for (size_t i = 0; i < todo.size(); ++i) {
    Status st = FinishRevert(*todo[i], std::move(acks[i]));
    if (!st.ok()) FL_LOG(kError, "coord") << st.ToUserString();
  }
}

Status FaultBook::FinishRevert(ActiveFault& f, StatusOr<pb::Ack> ack) {
  // A revert sent ahead that another revert overtook (the run's end): the agent answers it
  // alike once it has reverted the fault.
  if (f.revert_ahead) {
    f.revert_ahead->wait();
    f.revert_ahead.reset();
  }
  const bool ahead = f.ahead != nullptr;
  if (ahead) {
    // Sent ahead and not answered yet (the run ends before its time): the revert cancelled
    // it on the agent (nothing applied, no journal entry; its inject is answered
    // "cancelled"), or it had fired and the revert reverted it (recorded as usual).
    StatusOr<pb::Ack> fired = f.ahead->get();
    f.ahead.reset();
    if (!fired.ok() || !fired->ok()) {
      FL_LOG(kInfo, "coord") << "fault " << f.plan.id << " not injected: "
                             << (fired.ok() ? fired->error() : fired.status().ToString());
      return OkStatus();
    }
    if (Status st = FinishInject(f, std::move(fired)); !st.ok())
      FL_LOG(kError, "coord") << st.ToUserString();
  }
  f.reverted = true;
  Status st = AckStatus(ack);
  f.record.revert_verified = st.ok();
  f.record.reverted_wall_ns = st.ok() && ack->effective_wall_ns()
                                  ? ack->effective_wall_ns() - run_.session.OffsetOf(f.agent)
                                  : WallNowNs();
  run_.results.PutFault(f.record);
  if (st.ok())
    say_("[fault] " + f.plan.id + " reverted after " +
             FormatDuration(*f.record.reverted_wall_ns -
                            f.record.effective_wall_ns.value_or(*f.record.reverted_wall_ns)),
         Tone::kGood);
  return st.Prepend("reverting fault " + f.plan.id);
}

// The steady state starts: its times, and the plan's faults as the timeline tracks them.
void FaultBook::BeginSteady() {
  steady_mono_ = MonoNowNs();
  steady_wall_ = WallNowNs();
  run_.Event("steady_state", {{"iteration", progress_.MinIteration(ProgressRanks(run_.prepared))}});
  for (const PlannedFault& pf : run_.prepared.plan.faults) {
    ActiveFault f;
    f.plan = pf;
    f.agent = run_.prepared.lab->AgentFor(pf.kind, pf.target);
    f.record.run_id = run_.ids.run_id;
    f.record.fault_id = pf.id;
    f.record.kind = pf.kind;
    f.record.target = pf.target;
    f.record.params_json = nlohmann::json(pf.params).dump();
    f.record.anchor = pf.anchor;
    if (!pf.anchor.empty()) anchor_of_[pf.id] = pf.anchor;
    if (pf.time_triggered()) f.record.scheduled_wall_ns = steady_wall_ + pf.at_ns;
    faults_.push_back(f);
  }
}

bool FaultBook::InWindow(const ActiveFault& a, const std::string& kind, Nanos wall,
                         bool fired_ahead_counts) const {
  // A fault sent ahead whose answer is not in yet fired at its time (its agent fires it then):
  // its events may come before the answer does.
  const bool fired_ahead = fired_ahead_counts && a.ahead && a.record.scheduled_wall_ns &&
                           WallNowNs() >= *a.record.scheduled_wall_ns &&
                           kind != reports::kEventPathRestored;
  if (!fired_ahead && (!a.injected || !a.record.effective_wall_ns)) return false;
  const Nanos start = fired_ahead ? *a.record.scheduled_wall_ns : *a.record.effective_wall_ns;
  Nanos from = a.record.requested_wall_ns ? std::min(*a.record.requested_wall_ns, start) : start;
  if (kind == reports::kEventPathRestored) {
    if (!a.record.reverted_wall_ns) return false;
    from = *a.record.reverted_wall_ns;
  }
  if (wall < from) return false;
  for (const auto& b : faults_) {
    if (&b == &a || !b.injected || !b.record.effective_wall_ns ||
        reports::NestedIn(anchor_of_, b.plan.id, a.plan.id))
      continue;
    // b's window from its request on (a fault made in steps, over SSH, bites before its
    // effective time)
    const Nanos t = b.record.requested_wall_ns
                        ? std::min(*b.record.requested_wall_ns, *b.record.effective_wall_ns)
                        : *b.record.effective_wall_ns;
    if (*b.record.effective_wall_ns > start && t <= wall) return false;
  }
  return true;
}

Nanos FaultBook::AnchorDueWall(const ActiveFault& f) {
  const ActiveFault* a = nullptr;
  for (const auto& g : faults_)
    if (g.plan.id == f.plan.anchor) a = &g;
  if (!a) return 0;
  std::optional<Nanos> at;
  const std::string& kind = f.plan.anchor_event;
  if (!a->injected || !a->record.effective_wall_ns) {
    // Sent ahead and due: a rank's detection may come before the agent's answer does.
    if (kind != reports::kEventFaultDetected && kind != reports::kEventFailoverDone) return 0;
  }
  if (kind == "injected") {
    at = a->record.effective_wall_ns;
  } else if (kind == "reverted") {
    if (a->reverted) at = a->record.reverted_wall_ns;
  } else {
    std::lock_guard lock(progress_.mu);
    for (const auto& e : progress_.anchor_events)
      if (e.kind == kind && InWindow(*a, kind, e.wall_ns, /*fired_ahead_counts=*/true) &&
          (!at || e.wall_ns < *at))
        at = e.wall_ns;
  }
  return at ? *at + f.plan.anchor_delay_ns : 0;
}

void FaultBook::RevertedFromJournal(const std::string& host,
                                    const std::vector<std::string>& reverted) {
  for (auto& f : faults_) {
    if (f.agent != host || !f.injected || f.reverted || f.failed) continue;
    f.reverted = true;
    f.record.reverted_wall_ns = WallNowNs();
    f.record.revert_verified =
        std::find(reverted.begin(), reverted.end(), f.handle_id) != reverted.end();
    run_.results.PutFault(f.record);
  }
}

}  // namespace fl::harness::run
