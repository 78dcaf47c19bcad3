#include "harness/agent/agent_runtime.h"

#include <algorithm>
#include <exception>
#include <map>

#include "common/log.h"
#include "harness/agent/agent_session.h"
#include "harness/agent/fault_keeper.h"
#include "harness/agent/outbound.h"
#include "harness/agent/rank_supervisor.h"
#include "harness/agent/telemetry_relay.h"
#include "harness/lab/open_lab.h"
#include "injectors/injector.h"
#include "injectors/journal.h"
#include "injectors/journal_recovery.h"

namespace fl::harness {

namespace pb = faultline::v1;

// The router: opens the site, recovers the journal, puts the parts together, checks each
// command and hands it to the part it is for. The parts talk to each other only through the
// callbacks set here (events to the relay, iterations to the keeper).
class AgentRuntime::Impl {
 public:
  explicit Impl(AgentRuntimeOptions o) : opts_(std::move(o)), journal_(opts_.journal_dir) {}

  Status Init() {
    if (opts_.site.named()) {
      lab::SiteOptions so = opts_.site;
      if (so.host.empty()) so.host = opts_.host;
      FL_ASSIGN_OR_RETURN(site_, lab::OpenSite(so));
    }
    const injectors::Fabric* fabric = site_ ? &site_->fabric() : nullptr;
    auto on_event = [this](int rank, const std::string& kind, const nlohmann::json& detail) {
      if (relay_) relay_->AddEvent(rank, kind, detail);
    };
    RankSupervisorOptions ro;
    ro.run_dir = opts_.run_dir;
    ro.worker_binary = opts_.worker_binary;
    ro.token_file = opts_.token_file;
    ro.telemetry_socket = TelemetryRelay::SocketPath(opts_.run_dir, opts_.host);
    ro.policy = &opts_.policy;
    ro.site = site_.get();
    ro.on_event = on_event;
    ranks_ = std::make_unique<RankSupervisor>(std::move(ro));
    ranks_->KillLeftovers();
    FL_RETURN_IF_ERROR(injectors::RegisterBuiltinInjectors(registry_));
    injectors::RecoveryReport rec = injectors::RecoverDeadFaults(journal_, registry_);
    for (const auto& id : rec.reverted)
      FL_LOG(kWarn, "agent") << "reverted fault " << id << " left by a dead owner";
    for (const auto& g : rec.gone)
      FL_LOG(kWarn, "agent") << "removed the journal entry of a dead owner's fault: " << g;
    for (const auto& f : rec.failed)
      FL_LOG(kError, "agent") << "could not revert a dead owner's fault: " << f;
    for (const auto& c : rec.corrupt)
      FL_LOG(kError, "agent") << "corrupt journal entry (not reverted): " << c;
    FaultKeeperOptions ko;
    ko.host = opts_.host;
    ko.policy = &opts_.policy;
    ko.fabric = fabric;
    ko.disposable = site_ && site_->disposable();
    ko.registry = &registry_;
    ko.journal = &journal_;
    ko.on_event = on_event;
    // An armed fault's ranks may be past its iteration already: the relay knows.
    ko.on_armed = [this] { relay_->PostProgress(); };
    keeper_ = std::make_unique<FaultKeeper>(std::move(ko));
    TelemetryRelayOptions to;
    to.host = opts_.host;
    to.run_dir = opts_.run_dir;
    to.flush_interval_ns = opts_.flush_interval_ns;
    to.nic_interval_ns = opts_.nic_interval_ns;
    to.fabric = fabric;
    to.on_progress = [this](const std::map<int, uint64_t>& last) { keeper_->OnIterations(last); };
    FL_ASSIGN_OR_RETURN(relay_, TelemetryRelay::Start(std::move(to)));
    return OkStatus();
  }

  ~Impl() {
    RevertAllAndStop("agent exiting");
    if (keeper_) keeper_->Stop();  // before the relay goes: its thread may still report
    relay_.reset();                // before the keeper goes: its thread hands iterations to it
  }

  // Commands come from the peer: checked before anything acts on them, and nothing that
  // escapes a handler may end the agent (it would leave its faults to the lease alone).
  std::optional<pb::Ack> Handle(const pb::CoordinatorMessage& m) {
    try {
      if (Status v = ValidateCommand(m); !v.ok()) return FailedAck(v);
      return Dispatch(m);
    } catch (const std::exception& e) {
      return FailedAck(InternalError(std::string("agent: command failed: ") + e.what()));
    }
  }

  static Status ValidateCommand(const pb::CoordinatorMessage& m) {
    if (m.has_inject()) {
      const pb::InjectFault& f = m.inject();
      if (f.fault_id().empty() || f.fault_id().size() > 128)
        return InvalidArgumentError("inject: fault_id must be 1..128 bytes");
      if (f.kind().empty() || f.kind().size() > 64)
        return InvalidArgumentError("inject: kind must be 1..64 bytes");
      if (f.target().size() > 256) return InvalidArgumentError("inject: target over 256 bytes");
      if (f.params_size() > 64) return InvalidArgumentError("inject: more than 64 parameters");
      for (const auto& [k, v] : f.params())
        if (k.empty() || k.size() > 64 || v.size() > 1024)
          return InvalidArgumentError("inject: parameter name or value too long");
      if (f.duration_ms() < 0 || f.duration_ms() > INT64_MAX / kNsPerMs)
        return InvalidArgumentError("inject: duration_ms " + std::to_string(f.duration_ms()) +
                                    " is out of range");
    }
    if (m.has_stop() && (m.stop().grace_ms() < 0 || m.stop().grace_ms() > 600000))
      return InvalidArgumentError("stop: grace_ms " + std::to_string(m.stop().grace_ms()) +
                                  " is outside 0..600000");
    if (m.has_launch() && m.launch().ranks_size() > 4096)
      return InvalidArgumentError("launch: more than 4096 ranks on one host");
    return OkStatus();
  }

  std::optional<pb::Ack> Dispatch(const pb::CoordinatorMessage& m) {
    switch (m.body_case()) {
      case pb::CoordinatorMessage::kLaunch:
        if (Status st = ranks_->Launch(m.launch()); !st.ok()) return FailedAck(st);
        relay_->StartNicSampling();
        return OkAck();
      case pb::CoordinatorMessage::kStop:
        // At most a minute's grace.
        {
          Status stopped =
              ranks_->StopRanks(std::clamp<int64_t>(m.stop().grace_ms(), 0, 60 * 1000) * kNsPerMs);
          relay_->StopNicSampling();  // its last round, after the ranks, goes with the drain
          relay_->Drain();
          // The coordinator must not start a second job on top of ranks that are still running.
          return stopped.ok() ? OkAck() : FailedAck(stopped);
        }
      case pb::CoordinatorMessage::kInject:
        return keeper_->Inject(m.inject(), m.command_id());
      case pb::CoordinatorMessage::kRevert:
        return keeper_->Revert(m.revert(), m.command_id());
      case pb::CoordinatorMessage::kShutdown:
        RevertAllAndStop("coordinator asked to shut down");
        return OkAck();
      default:
        return FailedAck(InvalidArgumentError("unknown command"));
    }
  }

  // Also the lease's end (AgentSession's on_lease_lapsed) and the agent's exit.
  void RevertAllAndStop(const std::string& why) {
    if (keeper_) keeper_->RevertAll(why);
    if (ranks_)
      if (Status st = ranks_->StopRanks(2 * kNsPerSec); !st.ok())
        FL_LOG(kError, "agent") << "after " << why << ": " << st.message();
    if (relay_) relay_->StopNicSampling();
    if (ranks_) ranks_->Close();  // the site's rank cgroup folder
  }

  pb::Heartbeat Heartbeat() {
    pb::Heartbeat hb;
    hb.set_ranks_running(ranks_->running());
    hb.set_faults_applied(keeper_->applied());
    return hb;
  }

  AgentRuntimeOptions opts_;
  std::unique_ptr<lab::Site> site_;
  injectors::InjectorRegistry registry_{"injector"};
  injectors::FaultJournal journal_;
  // Destroyed in this order, last first: the ranks (none run by then), the relay (its
  // thread reports to the keeper), the keeper.
  std::unique_ptr<FaultKeeper> keeper_;
  std::unique_ptr<TelemetryRelay> relay_;
  std::unique_ptr<RankSupervisor> ranks_;
};

StatusOr<std::unique_ptr<AgentRuntime>> AgentRuntime::Create(AgentRuntimeOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  FL_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<AgentRuntime>(new AgentRuntime(std::move(impl)));
}

AgentRuntime::AgentRuntime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AgentRuntime::~AgentRuntime() {
  impl_->relay_->AttachSession(nullptr);
  SetAckSink({});  // the session may be gone: cancellations at exit are not acked
}
void AgentRuntime::AttachSession(AgentSession* session) {
  impl_->relay_->AttachSession(session);
  if (session)
    // IgnoreError: SendAck logs and counts an ack it could not write (AgentSession::acks_lost);
    // the coordinator's call for it ends Unavailable at its own deadline or stream break.
    SetAckSink([session](const pb::Ack& ack) { session->SendAck(ack).IgnoreError(); });
  else
    SetAckSink({});
}
void AgentRuntime::SetAckSink(std::function<void(const pb::Ack&)> sink) {
  impl_->keeper_->SetAckSink(std::move(sink));
}
std::optional<pb::Ack> AgentRuntime::HandleCommand(const pb::CoordinatorMessage& msg) {
  return impl_->Handle(msg);
}
pb::Ack AgentRuntime::Handle(const pb::CoordinatorMessage& msg) {
  std::optional<pb::Ack> ack = impl_->Handle(msg);
  if (ack) return *ack;
  return OkAck();  // sent ahead: its ack goes to the sink when it fired
}
pb::Heartbeat AgentRuntime::Heartbeat() { return impl_->Heartbeat(); }
void AgentRuntime::RevertAllAndStop(const std::string& why) { impl_->RevertAllAndStop(why); }

}  // namespace fl::harness
