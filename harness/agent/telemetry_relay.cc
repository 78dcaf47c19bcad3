#include "harness/agent/telemetry_relay.h"

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <variant>

#include "common/log.h"
#include "harness/agent/agent_session.h"
#include "harness/agent/nic_counters.h"
#include "harness/agent/telemetry_line.h"
#include "harness/proto/faultline.pb.h"
#include "harness/proto/nic_sample.h"

namespace fl::harness {

namespace pb = faultline::v1;
namespace asio = boost::asio;
using UnixProto = asio::local::stream_protocol;

class TelemetryRelay::Impl {
 public:
  explicit Impl(TelemetryRelayOptions o) : opts_(std::move(o)), acceptor_(io_), flush_timer_(io_) {}

  Status Start() {
    socket_path_ = SocketPath(opts_.run_dir, opts_.host);
    if (!socket_path_.empty()) {
      unlink(socket_path_.c_str());
      boost::system::error_code ec;
      acceptor_.open(UnixProto(), ec);
      if (!ec) acceptor_.bind(UnixProto::endpoint(socket_path_), ec);
      if (!ec) acceptor_.listen(64, ec);
      if (ec) return UnavailableError("telemetry socket " + socket_path_ + ": " + ec.message());
      Accept();
    }
    nic_sampler_ = std::make_unique<NicSampler>(
        std::make_unique<KernelNicCounters>(),
        [this](std::vector<NicSample>&& round) { AddNicSamples(round); }, opts_.nic_interval_ns);
    ScheduleFlush();
    io_thread_ = std::thread([this] { io_.run(); });
    return OkStatus();
  }

  ~Impl() {
    if (uint64_t n = dropped_.load(); n > 0)
      FL_LOG(kWarn, "agent") << n << " bad telemetry line(s) from workers were dropped in all";
    io_.stop();
    if (io_thread_.joinable()) io_thread_.join();
    if (!socket_path_.empty()) unlink(socket_path_.c_str());
  }

  // One worker's connection. The source of a bad line is the socket and the last rank that
  // connection spoke for (-1 before its first good line).
  struct Conn {
    explicit Conn(UnixProto::socket s) : sock(std::move(s)), buf(kMaxTelemetryLineBytes + 1) {}
    UnixProto::socket sock;
    asio::streambuf buf;  // bounded: a line without a newline cannot grow it without end
    int rank = -1;
    uint64_t dropped = 0;
  };

  void Accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, UnixProto::socket sock) {
      if (ec) return;
      auto conn = std::make_shared<Conn>(std::move(sock));
      ReadLine(conn);
      Accept();
    });
  }

  void ReadLine(std::shared_ptr<Conn> c) {
    asio::async_read_until(
        c->sock, c->buf, '\n', [this, c](const boost::system::error_code& ec, size_t n) {
          if (ec == asio::error::not_found) {
            // The line outgrew the buffer: drop it and the connection
            // (there is no telling where the next line starts).
            Dropped(*c, "line longer than " + std::to_string(kMaxTelemetryLineBytes) +
                            " bytes; connection closed");
          }
          if (ec) {
            ConnectionClosed(*c);
            return;  // worker closed its end
          }
          std::string line(asio::buffers_begin(c->buf.data()),
                           asio::buffers_begin(c->buf.data()) + n);
          c->buf.consume(n);
          Ingest(*c, line);
          ReadLine(c);
        });
  }

  void Ingest(Conn& c, const std::string& line) {
    auto parsed = ParseTelemetryLine(line);
    if (!parsed.ok()) {
      Dropped(c, parsed.status().message());
      return;
    }
    bool urgent = false;
    {
      std::lock_guard lock(batch_mu_);
      urgent = Add(c, *parsed);
    }
    if (opts_.on_progress && std::holds_alternative<TelemetrySample>(*parsed))
      opts_.on_progress(last_iteration_);
    // A fault's detection, failover or restored path goes out at once, not with the next
    // flush: the coordinator times faults against them (after_event / during) and prints them.
    // (One flush for a burst: every rank reports its own.) Ingest runs on the Asio thread.
    if (urgent && !urgent_flush_posted_) {
      urgent_flush_posted_ = true;
      asio::post(io_, [this] {
        urgent_flush_posted_ = false;
        Flush();
      });
    }
  }

  // REQUIRES batch_mu_. True for an event the coordinator waits for.
  bool Add(Conn& c, const TelemetryLine& parsed) {
    if (const auto* smp = std::get_if<TelemetrySample>(&parsed)) {
      c.rank = smp->rank;
      uint64_t& last = last_iteration_[smp->rank];
      last = std::max<uint64_t>(last, smp->iteration);
      pb::Sample* s = batch_.add_samples();
      s->set_rank(smp->rank);
      s->set_iteration(smp->iteration);
      s->set_start_wall_ns(smp->start_wall_ns);
      s->set_end_wall_ns(smp->end_wall_ns);
      s->set_bytes(smp->bytes);
      s->set_verified(smp->verified);
      s->set_mismatch(smp->mismatch);
    } else if (const auto* e = std::get_if<TelemetryEvent>(&parsed)) {
      if (e->rank >= 0) c.rank = e->rank;
      pb::Event* ev = batch_.add_events();
      ev->set_rank(e->rank);
      ev->set_wall_ns(e->wall_ns);
      ev->set_kind(e->kind);
      ev->set_detail(e->detail_json);
      return e->kind == "fault_detected" || e->kind == "failover_done" ||
             e->kind == "path_restored";
    }
    return false;
  }

  // A bad line: counted, logged (and reported as a telemetry_dropped event) for the first one
  // on a connection; later ones on it are counted and summed up when it closes.
  void Dropped(Conn& c, std::string why) {
    ++dropped_;
    if (++c.dropped > 1) return;
    for (char& ch : why)  // parse errors quote the input: keep the log and event printable
      if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) > 0x7e) ch = '?';
    FL_LOG(kWarn, "agent") << "dropped a bad telemetry line on " << socket_path_ << " (rank "
                           << c.rank << "): " << why
                           << "; further bad lines on this connection are only counted";
    AddEvent(c.rank, "telemetry_dropped",
             {{"source", socket_path_}, {"rank", c.rank}, {"count", 1}, {"reason", why}});
  }

  void ConnectionClosed(const Conn& c) {
    if (c.dropped <= 1) return;
    FL_LOG(kWarn, "agent") << c.dropped << " bad telemetry lines dropped on " << socket_path_
                           << " (rank " << c.rank << ")";
    AddEvent(c.rank, "telemetry_dropped",
             {{"source", socket_path_}, {"rank", c.rank}, {"count", c.dropped}});
  }

  void AddEvent(int rank, const std::string& kind, const nlohmann::json& detail) {
    std::lock_guard lock(batch_mu_);
    pb::Event* ev = batch_.add_events();
    ev->set_rank(rank);
    ev->set_wall_ns(WallNowNs());
    ev->set_kind(kind);
    ev->set_detail(detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }

  // One round of the NIC sampler (its thread): into the next batch.
  void AddNicSamples(const std::vector<NicSample>& round) {
    std::lock_guard lock(batch_mu_);
    for (const auto& s : round) {
      pb::NicSample* n = batch_.add_nics();
      n->set_nic(s.nic);
      n->set_wall_ns(s.wall_ns);
      SetNicCounters(s.counters, n);
    }
  }

  // The host's data NICs are sampled while its ranks run (from the first LaunchRanks to
  // StopRanks, Shutdown or a lapsed lease). A host whose fabric names no NIC of its own (the
  // fabric agent's) samples nothing.
  void StartNicSampling() {
    if (!opts_.fabric || !nic_sampler_) return;
    auto ports = opts_.fabric->HostLinks(opts_.host, injectors::PortSide::kHost);
    if (!ports.ok()) {
      FL_LOG(kDebug, "agent") << "no NICs to sample: " << ports.status().ToUserString();
      return;
    }
    nic_sampler_->Start(NicTargetsOf(opts_.host, *ports));
  }

  void StopNicSampling() {
    if (nic_sampler_) nic_sampler_->Stop();
  }

  void ScheduleFlush() {
    // The coordinator's pace for the fleet (its Welcome), else our own.
    Nanos interval = opts_.flush_interval_ns;
    if (AgentSession* s = session_.load(); s != nullptr && s->telemetry_interval_ns() > 0)
      interval = s->telemetry_interval_ns();
    flush_timer_.expires_after(std::chrono::nanoseconds(interval));
    flush_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      Flush();
      ScheduleFlush();
    });
  }

  void Flush() {
    pb::TelemetryBatch out;
    {
      std::lock_guard lock(batch_mu_);
      if (batch_.samples_size() == 0 && batch_.events_size() == 0 && batch_.nics_size() == 0)
        return;
      out.Swap(&batch_);
    }
    AgentSession* s = session_.load();
    if (s == nullptr || !s->SendTelemetry(out).ok()) {
      // Not connected: keep the data for the next flush rather than lose it.
      std::lock_guard lock(batch_mu_);
      out.MergeFrom(batch_);
      batch_.Swap(&out);
    }
  }

  void Drain() {
    std::promise<void> done;
    asio::post(io_, [&] {
      Flush();
      done.set_value();
    });
    done.get_future().wait_for(std::chrono::seconds(2));
  }

  void PostProgress() {
    asio::post(io_, [this] {
      if (opts_.on_progress) opts_.on_progress(last_iteration_);
    });
  }

  TelemetryRelayOptions opts_;
  std::string socket_path_;
  std::atomic<AgentSession*> session_{nullptr};
  asio::io_context io_;
  UnixProto::acceptor acceptor_;
  asio::steady_timer flush_timer_;
  bool urgent_flush_posted_ = false;        // Asio thread only
  std::map<int, uint64_t> last_iteration_;  // each rank's highest; Asio thread only
  std::thread io_thread_;
  std::atomic<uint64_t> dropped_{0};  // bad lines from workers, all connections
  std::mutex batch_mu_;
  pb::TelemetryBatch batch_;
  // Last: destroyed first (its thread appends to batch_).
  std::unique_ptr<NicSampler> nic_sampler_;
};

std::string TelemetryRelay::SocketPath(const std::string& run_dir, const std::string& host) {
  return run_dir.empty() ? std::string() : run_dir + "/" + host + ".sock";
}

StatusOr<std::unique_ptr<TelemetryRelay>> TelemetryRelay::Start(TelemetryRelayOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  FL_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<TelemetryRelay>(new TelemetryRelay(std::move(impl)));
}

TelemetryRelay::TelemetryRelay(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TelemetryRelay::~TelemetryRelay() = default;

const std::string& TelemetryRelay::socket_path() const { return impl_->socket_path_; }
void TelemetryRelay::AttachSession(AgentSession* session) { impl_->session_ = session; }
void TelemetryRelay::AddEvent(int rank, const std::string& kind, const nlohmann::json& detail) {
  impl_->AddEvent(rank, kind, detail);
}
void TelemetryRelay::StartNicSampling() { impl_->StartNicSampling(); }
void TelemetryRelay::StopNicSampling() { impl_->StopNicSampling(); }
void TelemetryRelay::Drain() { impl_->Drain(); }
void TelemetryRelay::PostProgress() { impl_->PostProgress(); }
uint64_t TelemetryRelay::dropped() const { return impl_->dropped_; }

}  // namespace fl::harness
