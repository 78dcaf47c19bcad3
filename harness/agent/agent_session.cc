#include "harness/agent/agent_session.h"

#include <grpcpp/grpcpp.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "harness/agent/agent_policy.h"
#include "harness/control/auth.h"
#include "harness/proto/faultline.grpc.pb.h"

namespace fl::harness {

namespace pb = faultline::v1;

class AgentSession::Impl {
 public:
  Impl(AgentSessionOptions options, AgentHandlers handlers)
      : options_(std::move(options)), handlers_(std::move(handlers)), timer_(io_) {
    lease_ns_ =
        EffectiveLease(options_.max_lease_ns, options_.default_lease_ns, options_.default_lease_ns);
  }

  ~Impl() { Stop(); }

  Status Connect() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 1000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 1000);
    std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
    if (options_.tls) {
      // The handshake verifies the coordinator against the lab CA alone (not the system's
      // roots) before the stream, and so the token, is sent.
      grpc::SslCredentialsOptions tls;
      tls.pem_root_certs = options_.tls->ca_pem;
      tls.pem_private_key = options_.tls->key_pem;
      tls.pem_cert_chain = options_.tls->cert_pem;
      creds = grpc::SslCredentials(tls);
      if (!options_.tls_server_name.empty())
        args.SetSslTargetNameOverride(options_.tls_server_name);
    }
    channel_ = grpc::CreateCustomChannel(options_.coordinator, creds, args);
    auto deadline =
        std::chrono::system_clock::now() + std::chrono::nanoseconds(options_.connect_timeout_ns);
    if (!channel_->WaitForConnected(deadline))
      return UnavailableError("coordinator " + options_.coordinator + " not reachable within " +
                              std::to_string(options_.connect_timeout_ns / kNsPerMs) + " ms" +
                              (options_.tls ? " (or its certificate is not from the lab CA)" : ""));
    stub_ = pb::Coordinator::NewStub(channel_);
    context_.AddMetadata(kTokenMetadataKey, options_.token);
    stream_ = stub_->Session(&context_);
    pb::AgentMessage hello;
    auto* h = hello.mutable_hello();
    h->set_token(options_.token);
    h->set_host(options_.host);
    h->set_agent_version("0.1.0");
    *h->mutable_fingerprint() = options_.fingerprint;
    h->set_agent_wall_ns(WallNowNs());
    if (!stream_->Write(hello)) return Finish("sending hello");
    pb::CoordinatorMessage first;
    if (!stream_->Read(&first)) return Finish("waiting for welcome");
    if (!first.has_welcome()) return InternalError("coordinator answered hello without a welcome");
    run_id_ = first.welcome().run_id();
    // The coordinator's lease, within the policy's cap (lease_ms is bounded before it is
    // scaled, so that no value overflows).
    const int64_t asked_ms = std::clamp<int64_t>(first.welcome().lease_ms(), 0, kMaxLeaseCapNs);
    lease_ns_ = EffectiveLease(options_.max_lease_ns, asked_ms * kNsPerMs, lease_ns_);
    if (asked_ms * kNsPerMs > lease_ns_)
      FL_LOG(kWarn, "agent") << "coordinator asked for a " << asked_ms << " ms lease; this agent's "
                             << "policy keeps at most " << lease_ns_ / kNsPerMs << " ms";
    last_renewal_ns_ = MonoNowNs();
    connected_ = true;
    reader_ = std::thread([this] { ReadLoop(); });
    ScheduleTick();
    timer_thread_ = std::thread([this] { io_.run(); });
    FL_LOG(kInfo, "agent") << "registered with " << options_.coordinator << " for run " << run_id_
                           << ", lease " << lease_ns_ / kNsPerMs << " ms";
    return OkStatus();
  }

  Status Finish(const std::string& what) {
    grpc::Status st = stream_->Finish();
    if (st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
        st.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        st.error_code() == grpc::StatusCode::ALREADY_EXISTS)
      return FailedPreconditionError("coordinator refused this agent: " + st.error_message());
    return UnavailableError(what + ": " + (st.ok() ? "stream closed" : st.error_message()));
  }

  Status Write(const pb::AgentMessage& m) {
    std::lock_guard lock(write_mu_);
    if (!connected_ || !stream_->Write(m))
      return UnavailableError("control stream to coordinator is down");
    return OkStatus();
  }

  void ReadLoop() {
    pb::CoordinatorMessage msg;
    while (stream_->Read(&msg)) {
      last_renewal_ns_ = MonoNowNs();
      if (msg.has_heartbeat()) continue;
      if (msg.has_clock_probe()) {
        pb::AgentMessage reply;
        reply.mutable_clock_reply()->set_probe_id(msg.clock_probe().probe_id());
        reply.mutable_clock_reply()->set_agent_wall_ns(WallNowNs());
        Write(reply).IgnoreError();
        continue;
      }
      pb::AgentMessage reply;
      pb::Ack ack;
      if (handlers_.on_command) {
        ack = handlers_.on_command(msg);
      } else {
        ack.set_ok(false);
        ack.set_error("agent has no command handler");
      }
      ack.set_command_id(msg.command_id());
      *reply.mutable_ack() = ack;
      Write(reply).IgnoreError();
      if (msg.has_shutdown()) {
        shutdown_requested_ = true;
        break;
      }
    }
    {
      std::lock_guard lock(write_mu_);
      connected_ = false;
    }
    if (!stopping_ && !shutdown_requested_)
      FL_LOG(kWarn, "agent") << "control stream closed; faults stay until the lease ("
                             << lease_ns_ / kNsPerMs << " ms) lapses";
  }

  void ScheduleTick() {
    timer_.expires_after(
        std::chrono::nanoseconds(std::min(options_.heartbeat_interval_ns, lease_ns_ / 4)));
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping_) return;
      Tick();
      if (!ended()) ScheduleTick();
    });
  }

  void Tick() {
    if (MonoNowNs() - last_renewal_ns_.load() > lease_ns_) {
      FL_LOG(kWarn, "agent") << "lease lapsed: no word from the coordinator for more than "
                             << lease_ns_ / kNsPerMs << " ms; reverting";
      if (handlers_.on_lease_lapsed) handlers_.on_lease_lapsed();
      {
        std::lock_guard lock(end_mu_);
        lapsed_ = true;
      }
      end_cv_.notify_all();
      return;
    }
    if (connected_) {
      pb::AgentMessage hb;
      if (handlers_.heartbeat) *hb.mutable_heartbeat() = handlers_.heartbeat();
      hb.mutable_heartbeat()->set_wall_ns(WallNowNs());
      Write(hb).IgnoreError();
    }
  }

  bool ended() {
    std::lock_guard lock(end_mu_);
    return lapsed_ || stopped_;
  }

  bool WaitEnded(Deadline deadline) {
    std::unique_lock lock(end_mu_);
    return end_cv_.wait_for(lock, std::chrono::nanoseconds(deadline.Remaining()),
                            [this] { return lapsed_ || stopped_; });
  }

  void Stop() {
    if (stopping_.exchange(true)) return;
    {
      std::lock_guard lock(end_mu_);
      stopped_ = true;
    }
    end_cv_.notify_all();
    context_.TryCancel();
    if (reader_.joinable()) reader_.join();
    io_.stop();
    if (timer_thread_.joinable()) timer_thread_.join();
  }

  AgentSessionOptions options_;
  AgentHandlers handlers_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Coordinator::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::AgentMessage, pb::CoordinatorMessage>> stream_;
  std::mutex write_mu_;
  std::atomic<bool> connected_{false};
  std::string run_id_;
  Nanos lease_ns_;
  std::atomic<Nanos> last_renewal_ns_{0};
  std::thread reader_;
  boost::asio::io_context io_;
  boost::asio::steady_timer timer_;
  std::thread timer_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> shutdown_requested_{false};
  std::mutex end_mu_;
  std::condition_variable end_cv_;
  bool lapsed_ = false;
  bool stopped_ = false;
};

StatusOr<std::unique_ptr<AgentSession>> AgentSession::Connect(AgentSessionOptions options,
                                                              AgentHandlers handlers) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handlers));
  FL_RETURN_IF_ERROR(impl->Connect());
  return std::unique_ptr<AgentSession>(new AgentSession(std::move(impl)));
}

AgentSession::AgentSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AgentSession::~AgentSession() = default;

Status AgentSession::SendTelemetry(const pb::TelemetryBatch& batch) {
  pb::AgentMessage m;
  *m.mutable_telemetry() = batch;
  return impl_->Write(m);
}
const std::string& AgentSession::run_id() const { return impl_->run_id_; }
Nanos AgentSession::lease_ns() const { return impl_->lease_ns_; }
bool AgentSession::shutdown_requested() const { return impl_->shutdown_requested_; }

bool AgentSession::lease_lapsed() const {
  std::lock_guard lock(impl_->end_mu_);
  return impl_->lapsed_;
}
bool AgentSession::connected() const {
  std::lock_guard lock(impl_->write_mu_);
  return impl_->connected_;
}
bool AgentSession::WaitEnded(Deadline deadline) { return impl_->WaitEnded(deadline); }
void AgentSession::Stop() { impl_->Stop(); }

}  // namespace fl::harness
