#include "harness/agent/agent_session.h"

#include <grpcpp/grpcpp.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "common/ids.h"
#include "common/log.h"
#include "harness/agent/agent_policy.h"
#include "harness/control/auth.h"
#include "harness/proto/faultline.grpc.pb.h"

namespace fl::harness {

namespace pb = faultline::v1;

class AgentSession::Impl {
 public:
  using ClientStream = grpc::ClientReaderWriter<pb::AgentMessage, pb::CoordinatorMessage>;

  Impl(AgentSessionOptions options, AgentHandlers handlers)
      : options_(std::move(options)), handlers_(std::move(handlers)), timer_(io_) {
    lease_ns_ =
        EffectiveLease(options_.max_lease_ns, options_.default_lease_ns, options_.default_lease_ns);
    if (options_.instance_id.empty()) options_.instance_id = RandomHex(16);
  }

  ~Impl() { Stop(); }

  Status Connect() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 1000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 1000);
    // A redial must find a coordinator that is back within the lease: the channel's own
    // reconnect backoff (default up to 2 minutes) is kept short.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
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
    // In slices, so that a stop (SIGTERM to a service agent waiting for its coordinator) is
    // answered within 200 ms, not after the whole --connect-timeout.
    const auto deadline =
        std::chrono::system_clock::now() + std::chrono::nanoseconds(options_.connect_timeout_ns);
    bool connected = false;
    while (!connected && std::chrono::system_clock::now() < deadline) {
      connected = channel_->WaitForConnected(
          std::min(deadline, std::chrono::system_clock::now() + std::chrono::milliseconds(200)));
      if (!connected && options_.keep_going && !options_.keep_going())
        return CancelledError("stopped while dialling " + options_.coordinator);
    }
    if (!connected)
      return UnavailableError("coordinator " + options_.coordinator + " not reachable within " +
                              std::to_string(options_.connect_timeout_ns / kNsPerMs) + " ms" +
                              (options_.tls ? " (or its certificate is not from the lab CA)" : ""));
    stub_ = pb::Coordinator::NewStub(channel_);
    FL_ASSIGN_OR_RETURN(pb::Welcome welcome, Dial(/*resume=*/false));
    run_id_ = welcome.run_id();
    // The coordinator's lease, within the policy's cap (lease_ms is bounded before it is
    // scaled, so that no value overflows).
    const int64_t asked_ms = std::clamp<int64_t>(welcome.lease_ms(), 0, kMaxLeaseCapNs);
    lease_ns_ = EffectiveLease(options_.max_lease_ns, asked_ms * kNsPerMs, lease_ns_);
    if (asked_ms * kNsPerMs > lease_ns_)
      FL_LOG(kWarn, "agent") << "coordinator asked for a " << asked_ms << " ms lease; this agent's "
                             << "policy keeps at most " << lease_ns_ / kNsPerMs << " ms";
    // The fleet's pace, when the coordinator sets one (control_server.h, PaceForFleet).
    if (welcome.heartbeat_interval_ms() > 0)
      heartbeat_interval_ns_ =
          std::clamp<int64_t>(welcome.heartbeat_interval_ms(), 1, 300'000) * kNsPerMs;
    if (welcome.telemetry_interval_ms() > 0)
      telemetry_interval_ns_ =
          std::clamp<int64_t>(welcome.telemetry_interval_ms(), 1, 60'000) * kNsPerMs;
    last_renewal_ns_ = MonoNowNs();
    connected_ = true;
    command_thread_ = std::thread([this] { CommandThread(); });
    reader_ = std::thread([this] { ReaderThread(); });
    ScheduleTick();
    timer_thread_ = std::thread([this] { io_.run(); });
    FL_LOG(kInfo, "agent") << "registered with " << options_.coordinator << " for run " << run_id_
                           << ", lease " << lease_ns_ / kNsPerMs << " ms";
    return OkStatus();
  }

  // Opens a stream, says Hello and reads the Welcome. On success the stream becomes the
  // session's (stream_, context_). Cancelled by Stop() and by a lapse while it waits.
  StatusOr<pb::Welcome> Dial(bool resume) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata(kTokenMetadataKey, options_.token);
    {
      std::lock_guard lock(ctx_mu_);
      if (stopping_ || lapse_started_) return UnavailableError("the session is ending");
      dialing_ctx_ = ctx.get();
    }
    std::unique_ptr<ClientStream> stream = stub_->Session(ctx.get());
    pb::AgentMessage hello;
    auto* h = hello.mutable_hello();
    h->set_token(options_.token);
    h->set_host(options_.host);
    h->set_agent_version(options_.agent_version);
    *h->mutable_fingerprint() =
        options_.collect_fingerprint ? options_.collect_fingerprint() : options_.fingerprint;
    h->set_agent_wall_ns(WallNowNs());
    h->set_instance_id(options_.instance_id);
    if (resume) h->set_resume_run_id(run_id_);
    pb::CoordinatorMessage first;
    const char* failed = nullptr;
    if (!stream->Write(hello))
      failed = "sending hello";
    else if (!stream->Read(&first))
      failed = "waiting for welcome";
    {
      std::lock_guard lock(ctx_mu_);
      dialing_ctx_ = nullptr;
    }
    if (failed) return FinishStatus(*stream, failed);
    if (!first.has_welcome()) {
      ctx->TryCancel();
      (void)stream->Finish();
      return InternalError("coordinator answered hello without a welcome");
    }
    if (resume && (first.welcome().run_id() != run_id_ || !first.welcome().resumed())) {
      ctx->TryCancel();
      (void)stream->Finish();
      return FailedPreconditionError("coordinator at " + options_.coordinator + " serves run '" +
                                     first.welcome().run_id() + "', not a resume of run '" +
                                     run_id_ + "'");
    }
    {
      std::lock_guard wlock(write_mu_);
      std::lock_guard clock(ctx_mu_);
      stream_ = std::move(stream);
      context_ = std::move(ctx);
    }
    return first.welcome();
  }

  static Status FinishStatus(ClientStream& stream, const std::string& what) {
    grpc::Status st = stream.Finish();
    if (st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
        st.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        st.error_code() == grpc::StatusCode::ALREADY_EXISTS ||
        st.error_code() == grpc::StatusCode::FAILED_PRECONDITION)
      return FailedPreconditionError("coordinator refused this agent: " + st.error_message());
    return UnavailableError(what + ": " + (st.ok() ? "stream closed" : st.error_message()));
  }

  Status Write(const pb::AgentMessage& m) {
    std::lock_guard lock(write_mu_);
    if (!connected_ || !stream_ || !stream_->Write(m))
      return UnavailableError("control stream to coordinator is down");
    last_write_ns_ = MonoNowNs();
    return OkStatus();
  }

  // An ack that cannot be written (the stream is down: its command's call on the coordinator
  // fails Unavailable, and the command is not replayed on a resumed stream) is logged and
  // counted (acks_lost).
  Status WriteAck(const pb::Ack& ack) {
    pb::AgentMessage m;
    *m.mutable_ack() = ack;
    Status st = Write(m);
    if (!st.ok()) {
      const uint64_t lost = ++acks_lost_;
      FL_LOG(kWarn, "agent") << "ack of command " << ack.command_id() << " ("
                             << (ack.ok() ? "ok" : "failed: " + ack.error())
                             << ") not sent: " << st.message() << "; " << lost
                             << " ack(s) lost in all";
    }
    return st;
  }

  // Reads the stream; when it breaks, redials for as long as the lease lasts.
  void ReaderThread() {
    for (;;) {
      ReadLoop();
      // After Shutdown the ack must reach the coordinator: half-close and let it end the call
      // (cancelling could drop the ack). Stop() cancels a coordinator that does not.
      DropStream(/*cancel=*/!shutdown_requested_);
      if (stopping_ || shutdown_requested_ || ended()) return;
      FL_LOG(kWarn, "agent") << "control stream closed; redialling " << options_.coordinator
                             << " for up to the lease (" << lease_ns_ / kNsPerMs
                             << " ms); faults and ranks stay";
      if (!Redial()) return;
    }
  }

  // Takes the current stream away from the writers (Write() fails from now on), ends it and
  // frees it before its context. Reader thread only.
  void DropStream(bool cancel = true) {
    std::unique_ptr<ClientStream> old_stream;
    {
      std::lock_guard wlock(write_mu_);
      connected_ = false;
      old_stream = std::move(stream_);
    }
    if (old_stream) {
      if (cancel) {
        std::lock_guard clock(ctx_mu_);
        if (context_) context_->TryCancel();
      } else {
        old_stream->WritesDone();
      }
      (void)old_stream->Finish();  // context_ stays where Stop() can cancel it meanwhile
    }
    old_stream.reset();
    std::unique_ptr<grpc::ClientContext> old_ctx;
    std::lock_guard clock(ctx_mu_);
    old_ctx = std::move(context_);
  }

  // True when the session is attached again.
  bool Redial() {
    Nanos backoff = 100 * kNsPerMs;
    std::string last_error;
    while (!stopping_ && !ended()) {
      Nanos left = lease_ns_ - (MonoNowNs() - last_renewal_ns_.load());
      if (left <= 0) return false;  // the timer lapses the lease
      Nanos wait = std::min(options_.redial_try_ns, left);
      auto until = std::chrono::system_clock::now() + std::chrono::nanoseconds(wait);
      Status st = OkStatus();
      if (!channel_->WaitForConnected(until)) {
        st = UnavailableError("coordinator " + options_.coordinator + " not reachable");
      } else {
        auto welcome = Dial(/*resume=*/true);
        if (welcome.ok()) {
          {
            std::lock_guard lock(end_mu_);
            if (!lapsed_ && !stopped_) last_renewal_ns_ = MonoNowNs();
          }
          if (ended() || lapse_started_) {  // too late: the lease is over
            DropStream();
            return false;
          }
          connected_ = true;
          ++resumes_;
          FL_LOG(kWarn, "agent") << "control stream to " << options_.coordinator
                                 << " re-attached to run " << run_id_;
          return true;
        }
        st = welcome.status();
        if (st.code() == Code::kFailedPrecondition) {
          // This coordinator will not take the run back: nothing renews the lease now.
          FL_LOG(kError, "agent") << "cannot resume run " << run_id_ << ": " << st.message();
          LapseSoon(st.message());
          return false;
        }
      }
      if (st.message() != last_error)
        FL_LOG(kWarn, "agent") << "redial: " << st.message() << "; trying again";
      last_error = st.message();
      WaitStopOrLapse(backoff);
      backoff = std::min<Nanos>(2 * backoff, kNsPerSec);
    }
    return false;
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
        // IgnoreError: only a broken stream fails it; this thread sees that at its next Read
        // and redials, and the coordinator's SyncClock stops at the unanswered probe (its
        // deadline) and keeps the probes that were answered.
        Write(reply).IgnoreError();
        continue;
      }
      if (ended()) break;  // the lease is over: no command acts after the revert
      // Commands run on the command thread, so that this thread goes on reading the
      // coordinator's heartbeats (the lease) while a long one (a rank stop, a verified fault)
      // runs. After Shutdown it reads no more: it waits until the ack is written.
      const bool shutdown = msg.has_shutdown();
      {
        std::lock_guard lock(cmd_mu_);
        commands_.push_back(msg);
      }
      cmd_cv_.notify_all();
      if (shutdown) {
        std::unique_lock lock(cmd_mu_);
        cmd_cv_.wait(lock,
                     [this] { return shutdown_requested_ || stopping_ || cmd_exit_ || ended(); });
        break;
      }
    }
  }

  // Runs the commands in order, one at a time, and writes their acks (on the stream of the
  // moment: an ack whose stream broke meanwhile is lost, as its command's call on the
  // coordinator already failed).
  void CommandThread() {
    for (;;) {
      pb::CoordinatorMessage msg;
      {
        std::unique_lock lock(cmd_mu_);
        cmd_cv_.wait(lock, [this] { return stopping_ || !commands_.empty(); });
        if (stopping_) {
          cmd_exit_ = true;
          cmd_cv_.notify_all();
          return;
        }
        msg = std::move(commands_.front());
        commands_.pop_front();
      }
      if (ended()) {  // lapsed: queued commands are dropped
        cmd_cv_.notify_all();
        continue;
      }
      std::optional<pb::Ack> ack;
      if (handlers_.on_command) {
        ack = handlers_.on_command(msg);
      } else {
        ack.emplace();
        ack->set_ok(false);
        ack->set_error("agent has no command handler");
      }
      if (ack) {  // nullopt: the handler sends it later (SendAck)
        ack->set_command_id(msg.command_id());
        // IgnoreError: WriteAck logs and counts a lost ack itself; nothing else is to be done
        // here (the coordinator's call for it has failed already).
        WriteAck(*ack).IgnoreError();
      }
      if (msg.has_shutdown()) {
        {
          std::lock_guard lock(cmd_mu_);
          shutdown_requested_ = true;
        }
        cmd_cv_.notify_all();
      }
    }
  }

  void WaitStopOrLapse(Nanos ns) {
    std::unique_lock lock(end_mu_);
    end_cv_.wait_for(lock, std::chrono::nanoseconds(ns),
                     [this] { return lapsed_ || stopped_ || lapse_started_; });
  }

  void ScheduleTick() {
    timer_.expires_after(std::chrono::nanoseconds(std::min(heartbeat_interval_ns_, lease_ns_ / 4)));
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping_) return;
      Tick();
      if (!ended()) ScheduleTick();
    });
  }

  // From the reader thread: the lease ends now, on the timer thread (handlers never run
  // concurrently with themselves).
  void LapseSoon(const std::string& why) {
    lapse_started_ = true;
    end_cv_.notify_all();
    boost::asio::post(io_, [this, why] {
      if (!ended()) Lapse("the coordinator refused to resume the run (" + why + ")");
    });
  }

  void Lapse(const std::string& why) {
    {
      std::lock_guard lock(ctx_mu_);
      lapse_started_ = true;
      // A stream still open (half-dead) or a redial in flight stops here: no command may act
      // once the revert has begun.
      if (context_) context_->TryCancel();
      if (dialing_ctx_) dialing_ctx_->TryCancel();
    }
    {
      std::lock_guard lock(end_mu_);
      if (lapsed_) return;
    }
    FL_LOG(kWarn, "agent") << "lease lapsed: " << why << "; reverting";
    if (handlers_.on_lease_lapsed) handlers_.on_lease_lapsed();
    {
      std::lock_guard lock(end_mu_);
      lapsed_ = true;
    }
    end_cv_.notify_all();
  }

  void Tick() {
    bool lapse = false;
    {
      std::lock_guard lock(end_mu_);  // against a redial that renews the lease right now
      lapse = MonoNowNs() - last_renewal_ns_.load() > lease_ns_;
    }
    if (lapse) {
      Lapse("no word from the coordinator for more than " + std::to_string(lease_ns_ / kNsPerMs) +
            " ms");
      return;
    }
    // A heartbeat only when nothing else went to the coordinator within the interval: any
    // message tells it this agent is alive, and a large fleet's heartbeats are most of its
    // messages.
    if (connected_ &&
        MonoNowNs() - last_write_ns_.load() >= std::min(heartbeat_interval_ns_, lease_ns_ / 4)) {
      pb::AgentMessage hb;
      if (handlers_.heartbeat) *hb.mutable_heartbeat() = handlers_.heartbeat();
      hb.mutable_heartbeat()->set_wall_ns(WallNowNs());
      // IgnoreError: only a broken stream fails it, which the reader thread sees and redials;
      // the agent's lease is renewed by the coordinator's messages, not by its own heartbeats.
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
    {
      std::lock_guard lock(ctx_mu_);
      if (context_) context_->TryCancel();
      if (dialing_ctx_) dialing_ctx_->TryCancel();
    }
    {
      std::lock_guard lock(cmd_mu_);  // stopping_ is set: wakes the command thread
    }
    cmd_cv_.notify_all();
    if (reader_.joinable()) reader_.join();
    if (command_thread_.joinable()) command_thread_.join();
    io_.stop();
    if (timer_thread_.joinable()) timer_thread_.join();
  }

  AgentSessionOptions options_;
  AgentHandlers handlers_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Coordinator::Stub> stub_;
  // The current stream and its context: replaced only by the reader thread, under both locks
  // (write_mu_ first); the stream is destroyed before its context.
  std::mutex ctx_mu_;  // guards context_, dialing_ctx_; taken after write_mu_
  std::unique_ptr<grpc::ClientContext> context_;  // declared first: outlives stream_
  grpc::ClientContext* dialing_ctx_ = nullptr;    // a Dial() waiting for its Welcome
  std::atomic<bool> lapse_started_{false};
  std::mutex write_mu_;  // guards stream_
  std::unique_ptr<ClientStream> stream_;
  std::atomic<bool> connected_{false};
  std::atomic<uint64_t> resumes_{0};
  std::atomic<uint64_t> acks_lost_{0};  // acks that could not be written (WriteAck)
  std::string run_id_;
  Nanos lease_ns_;
  Nanos heartbeat_interval_ns_ = options_.heartbeat_interval_ns;  // the Welcome's, if it has one
  Nanos telemetry_interval_ns_ = 0;                               // 0: the agent's default
  std::atomic<Nanos> last_renewal_ns_{0};
  std::atomic<Nanos> last_write_ns_{0};  // the last message written to the coordinator
  std::thread reader_;
  std::mutex cmd_mu_;  // guards commands_, cmd_exit_; shutdown_requested_ is set under it
  std::condition_variable cmd_cv_;
  std::deque<pb::CoordinatorMessage> commands_;
  bool cmd_exit_ = false;
  std::thread command_thread_;
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

StatusOr<std::unique_ptr<AgentSession>> AgentSession::ConnectUntilWelcomed(
    AgentSessionOptions options, AgentHandlers handlers, const std::function<bool()>& keep_going) {
  if (options.instance_id.empty()) options.instance_id = RandomHex(16);
  if (!options.keep_going) options.keep_going = keep_going;
  Nanos backoff = 500 * kNsPerMs;
  std::string last_error;
  for (;;) {
    auto session = Connect(options, handlers);
    if (session.ok()) return session;
    if (session.status().message() != last_error)
      FL_LOG(kWarn, "agent") << "not registered yet (" << session.status().message()
                             << "); dialling again, every " << backoff / kNsPerMs
                             << " ms at first and 10 s at most";
    last_error = session.status().message();
    // In slices, so that keep_going() (a signal) is answered within 100 ms.
    for (Deadline d = Deadline::After(backoff); !d.Expired();) {
      if (!keep_going()) return session.status();
      std::this_thread::sleep_for(
          std::chrono::nanoseconds(std::min<Nanos>(100 * kNsPerMs, d.Remaining())));
    }
    if (!keep_going()) return session.status();
    backoff = std::min<Nanos>(2 * backoff, 10 * kNsPerSec);
  }
}

AgentSession::AgentSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AgentSession::~AgentSession() = default;

Status AgentSession::SendTelemetry(const pb::TelemetryBatch& batch) {
  pb::AgentMessage m;
  *m.mutable_telemetry() = batch;
  return impl_->Write(m);
}
Status AgentSession::SendAck(const pb::Ack& ack) { return impl_->WriteAck(ack); }
const std::string& AgentSession::run_id() const { return impl_->run_id_; }
Nanos AgentSession::lease_ns() const { return impl_->lease_ns_; }
Nanos AgentSession::telemetry_interval_ns() const { return impl_->telemetry_interval_ns_; }
bool AgentSession::shutdown_requested() const { return impl_->shutdown_requested_; }

bool AgentSession::lease_lapsed() const {
  std::lock_guard lock(impl_->end_mu_);
  return impl_->lapsed_;
}
bool AgentSession::connected() const {
  std::lock_guard lock(impl_->write_mu_);
  return impl_->connected_;
}
uint64_t AgentSession::resumes() const { return impl_->resumes_; }
uint64_t AgentSession::acks_lost() const { return impl_->acks_lost_; }
const std::string& AgentSession::instance_id() const { return impl_->options_.instance_id; }
bool AgentSession::WaitEnded(Deadline deadline) { return impl_->WaitEnded(deadline); }
void AgentSession::Stop() { impl_->Stop(); }

}  // namespace fl::harness
