#include "harness/coordinator/control_server.h"

#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "common/name_chars.h"
#include "harness/control/auth.h"
#include "harness/control/certs.h"
#include "harness/coordinator/session.h"
#include "harness/proto/faultline.grpc.pb.h"

namespace fl::harness {

namespace pb = faultline::v1;

namespace {

// Threads that run the telemetry handler (off gRPC's own threads).
constexpr int kTelemetryThreads = 2;

// 1..64 characters [A-Za-z0-9_.-]: the host names of topologies and inventories.
bool ValidHostName(const std::string& h) { return IsNameOf(h, 64, "_.-"); }

// An agent's Ack with what the run driver reads from it made safe: a failure always carries a
// known non-OK fl::Code (an unknown or OK code from the peer becomes Internal) and an error
// text of bounded size.
pb::Ack NormalisedAck(const pb::Ack& in, const std::string& host) {
  pb::Ack ack = in;
  if (!ack.ok()) {
    int c = ack.error_code();
    if (c <= static_cast<int>(Code::kOk) || c > static_cast<int>(Code::kInternal)) {
      FL_LOG(kWarn, "coord") << "agent " << host << " failed a command with unknown error code "
                             << c << "; reading it as Internal";
      ack.set_error_code(static_cast<int>(Code::kInternal));
    }
    if (ack.error().empty()) ack.set_error("agent " + host + " gave no reason");
  }
  if (ack.error().size() > 4096) ack.mutable_error()->resize(4096);
  return ack;
}

}  // namespace

// The service, and the owner of every agent's Session (session.h). The service method is
// named Session, hence `struct Session` for the stream's type inside this class.
class ControlServer::Impl final : public pb::Coordinator::CallbackService, public SessionOwner {
 public:
  explicit Impl(ControlServerOptions options) : options_(std::move(options)) {}

  Status Start() {
    grpc::ServerBuilder builder;
    std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
    if (options_.tls) {
      // Every agent must present a certificate signed by the lab CA; Session() then checks
      // that it names the host the agent claims.
      grpc::SslServerCredentialsOptions tls(
          GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
      tls.pem_root_certs = options_.tls->ca_pem;
      tls.pem_key_cert_pairs.push_back({options_.tls->key_pem, options_.tls->cert_pem});
      creds = grpc::SslServerCredentials(tls);
    }
    builder.AddListeningPort(options_.listen_address, creds, &port_);
    builder.RegisterService(this);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    // No per-socket message accounting for channelz, which nothing here reads.
    builder.AddChannelArgument(GRPC_ARG_ENABLE_CHANNELZ, 0);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 500);
    // Our own pings find an agent whose host died without closing its connection, so that
    // the host can register again (a live host cannot: see Register()).
    const int lease_ms = static_cast<int>(options_.lease_ns / kNsPerMs);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, std::max(lease_ms, 1000));
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, std::max(lease_ms, 1000));
    // Debian's abseil tracks the order of every absl::Mutex (gRPC's) taken, to report deadlock
    // cycles: 6-8% of the coordinator's CPU at 4096 agents (perf). A release build has it off.
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    server_ = builder.BuildAndStart();
    if (!server_ || port_ == 0)
      return UnavailableError("cannot listen on " + options_.listen_address);
    auto colon = options_.listen_address.rfind(':');
    host_part_ = options_.listen_address.substr(0, colon);
    heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
    for (int i = 0; i < kTelemetryThreads; ++i)
      tele_threads_.emplace_back([this] { TelemetryLoop(); });
    FL_LOG(kInfo, "coord") << "control plane listening on " << host_part_ << ":" << port_;
    return OkStatus();
  }

  SessionReactor* Session(grpc::CallbackServerContext* ctx) override {
    return NewSessionReactor(this, ctx);
  }

  // The metadata token, before anything is read.
  grpc::Status CheckToken(grpc::CallbackServerContext* ctx) override {
    auto md = ctx->client_metadata().find(kTokenMetadataKey);
    if (md == ctx->client_metadata().end() ||
        !TokensEqual(std::string_view(md->second.data(), md->second.size()), options_.token)) {
      ++stats_.rejected;
      FL_LOG(kWarn, "coord") << "rejected agent from " << ctx->peer() << ": bad or missing token";
      return {grpc::StatusCode::UNAUTHENTICATED, "bad or missing token"};
    }
    return grpc::Status::OK;
  }

  // The stream's first message: a Hello with the token, a valid host name and (with TLS) a
  // certificate for it; then the host's registration and the Welcome.
  grpc::Status Hello(grpc::CallbackServerContext* ctx,
                     const std::shared_ptr<struct Session>& session,
                     const pb::AgentMessage& first) override {
    if (!first.has_hello())
      return {grpc::StatusCode::INVALID_ARGUMENT, "first message must be hello"};
    const pb::Hello& hello = first.hello();
    if (!TokensEqual(hello.token(), options_.token)) {
      ++stats_.rejected;
      return {grpc::StatusCode::UNAUTHENTICATED, "bad token in hello"};
    }
    if (!ValidHostName(hello.host())) {
      ++stats_.rejected;
      FL_LOG(kWarn, "coord") << "rejected agent from " << ctx->peer()
                             << ": hello without a valid host name";
      return {grpc::StatusCode::INVALID_ARGUMENT, "hello without a valid host name"};
    }
    if (grpc::Status st = CheckPeerCertificate(ctx, hello.host()); !st.ok()) {
      ++stats_.rejected;
      FL_LOG(kWarn, "coord") << "rejected agent from " << ctx->peer() << ": " << st.error_message();
      return st;
    }
    session->host = hello.host();
    if (grpc::Status st = Register(session, hello, ctx->peer()); !st.ok()) return st;
    FL_LOG(kInfo, "coord") << "agent " << hello.host() << " registered from " << ctx->peer();
    return grpc::Status::OK;
  }

  void Heard(struct Session& session) override {
    std::lock_guard lock(mu_);
    session.info->last_heard_mono_ns = MonoNowNs();
  }

  // A message after the Hello, in the order the agent sent it.
  void Handle(const std::shared_ptr<struct Session>& session,
              const pb::AgentMessage& msg) override {
    switch (msg.body_case()) {
      case pb::AgentMessage::kAck: {
        std::lock_guard lock(session->mu);
        auto it = session->pending.find(msg.ack().command_id());
        if (it != session->pending.end()) {
          it->second.set_value(NormalisedAck(msg.ack(), session->host));
          session->pending.erase(it);
        }
        break;
      }
      case pb::AgentMessage::kClockReply: {
        std::lock_guard lock(session->mu);
        auto it = session->probes.find(msg.clock_reply().probe_id());
        if (it != session->probes.end()) {
          it->second.set_value(msg.clock_reply().agent_wall_ns());
          session->probes.erase(it);
        }
        break;
      }
      case pb::AgentMessage::kTelemetry: {
        stats_.telemetry_batches++;
        stats_.samples += msg.telemetry().samples_size();
        stats_.events += msg.telemetry().events_size();
        TelemetryHandler handler;
        {
          std::lock_guard lock(mu_);
          handler = telemetry_;
        }
        // The handler checks each record; nothing that escapes it may end the coordinator.
        if (handler) {
          try {
            handler(session->host, msg.telemetry());
          } catch (const std::exception& e) {
            if (stats_.bad_messages++ == 0)
              FL_LOG(kError, "coord")
                  << "dropped a telemetry batch from agent " << session->host << ": " << e.what();
          }
        }
        break;
      }
      case pb::AgentMessage::kHeartbeat:
        stats_.heartbeats++;  // last_heard already updated
        break;
      default:
        break;
    }
  }

  // With TLS: the agent's certificate (already verified against the lab CA by the handshake)
  // must name the host it claims and have the role for it.
  grpc::Status CheckPeerCertificate(grpc::CallbackServerContext* ctx, const std::string& host) {
    if (!options_.tls) return grpc::Status::OK;
    auto auth = ctx->auth_context();
    if (!auth || !auth->IsPeerAuthenticated())
      return {grpc::StatusCode::UNAUTHENTICATED, "no verified client certificate"};
    CertIdentity id;
    for (const auto& v : auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME))
      id.common_name.assign(v.data(), v.size());
    for (const auto& v : auth->FindPropertyValues(GRPC_X509_SAN_PROPERTY_NAME))
      id.dns_names.emplace_back(v.data(), v.size());
    if (!CertNamesHost(id, host))
      return {grpc::StatusCode::PERMISSION_DENIED,
              "the agent's certificate names '" + id.common_name + "', not host '" + host + "'"};
    std::optional<CertRole> role;
    for (const auto& v : auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME))
      if (auto parsed = ReadCertificate(std::string_view(v.data(), v.size())); parsed.ok())
        role = parsed->role;
    CertRole want = host == "fabric" ? CertRole::kFabricAgent : CertRole::kAgent;
    if (role != want)
      return {grpc::StatusCode::PERMISSION_DENIED,
              "host '" + host + "' needs a certificate of role " + std::string(CertRoleName(want))};
    return grpc::Status::OK;
  }

  // One session per host: a host whose session is live (heard from within the lease) is
  // refused, so that nobody can push a working agent aside; a silent one is cancelled and
  // replaced (its agent died without closing the stream). The same agent instance re-dialling
  // this run replaces its old session at once (the agent saw the break first). A different
  // instance for a host that was already given commands means the agent was restarted: the
  // host is lost. Sends the Welcome before anyone else can write to the new session.
  grpc::Status Register(const std::shared_ptr<struct Session>& session, const pb::Hello& hello,
                        const std::string& peer) {
    // Sessions pushed aside, cancelled once mu_ is released (whichever way this returns).
    struct CancelOnExit {
      std::vector<std::shared_ptr<struct Session>> sessions;
      ~CancelOnExit() {
        for (auto& s : sessions) s->Cancel();
      }
    } cancel;
    bool resumed = false;
    {
      std::lock_guard lock(mu_);
      const std::string& host = hello.host();
      auto refuse = [&](grpc::StatusCode code, const std::string& why) {
        ++stats_.rejected;
        FL_LOG(kWarn, "coord") << "refused an agent for host " << host << " from " << peer << ": "
                               << why;
        return grpc::Status(code, why);
      };
      auto known = agents_.find(host);
      auto old = sessions_.find(host);
      const bool same_instance = known != agents_.end() && !hello.instance_id().empty() &&
                                 hello.instance_id() == known->second.instance;
      if (!hello.resume_run_id().empty()) {
        if (hello.resume_run_id() != options_.run_id)
          return refuse(grpc::StatusCode::FAILED_PRECONDITION, "this coordinator serves run " +
                                                                   options_.run_id + ", not run " +
                                                                   hello.resume_run_id());
        if (!same_instance)
          return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                        "no session of this agent instance for host " + host + " to resume");
      }
      if (known != agents_.end() && known->second.lost)
        return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                      "host " + host + " was lost in run " + options_.run_id + " (" +
                          known->second.lost_reason + "); it takes no agent until the next run");
      if (same_instance) {
        if (old != sessions_.end()) cancel.sessions.push_back(old->second);
        resumed = true;
      } else {
        if (old != sessions_.end() &&
            MonoNowNs() - known->second.last_heard_mono_ns <= options_.lease_ns)
          return refuse(
              grpc::StatusCode::ALREADY_EXISTS,
              "host " + host + " already has a live session (from " + known->second.peer + ")");
        if (known != agents_.end() && known->second.commanded) {
          if (!known->second.retired)
            MarkLost(host, known->second,
                     "its agent was restarted (a new instance dialled in): the ranks and faults "
                     "of the old one are gone");
          if (old != sessions_.end()) cancel.sessions.push_back(old->second);
          return refuse(
              grpc::StatusCode::FAILED_PRECONDITION,
              "host " + host + " is done with run " + options_.run_id +
                  (known->second.retired ? "" : " (lost: " + known->second.lost_reason + ")") +
                  "; it takes no new agent until the next run");
        }
        if (old != sessions_.end()) {
          FL_LOG(kWarn, "coord") << "agent " << host << " silent for more than a lease;"
                                 << " replacing its session with one from " << peer;
          cancel.sessions.push_back(old->second);
        }
      }
      sessions_[host] = session;
      AgentInfo& info = agents_[host];
      session->info = &info;
      info.host = host;
      info.peer = peer;
      info.fingerprint = hello.fingerprint();
      info.agent_version = hello.agent_version();
      info.connected = true;
      info.instance = hello.instance_id();
      if (!resumed) info.registered_wall_ns = WallNowNs();
      info.last_heard_mono_ns = MonoNowNs();
      ++stats_.sessions;
      if (resumed) {
        ++info.resumes;
        ++stats_.resumes;
        FL_LOG(kWarn, "coord") << "agent " << host << " re-dialled from " << peer
                               << "; its session resumes";
      }
      // Queued before anyone else can find the new session: the Welcome is its first message.
      pb::CoordinatorMessage welcome;
      welcome.mutable_welcome()->set_run_id(options_.run_id);
      welcome.mutable_welcome()->set_lease_ms(options_.lease_ns / kNsPerMs);
      welcome.mutable_welcome()->set_resumed(resumed);
      welcome.mutable_welcome()->set_telemetry_interval_ms(options_.agent_telemetry_interval_ns /
                                                           kNsPerMs);
      welcome.mutable_welcome()->set_heartbeat_interval_ms(options_.agent_heartbeat_interval_ns /
                                                           kNsPerMs);
      session->Send(std::move(welcome));
    }
    cv_.notify_all();
    return grpc::Status::OK;
  }

  // mu_ held.
  void MarkLost(const std::string& host, AgentInfo& info, const std::string& reason) {
    info.lost = true;
    info.lost_reason = reason;
    const Nanos silent = MonoNowNs() - info.last_heard_mono_ns;
    lost_.push_back({host, reason, silent});
    ++stats_.lost;
    FL_LOG(kError, "coord") << "lost the agent of host " << host << ": " << reason;
    cv_.notify_all();
  }

  // A host given commands whose session has been gone (or silent) for more than the lease.
  void CheckLeases() {
    std::vector<std::shared_ptr<struct Session>> cancel;
    {
      std::lock_guard lock(mu_);
      const Nanos now = MonoNowNs();
      for (auto& [host, info] : agents_) {
        if (!info.commanded || info.retired || info.lost) continue;
        const Nanos silent = now - info.last_heard_mono_ns;
        if (silent <= options_.lease_ns) continue;
        auto s = sessions_.find(host);
        std::string how = s == sessions_.end() ? "no session" : "its session silent";
        MarkLost(host, info,
                 how + " for " + std::to_string(silent / kNsPerMs) + " ms (lease " +
                     std::to_string(options_.lease_ns / kNsPerMs) + " ms)");
        if (s != sessions_.end()) cancel.push_back(s->second);
      }
    }
    for (auto& s : cancel) s->Cancel();
  }

  // The stream ended: the host has no session until its agent dials in again.
  void Closed(const std::shared_ptr<struct Session>& session) override {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(session->host);
    if (it != sessions_.end() && it->second == session) {
      sessions_.erase(it);
      agents_[session->host].connected = false;
      FL_LOG(kInfo, "coord") << "agent " << session->host << " disconnected";
    }
  }

  std::shared_ptr<struct Session> Find(const std::string& host) {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(host);
    return it == sessions_.end() ? nullptr : it->second;
  }

  // Heartbeats every heartbeat_interval; the hosts' leases checked every 50 ms at most.
  void HeartbeatLoop() {
    std::unique_lock lock(hb_mu_);
    const Nanos interval = options_.heartbeat_interval_ns;
    const Nanos tick = std::min<Nanos>(interval, 50 * kNsPerMs);
    Nanos next_hb = MonoNowNs() + interval;
    while (!stopping_) {
      hb_cv_.wait_for(lock, std::chrono::nanoseconds(tick));
      if (stopping_) break;
      CheckLeases();
      const Nanos now = MonoNowNs();
      if (now < next_hb) continue;
      next_hb = std::max(next_hb + interval, now);
      std::vector<std::shared_ptr<struct Session>> live;
      {
        std::lock_guard l(mu_);
        for (auto& [h, s] : sessions_) live.push_back(s);
      }
      pb::CoordinatorMessage hb;
      hb.mutable_heartbeat()->set_wall_ns(WallNowNs());
      for (auto& s : live)
        if (!s->Send(hb)) ++stats_.queue_full;
    }
  }

  void Shutdown() {
    {
      std::lock_guard lock(hb_mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    hb_cv_.notify_all();
    if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
    if (server_) {
      // The telemetry threads run until every call is done: each read they start fails then.
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
      server_->Wait();
    }
    {
      std::lock_guard lock(tele_mu_);
      tele_stop_ = true;
    }
    tele_cv_.notify_all();
    for (auto& t : tele_threads_) t.join();
    tele_threads_.clear();
  }

  void Post(std::function<void()> task) override {
    {
      std::lock_guard lock(tele_mu_);
      tele_q_.push_back(std::move(task));  // at most one per session: its read waits for it
    }
    tele_cv_.notify_one();
  }

  void TelemetryLoop() {
    std::unique_lock lock(tele_mu_);
    for (;;) {
      tele_cv_.wait(lock, [&] { return tele_stop_ || !tele_q_.empty(); });
      if (tele_q_.empty()) return;  // stopping, and nothing left
      std::function<void()> task = std::move(tele_q_.front());
      tele_q_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  ControlServerOptions options_;
  int port_ = 0;
  std::string host_part_;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<struct Session>> sessions_;
  std::map<std::string, AgentInfo> agents_;
  std::deque<LostAgentReport> lost_;  // not yet taken
  TelemetryHandler telemetry_;
  std::atomic<uint64_t> next_id_{1};
  struct AtomicStats {
    std::atomic<uint64_t> sessions{0}, rejected{0}, telemetry_batches{0}, samples{0}, events{0};
    std::atomic<uint64_t> bad_messages{0}, resumes{0}, lost{0}, queue_full{0}, heartbeats{0};
  } stats_;
  std::mutex hb_mu_;
  std::condition_variable hb_cv_;
  bool stopping_ = false;
  std::thread heartbeat_thread_;
  std::mutex tele_mu_;
  std::condition_variable tele_cv_;
  std::deque<std::function<void()>> tele_q_;
  bool tele_stop_ = false;
  std::vector<std::thread> tele_threads_;
};

FleetPace PaceForFleet(size_t agents, Nanos lease_ns) {
  const auto n = static_cast<Nanos>(agents);
  FleetPace p;
  p.telemetry_interval_ns = std::clamp<Nanos>(n * 200 * kNsPerUs, 50 * kNsPerMs, kNsPerSec);
  p.heartbeat_interval_ns =
      std::clamp<Nanos>(n * 300 * kNsPerUs, lease_ns / 6, std::max<Nanos>(lease_ns / 4, 1));
  return p;
}

StatusOr<std::unique_ptr<ControlServer>> ControlServer::Start(ControlServerOptions options) {
  if (options.token.empty()) return InvalidArgumentError("control server needs a token");
  if (options.lease_ns <= options.heartbeat_interval_ns)
    return InvalidArgumentError("lease must be longer than the heartbeat interval");
  auto impl = std::make_unique<Impl>(std::move(options));
  FL_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<ControlServer>(new ControlServer(std::move(impl)));
}

ControlServer::ControlServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ControlServer::~ControlServer() { Shutdown(); }

int ControlServer::port() const { return impl_->port_; }
std::string ControlServer::address() const {
  return impl_->host_part_ + ":" + std::to_string(impl_->port_);
}

void ControlServer::SetTelemetryHandler(TelemetryHandler handler) {
  std::lock_guard lock(impl_->mu_);
  impl_->telemetry_ = std::move(handler);
}

Status ControlServer::WaitForAgents(const std::vector<std::string>& hosts, Deadline deadline) {
  std::unique_lock lock(impl_->mu_);
  auto all_there = [&] {
    for (const auto& h : hosts)
      if (!impl_->sessions_.count(h)) return false;
    return true;
  };
  if (impl_->cv_.wait_for(lock, std::chrono::nanoseconds(deadline.Remaining()), all_there))
    return OkStatus();
  std::string missing;
  for (const auto& h : hosts)
    if (!impl_->sessions_.count(h)) missing += (missing.empty() ? "" : ", ") + h;
  return DeadlineExceededError("agents did not register in time: " + missing);
}

std::vector<AgentInfo> ControlServer::Agents() const {
  std::lock_guard lock(impl_->mu_);
  std::vector<AgentInfo> out;
  for (const auto& [h, info] : impl_->agents_) out.push_back(info);
  return out;
}

StatusOr<AgentInfo> ControlServer::Agent(const std::string& host) const {
  std::lock_guard lock(impl_->mu_);
  auto it = impl_->agents_.find(host);
  if (it == impl_->agents_.end())
    return NotFoundError("no agent for host '" + host + "' ever registered");
  return it->second;
}

StatusOr<pb::Ack> ControlServer::Call(const std::string& host, pb::CoordinatorMessage cmd,
                                      Deadline deadline) {
  std::shared_ptr<struct Session> session;
  {
    std::unique_lock lock(impl_->mu_);
    auto known = impl_->agents_.find(host);
    if (known == impl_->agents_.end())
      return UnavailableError("agent " + host + " is not connected");
    AgentInfo& info = known->second;
    info.commanded = true;
    // A host re-dialling (gone within the lease) is waited for; 50 ms slices re-check the lease.
    for (;;) {
      if (info.lost) return UnavailableError("agent " + host + " is lost: " + info.lost_reason);
      if (auto it = impl_->sessions_.find(host); it != impl_->sessions_.end()) {
        session = it->second;
        break;
      }
      if (info.retired) return UnavailableError("agent " + host + " is not connected (shut down)");
      if (MonoNowNs() - info.last_heard_mono_ns > impl_->options_.lease_ns)
        return UnavailableError("agent " + host + " is not connected");
      if (deadline.Expired())
        return DeadlineExceededError("agent " + host + " did not dial in again in time");
      impl_->cv_.wait_for(
          lock, std::chrono::nanoseconds(std::min<Nanos>(50 * kNsPerMs, deadline.Remaining())));
    }
  }
  uint64_t id = impl_->next_id_++;
  cmd.set_command_id(id);
  std::future<StatusOr<pb::Ack>> fut;
  {
    std::lock_guard lock(session->mu);
    if (!session->alive) return UnavailableError("agent " + host + " is not connected");
    fut = session->pending[id].get_future();
  }
  if (!session->Send(cmd)) {
    std::lock_guard lock(session->mu);
    session->pending.erase(id);
    return UnavailableError("cannot send to agent " + host +
                            " (its stream ended, or it has not read its last " +
                            std::to_string(kSendQueueLimit) + " messages)");
  }
  if (fut.wait_for(std::chrono::nanoseconds(deadline.Remaining())) != std::future_status::ready) {
    std::lock_guard lock(session->mu);
    session->pending.erase(id);
    return DeadlineExceededError("agent " + host + " did not acknowledge command " +
                                 std::to_string(id) + " in time");
  }
  StatusOr<pb::Ack> ack = fut.get();
  if (ack.ok() && ack->ok() && cmd.has_shutdown()) {
    std::lock_guard lock(impl_->mu_);
    impl_->agents_[host].retired = true;  // done with the run: its stream may end now
  }
  return ack;
}

std::optional<LostAgentReport> ControlServer::TakeLostAgent() {
  std::lock_guard lock(impl_->mu_);
  if (impl_->lost_.empty()) return std::nullopt;
  LostAgentReport r = std::move(impl_->lost_.front());
  impl_->lost_.pop_front();
  return r;
}

void ControlServer::DropSession(const std::string& host) {
  if (auto s = impl_->Find(host)) s->Cancel();
}

StatusOr<ClockOffset> ControlServer::SyncClock(const std::string& host, int probes,
                                               Deadline deadline) {
  auto session = impl_->Find(host);
  if (!session) return UnavailableError("agent " + host + " is not connected");
  // One probe over the session: its answer comes back through Handle (kClockReply).
  auto probe = [&](Deadline by) -> StatusOr<std::optional<ClockProbeSample>> {
    uint64_t id = impl_->next_id_++;
    std::future<Nanos> fut;
    {
      std::lock_guard lock(session->mu);
      if (!session->alive) return UnavailableError("agent " + host + " disconnected");
      fut = session->probes[id].get_future();
    }
    pb::CoordinatorMessage m;
    m.set_command_id(id);
    Nanos t0 = WallNowNs();
    m.mutable_clock_probe()->set_probe_id(id);
    m.mutable_clock_probe()->set_coordinator_wall_ns(t0);
    if (!session->Send(m)) {
      std::lock_guard lock(session->mu);
      session->probes.erase(id);
      return UnavailableError("cannot send to agent " + host);
    }
    if (fut.wait_for(std::chrono::nanoseconds(by.Remaining())) != std::future_status::ready) {
      std::lock_guard lock(session->mu);
      session->probes.erase(id);
      return std::optional<ClockProbeSample>();
    }
    Nanos t1 = fut.get();
    return std::optional<ClockProbeSample>(ClockProbeSample{t0, t1, WallNowNs()});
  };
  StatusOr<ClockOffset> off = MeasureClockOffset(host, probes, deadline, probe);
  if (!off.ok()) return off;
  std::lock_guard lock(impl_->mu_);
  impl_->agents_[host].clock = *off;
  impl_->agents_[host].clock_measured = true;
  return off;
}

ControlServerStats ControlServer::stats() const {
  ControlServerStats s;
  s.sessions = impl_->stats_.sessions;
  s.rejected = impl_->stats_.rejected;
  s.telemetry_batches = impl_->stats_.telemetry_batches;
  s.samples = impl_->stats_.samples;
  s.events = impl_->stats_.events;
  s.resumes = impl_->stats_.resumes;
  s.lost = impl_->stats_.lost;
  s.heartbeats = impl_->stats_.heartbeats;
  return s;
}

void ControlServer::Shutdown() { impl_->Shutdown(); }

}  // namespace fl::harness
