#include "harness/agent/fault_keeper.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "injectors/injection.h"

namespace fl::harness {

namespace pb = faultline::v1;

namespace {

// Sleeps to an absolute CLOCK_REALTIME time (the agent's wall clock, as due times are).
void SleepUntilWall(Nanos wall_ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(wall_ns / kNsPerSec);
  ts.tv_nsec = static_cast<long>(wall_ns % kNsPerSec);
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// The ports a prepared fault acts on: state["ports"] (PortsOf in injectors/builtin_internal.h),
// and any other list of ports an injector keeps in its state (a policer's). For the policy's
// switch_ports check: kernel ports among them pass it anyway.
std::vector<injectors::Port> HandlePorts(const injectors::FaultHandle& h) {
  std::vector<injectors::Port> ports;
  if (!h.state.is_object()) return ports;
  for (const auto& [key, value] : h.state.items()) {
    if (!value.is_array()) continue;
    for (const auto& p : value)
      if (p.is_object() && p.contains("name")) ports.push_back(injectors::PortFromJson(p));
  }
  return ports;
}

// The switch ports a fault of `kind` on `target` will act on, as this site's fabric resolves
// them without touching anything (the kind's InjectorInfo says which end it acts on): the
// switch end of a link (a switch-side kind that takes links; an either-side kind where the
// fabric puts gray faults on the switch side, uplinks too), an uplink (a switch-side kind of
// the uplink class). Empty for host-side kinds. The prepared handle's ports are checked as
// well (exactly).
std::vector<injectors::Port> SwitchSidePorts(const injectors::Fabric& fabric,
                                             const std::string& kind, const std::string& target) {
  const injectors::InjectorInfo* info = injectors::BuiltinInjectors().Describe(kind);
  if (info == nullptr || info->side == injectors::FaultSide::kHost) return {};
  const bool gray = info->side == injectors::FaultSide::kEither;
  const bool takes_links = !(info->target_classes.size() == 1 && info->AcceptsClass("uplink"));
  const bool links = gray ? fabric.GrayFaultSide() == injectors::PortSide::kSwitch : takes_links;
  const bool uplinks = gray ? links : info->AcceptsClass("uplink");
  std::vector<injectors::Port> ports;
  auto take = [&](StatusOr<std::vector<injectors::Port>> r) {
    if (r.ok())
      for (auto& p : *r)
        if (p.sw) ports.push_back(std::move(p));
    return r.ok();
  };
  // As the injectors resolve: host links first, then uplinks.
  if (!(links && take(fabric.HostLinks(target, injectors::PortSide::kSwitch))) && uplinks)
    take(fabric.Uplinks(target));
  return ports;
}

// An armed fault's trigger: every one of its ranks has reported an iteration of at least
// after_iteration (last_iteration: each rank's highest so far).
bool IterationReached(uint64_t after_iteration, const std::vector<int>& ranks,
                      const std::map<int, uint64_t>& last_iteration) {
  for (int r : ranks) {
    auto it = last_iteration.find(r);
    if (it == last_iteration.end() || it->second < after_iteration) return false;
  }
  return true;
}

std::string RankList(const google::protobuf::RepeatedField<int32_t>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

// The answer to a revert that reverted `h`: its handle and when the revert took effect.
pb::Ack RevertedAck(const injectors::FaultHandle& h) {
  pb::Ack ack = OkAck();
  ack.set_handle(h.id);
  ack.set_effective_wall_ns(h.reverted_wall_ns ? h.reverted_wall_ns : WallNowNs());
  return ack;
}

}  // namespace

FaultKeeper::FaultKeeper(FaultKeeperOptions options) : opts_(std::move(options)) {
  deadline_thread_ = std::thread([this] { DeadlineLoop(); });
  fire_thread_ = std::thread([this] { FireLoop(); });
}

FaultKeeper::~FaultKeeper() { Stop(); }

void FaultKeeper::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  deadline_cv_.notify_all();
  fire_cv_.notify_all();
  if (deadline_thread_.joinable()) deadline_thread_.join();
  if (fire_thread_.joinable()) fire_thread_.join();
}

void FaultKeeper::SetAckSink(AckSink sink) {
  std::lock_guard lock(sink_mu_);
  ack_sink_ = std::move(sink);
}

uint32_t FaultKeeper::applied() {
  std::lock_guard lock(mu_);
  return static_cast<uint32_t>(faults_.size());
}

// A fault sent ahead (due_agent_wall_ns later than kFireAtOnceNs from now) goes through the
// same checks, is prepared and journaled now, and its ack is sent when the fire thread applied
// it (nullopt here); otherwise it is applied at once.
std::optional<pb::Ack> FaultKeeper::Inject(const pb::InjectFault& f, uint64_t command_id) {
  const AgentPolicy& policy = *opts_.policy;
  const InjectDecision decision = DecideInject(policy, opts_.disposable, opts_.host, f);
  if (!decision.status.ok()) return FailedAck(decision.status);
  const bool armed = f.has_after_iteration();
  if (armed && (f.iteration_ranks().empty() || f.iteration_ranks_size() > 4096))
    return FailedAck(InvalidArgumentError(
        "inject: fault " + f.fault_id() + " is armed on an iteration but names " +
        std::to_string(f.iteration_ranks_size()) + " ranks (iteration_ranks: 1 to 4096)"));
  for (int r : f.iteration_ranks())
    if (r < 0)
      return FailedAck(InvalidArgumentError("inject: fault " + f.fault_id() + ": iteration rank " +
                                            std::to_string(r) + " is negative"));
  const AheadMode mode =
      armed ? AheadMode::kAhead : ClassifyDue(WallNowNs(), f.due_agent_wall_ns());
  if (mode == AheadMode::kTooFar)
    return FailedAck(InvalidArgumentError("inject: fault " + f.fault_id() + " is due more than " +
                                          std::to_string(kMaxAheadNs / kNsPerSec) +
                                          " s ahead (due_agent_wall_ns)"));
  if (mode == AheadMode::kAhead) {
    std::lock_guard lock(mu_);
    if (pending_.count(f.fault_id()) || faults_.count(f.fault_id()) || firing_ == f.fault_id())
      return FailedAck(FailedPreconditionError("inject: fault " + f.fault_id() +
                                               " is already prepared or applied"));
  }
  if (!opts_.fabric)
    return FailedAck(FailedPreconditionError("agent has no site to resolve targets in"));
  const injectors::Fabric& fabric = *opts_.fabric;
  injectors::FaultJournal* journal = opts_.journal;
  auto inj = opts_.registry->Create(f.kind());
  if (!inj.ok()) return FailedAck(inj.status());
  injectors::FaultSpec spec;
  spec.kind = f.kind();
  spec.target = f.target();
  spec.params = {f.params().begin(), f.params().end()};
  spec.duration = f.duration_ms() * kNsPerMs;
  // Switch ports the policy does not name are refused before any switch is contacted (the
  // target's switch-side ports as the site resolves them, no network) and again on the
  // prepared fault's own ports, before anything is journaled or applied.
  std::function<Status(const injectors::FaultHandle&)> admit;
  if (!opts_.disposable || !policy.switch_ports.empty()) {
    if (Status st = CheckSwitchPorts(policy, SwitchSidePorts(fabric, f.kind(), f.target()));
        !st.ok())
      return FailedAck(st);
    admit = [&policy](const injectors::FaultHandle& h) {
      return CheckSwitchPorts(policy, HandlePorts(h));
    };
  }
  if (mode == AheadMode::kAhead) {
    auto prepared = injectors::PrepareFault(**inj, spec, fabric, journal, admit);
    if (!prepared.ok()) return FailedAck(prepared.status());
    {
      std::lock_guard lock(mu_);
      PendingFault& p = pending_[f.fault_id()];
      p.fault_id = f.fault_id();
      p.command_id = command_id;
      p.due_wall_ns = f.due_agent_wall_ns();
      p.injector = std::move(*inj);
      p.handle = std::move(*prepared);
      p.decision = decision;
      if (armed) {
        p.armed = true;
        p.after_iteration = f.after_iteration();
        p.iteration_ranks.assign(f.iteration_ranks().begin(), f.iteration_ranks().end());
        ++armed_;
      }
    }
    if (armed) {
      // Its ranks may be past the iteration already: the telemetry says (OnIterations).
      if (opts_.on_armed) opts_.on_armed();
      FL_LOG(kInfo, "agent") << "fault " << f.fault_id() << " armed: fires when rank(s) "
                             << RankList(f.iteration_ranks()) << " pass iteration "
                             << f.after_iteration();
      return std::nullopt;
    }
    fire_cv_.notify_all();
    const Nanos lead = f.due_agent_wall_ns() - WallNowNs();
    if (lead <= kFireMarginNs)
      FL_LOG(kWarn, "agent") << "fault " << f.fault_id() << " prepared only " << lead / kNsPerUs
                             << " us before its time";
    return std::nullopt;
  }
  Nanos requested = WallNowNs();
  auto handle = injectors::InjectFault(**inj, spec, fabric, journal, admit);
  if (!handle.ok()) return FailedAck(handle.status());
  pb::Ack ack = OkAck();
  ack.set_handle(handle->id);
  ack.set_requested_wall_ns(handle->requested_wall_ns ? handle->requested_wall_ns : requested);
  ack.set_effective_wall_ns(handle->effective_wall_ns);
  if (decision.capped)
    FL_LOG(kWarn, "agent") << "fault " << f.fault_id() << " declared "
                           << (f.duration_ms() ? std::to_string(f.duration_ms()) + " ms"
                                               : std::string("until reverted"))
                           << ": the policy holds it at most " << decision.hold_ns / kNsPerMs
                           << " ms";
  {
    std::lock_guard lock(mu_);
    faults_[f.fault_id()] =
        AppliedFault{std::move(*inj), std::move(*handle),
                     decision.hold_ns > 0 ? MonoNowNs() + decision.hold_ns : 0, decision.capped};
  }
  deadline_cv_.notify_all();
  return ack;
}

void FaultKeeper::OnIterations(const std::map<int, uint64_t>& last_iteration) {
  if (armed_ == 0) return;
  bool any = false;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, p] : pending_) {
      if (!p.armed || !IterationReached(p.after_iteration, p.iteration_ranks, last_iteration))
        continue;
      p.armed = false;
      p.triggered_wall_ns = p.due_wall_ns = WallNowNs();
      --armed_;
      any = true;
    }
  }
  if (any) fire_cv_.notify_all();
}

// Fires the prepared faults at their due times, earliest first (one at a time). It runs at a
// real-time priority where the agent may have one (root), so that a loaded machine does not
// delay the wake-up; nothing else runs on it.
void FaultKeeper::FireLoop() {
  sched_param sp{};
  sp.sched_priority = 10;
  if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0)
    FL_LOG(kDebug, "agent") << "fire thread runs without a real-time priority";
  std::unique_lock lock(mu_);
  while (!stopping_) {
    auto next = pending_.end();
    for (auto it = pending_.begin(); it != pending_.end(); ++it)
      if (!it->second.armed &&
          (next == pending_.end() || it->second.due_wall_ns < next->second.due_wall_ns))
        next = it;
    auto next_revert = pending_reverts_.end();
    for (auto it = pending_reverts_.begin(); it != pending_reverts_.end(); ++it)
      if (next_revert == pending_reverts_.end() ||
          it->second.due_wall_ns < next_revert->second.due_wall_ns)
        next_revert = it;
    const bool revert =
        next_revert != pending_reverts_.end() &&
        (next == pending_.end() || next_revert->second.due_wall_ns < next->second.due_wall_ns);
    if (next == pending_.end() && !revert) {
      fire_cv_.wait(lock);
      continue;
    }
    const Nanos due = revert ? next_revert->second.due_wall_ns : next->second.due_wall_ns;
    const FireStep step = NextFireStep(WallNowNs(), due);
    if (!step.fire) {
      fire_cv_.wait_for(lock, std::chrono::nanoseconds(step.wait_ns));
      continue;
    }
    if (revert) {
      const std::string id = next_revert->first;
      const PendingRevert pr = next_revert->second;
      pending_reverts_.erase(next_revert);
      firing_ = id;  // a plain revert of it waits until this one is done
      lock.unlock();
      SleepUntilWall(pr.due_wall_ns);
      pb::Ack ack = RevertNow(id, /*prepared=*/true);
      ack.set_command_id(pr.command_id);
      lock.lock();
      firing_.clear();
      fire_cv_.notify_all();
      lock.unlock();
      SendDeferredAck(ack);
      lock.lock();
      continue;
    }
    PendingFault p = std::move(next->second);
    pending_.erase(next);
    firing_ = p.fault_id;  // a revert of it waits until it fired
    lock.unlock();
    SleepUntilWall(p.due_wall_ns);
    const Nanos requested = WallNowNs();
    if (requested - p.due_wall_ns > kNsPerMs)
      FL_LOG(kWarn, "agent") << "fault " << p.fault_id << " fires "
                             << (requested - p.due_wall_ns) / kNsPerUs
                             << " us after its time (the fire thread woke late)";
    Status st = injectors::FireFault(*p.injector, p.handle, opts_.journal);
    pb::Ack ack;
    if (st.ok()) {
      ack = OkAck();
      ack.set_handle(p.handle.id);
      ack.set_requested_wall_ns(p.handle.requested_wall_ns ? p.handle.requested_wall_ns
                                                           : requested);
      ack.set_effective_wall_ns(p.handle.effective_wall_ns);
    } else {
      ack = FailedAck(st);
    }
    ack.set_triggered_wall_ns(p.triggered_wall_ns);
    ack.set_command_id(p.command_id);
    lock.lock();
    if (st.ok())
      faults_[p.fault_id] = AppliedFault{
          std::move(p.injector), std::move(p.handle),
          p.decision.hold_ns > 0 ? MonoNowNs() + p.decision.hold_ns : 0, p.decision.capped};
    firing_.clear();
    fire_cv_.notify_all();
    deadline_cv_.notify_all();
    lock.unlock();
    SendDeferredAck(ack);
    lock.lock();
  }
}

void FaultKeeper::SendDeferredAck(const pb::Ack& ack) {
  std::lock_guard lock(sink_mu_);
  if (ack_sink_) {
    ack_sink_(ack);
    return;
  }
  // No session (before AttachSession, or after it was detached at exit): nowhere to send it.
  FL_LOG(kInfo, "agent") << "ack of command " << ack.command_id() << " ("
                         << (ack.ok() ? "ok" : ack.error()) << ") not sent: no session";
}

// Cancels a prepared fault (its journal entry goes; nothing was applied) and answers its
// inject with why.
void FaultKeeper::CancelPending(PendingFault& p, const std::string& why) {
  Status st = injectors::CancelPrepared(p.handle, opts_.journal);
  if (!st.ok())
    FL_LOG(kError, "agent") << "cancelling fault " << p.fault_id << ": " << st.message();
  FL_LOG(kInfo, "agent") << "fault " << p.fault_id << " cancelled before its time (" << why << ")";
  pb::Ack ack = FailedAck(
      UnavailableError("fault " + p.fault_id + " was cancelled before its time (" + why + ")"));
  ack.set_command_id(p.command_id);
  SendDeferredAck(ack);
}

// Reverts each applied fault at its deadline, whether or not the coordinator says so.
void FaultKeeper::DeadlineLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const Nanos now = MonoNowNs();
    Nanos next = now + kNsPerSec;
    std::string due;
    for (const auto& [id, af] : faults_) {
      if (af.deadline_mono == 0) continue;
      if (af.deadline_mono <= now) {
        due = id;
        break;
      }
      next = std::min(next, af.deadline_mono);
    }
    if (due.empty()) {
      deadline_cv_.wait_for(lock, std::chrono::nanoseconds(next - now));
      continue;
    }
    AppliedFault af = std::move(faults_[due]);
    faults_.erase(due);
    lock.unlock();
    Status st = injectors::RevertFault(*af.injector, af.handle, opts_.journal);
    lock.lock();
    if (!st.ok()) {  // still applied (the journal keeps it): try again in a second
      FL_LOG(kError, "agent") << "revert of fault " << due
                              << " at its deadline failed: " << st.message();
      af.deadline_mono = MonoNowNs() + kNsPerSec;
      faults_[due] = std::move(af);
      continue;
    }
    const Nanos reverted = af.handle.reverted_wall_ns ? af.handle.reverted_wall_ns : WallNowNs();
    expired_[due] = ExpiredFault{af.handle.id, reverted};
    FL_LOG(kWarn, "agent") << "reverted fault " << due << " at its deadline"
                           << (af.capped ? " (the policy's max_fault_duration)" : "");
    if (opts_.on_event)
      opts_.on_event(-1, "agent_fault_deadline",
                     {{"fault", due}, {"policy_cap", af.capped}, {"reverted_wall_ns", reverted}});
  }
}

// A revert sent ahead of its time (due_agent_wall_ns later than kFireAtOnceNs from now) of an
// applied fault is left to the fire thread, which answers it then (nullopt here); any other
// revert acts at once, and answers a revert of the same fault still waiting for its time too.
std::optional<pb::Ack> FaultKeeper::Revert(const pb::RevertFault& r, uint64_t command_id) {
  const AheadMode mode = ClassifyDue(WallNowNs(), r.due_agent_wall_ns());
  if (mode == AheadMode::kTooFar)
    return FailedAck(InvalidArgumentError("revert: fault " + r.fault_id() + " is due more than " +
                                          std::to_string(kMaxAheadNs / kNsPerSec) +
                                          " s ahead (due_agent_wall_ns)"));
  std::optional<PendingRevert> superseded;
  {
    std::unique_lock lock(mu_);
    if (auto p = pending_.find(r.fault_id()); p != pending_.end()) {
      PendingFault pf = std::move(p->second);
      pending_.erase(p);
      if (pf.armed) --armed_;
      fire_cv_.notify_all();
      lock.unlock();
      CancelPending(pf, "reverted before it fired");
      return OkAck();  // nothing was applied: nothing to revert
    }
    fire_cv_.wait(lock, [&] { return firing_ != r.fault_id(); });
    if (auto f = faults_.find(r.fault_id());
        mode == AheadMode::kAhead && f != faults_.end() && !pending_reverts_.count(r.fault_id())) {
      // The "reverting" record now (its fsync), under the lock so that no other revert of it
      // runs meanwhile; the fire thread only reverts it at its time.
      if (Status st = injectors::PrepareRevert(f->second.handle, opts_.journal); !st.ok())
        return FailedAck(st);
      pending_reverts_[r.fault_id()] = PendingRevert{command_id, r.due_agent_wall_ns()};
      fire_cv_.notify_all();
      return std::nullopt;
    }
    if (auto pr = pending_reverts_.find(r.fault_id()); pr != pending_reverts_.end()) {
      superseded = pr->second;
      pending_reverts_.erase(pr);
      fire_cv_.notify_all();
    }
  }
  pb::Ack ack = RevertNow(r.fault_id());
  if (superseded) {  // its revert came first: the one waiting for its time is answered alike
    pb::Ack same = ack;
    same.set_command_id(superseded->command_id);
    SendDeferredAck(same);
  }
  return ack;
}

// Reverts an applied fault now; one already reverted (lease, deadline, duplicate) is answered
// with when that was: reverting is idempotent. A revert that fails leaves the fault applied
// (the journal keeps it too).
// prepared: its "reverting" record is written already (a revert sent ahead).
pb::Ack FaultKeeper::RevertNow(const std::string& fault_id, bool prepared) {
  AppliedFault af;
  {
    std::unique_lock lock(mu_);
    auto it = faults_.find(fault_id);
    if (it == faults_.end()) {
      pb::Ack ack = OkAck();
      if (auto e = expired_.find(fault_id); e != expired_.end()) {
        ack.set_handle(e->second.handle_id);
        ack.set_effective_wall_ns(e->second.reverted_wall_ns);
      }
      return ack;
    }
    af = std::move(it->second);
    faults_.erase(it);
  }
  Status st = prepared ? injectors::FireRevert(*af.injector, af.handle, opts_.journal)
                       : injectors::RevertFault(*af.injector, af.handle, opts_.journal);
  if (!st.ok()) {
    std::lock_guard lock(mu_);
    faults_[fault_id] = std::move(af);
    return FailedAck(st);
  }
  pb::Ack ack = RevertedAck(af.handle);
  std::lock_guard lock(mu_);  // what a later revert of it is answered with
  expired_[fault_id] = ExpiredFault{af.handle.id, ack.effective_wall_ns()};
  return ack;
}

void FaultKeeper::RevertAll(const std::string& why) {
  std::map<std::string, AppliedFault> faults;
  std::map<std::string, PendingFault> pending;
  std::map<std::string, PendingRevert> reverts;
  {
    std::unique_lock lock(mu_);
    pending.swap(pending_);
    armed_ = 0;
    fire_cv_.notify_all();
    fire_cv_.wait(lock, [&] { return firing_.empty(); });
    faults.swap(faults_);
    reverts.swap(pending_reverts_);
  }
  for (auto& [id, p] : pending) CancelPending(p, why);
  for (auto& [id, af] : faults) {
    Status st = injectors::RevertFault(*af.injector, af.handle, opts_.journal);
    if (st.ok())
      FL_LOG(kInfo, "agent") << "reverted fault " << id << " (" << why << ")";
    else
      FL_LOG(kError, "agent") << "revert of fault " << id
                              << " failed (journal keeps it): " << st.message();
    // A revert of it that was waiting for its time: answered now, with this one's result.
    if (auto pr = reverts.find(id); pr != reverts.end()) {
      pb::Ack ack = st.ok() ? RevertedAck(af.handle) : FailedAck(st);
      ack.set_command_id(pr->second.command_id);
      SendDeferredAck(ack);
    }
  }
}

}  // namespace fl::harness
