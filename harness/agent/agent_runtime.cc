#include "harness/agent/agent_runtime.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "common/json_util.h"
#include "common/log.h"
#include "harness/agent/agent_session.h"
#include "harness/agent/nic_counters.h"
#include "harness/agent/telemetry_line.h"
#include "harness/lab/lab.h"
#include "injectors/injection.h"
#include "injectors/injector.h"
#include "injectors/journal.h"
#include "injectors/sys.h"

namespace fl::harness {

namespace pb = faultline::v1;
namespace asio = boost::asio;
using UnixProto = asio::local::stream_protocol;

namespace {

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

// An armed fault's trigger: every one of its ranks has reported an iteration of at least
// after_iteration (last_iteration: each rank's highest so far).
bool IterationReached(const PendingFault& p, const std::map<int, uint64_t>& last_iteration) {
  for (int r : p.iteration_ranks) {
    auto it = last_iteration.find(r);
    if (it == last_iteration.end() || it->second < p.after_iteration) return false;
  }
  return true;
}

// A revert sent ahead (RevertFault.due_agent_wall_ns): the fire thread reverts the applied
// fault at due_wall_ns (agent clock) and answers the revert's command then.
struct PendingRevert {
  uint64_t command_id = 0;
  Nanos due_wall_ns = 0;
};

// Sleeps to an absolute CLOCK_REALTIME time (the agent's wall clock, as due times are).
void SleepUntilWall(Nanos wall_ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(wall_ns / kNsPerSec);
  ts.tv_nsec = static_cast<long>(wall_ns % kNsPerSec);
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// A fault the agent reverted at its deadline: what a later RevertFault is answered with.
struct ExpiredFault {
  std::string handle_id;
  Nanos reverted_wall_ns = 0;
};

// The last lines of a rank's log (at most max_bytes, from a line start when cut); "" when
// there is none. The log can be large (a CCL that warns per retry): only the end is read.
std::string LogTail(const std::string& path, size_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  const off_t size = lseek(fd, 0, SEEK_END);
  const off_t from = size > static_cast<off_t>(max_bytes) ? size - max_bytes : 0;
  std::string out(static_cast<size_t>(size > 0 ? size - from : 0), '\0');
  const ssize_t n = out.empty() ? 0 : pread(fd, out.data(), out.size(), from);
  close(fd);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (from > 0) {
    const size_t nl = out.find('\n');
    out.erase(0, nl == std::string::npos ? 0 : nl + 1);
  }
  return out;
}

struct Rank {
  int rank = 0;
  injectors::ContainerInfo container;
  std::thread reaper;
  std::atomic<bool> exited{false};
};

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

std::string RankList(const google::protobuf::RepeatedField<int32_t>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

// The answer to a revert that reverted `h`: its handle and when the revert took effect.
pb::Ack RevertedAck(const injectors::FaultHandle& h) {
  pb::Ack ack;
  ack.set_ok(true);
  ack.set_handle(h.id);
  ack.set_effective_wall_ns(h.reverted_wall_ns ? h.reverted_wall_ns : WallNowNs());
  return ack;
}

pb::Ack Fail(const Status& st) {
  pb::Ack ack;
  ack.set_ok(false);
  ack.set_error(st.ToUserString());
  ack.set_error_code(static_cast<int>(st.code()));
  return ack;
}

}  // namespace

class AgentRuntime::Impl {
 public:
  explicit Impl(AgentRuntimeOptions o)
      : opts_(std::move(o)), journal_(opts_.journal_dir), acceptor_(io_), flush_timer_(io_) {}

  Status Init() {
    if (opts_.site.named()) {
      lab::SiteOptions so = opts_.site;
      if (so.host.empty()) so.host = opts_.host;
      FL_ASSIGN_OR_RETURN(site_, lab::OpenSite(so));
      fabric_ = &site_->fabric();
      for (const auto& r : site_->KillLeftoverRanks())
        FL_LOG(kWarn, "agent") << "killed rank " << r << " left by an earlier agent of this host";
    }
    FL_RETURN_IF_ERROR(injectors::RegisterBuiltinInjectors(registry_));
    injectors::RecoveryReport rec = journal_.RecoverDead(registry_);
    for (const auto& id : rec.reverted)
      FL_LOG(kWarn, "agent") << "reverted fault " << id << " left by a dead owner";
    for (const auto& f : rec.failed)
      FL_LOG(kError, "agent") << "could not revert a dead owner's fault: " << f;
    for (const auto& c : rec.corrupt)
      FL_LOG(kError, "agent") << "corrupt journal entry (not reverted): " << c;
    if (!opts_.run_dir.empty()) {
      socket_path_ = opts_.run_dir + "/" + opts_.host + ".sock";
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
    deadline_thread_ = std::thread([this] { DeadlineLoop(); });
    fire_thread_ = std::thread([this] { FireLoop(); });
    return OkStatus();
  }

  ~Impl() {
    RevertAllAndStop("agent exiting");
    if (uint64_t n = telemetry_dropped_.load(); n > 0)
      FL_LOG(kWarn, "agent") << n << " bad telemetry line(s) from workers were dropped in all";
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    deadline_cv_.notify_all();
    fire_cv_.notify_all();
    if (deadline_thread_.joinable()) deadline_thread_.join();
    if (fire_thread_.joinable()) fire_thread_.join();
    io_.stop();
    if (io_thread_.joinable()) io_thread_.join();
    if (!socket_path_.empty()) unlink(socket_path_.c_str());
  }

  // ---- telemetry -------------------------------------------------------------------------

  void Accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, UnixProto::socket sock) {
      if (ec) return;
      auto conn = std::make_shared<Conn>(std::move(sock));
      ReadLine(conn);
      Accept();
    });
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
    if (armed_ > 0 && std::holds_alternative<TelemetrySample>(*parsed)) TriggerArmed();
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

  // Armed faults whose ranks have passed their iteration become due now: the fire thread fires
  // them at once. Asio thread only (last_iteration_ is its own).
  void TriggerArmed() {
    bool any = false;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, p] : pending_) {
        if (!p.armed || !IterationReached(p, last_iteration_)) continue;
        p.armed = false;
        p.triggered_wall_ns = p.due_wall_ns = WallNowNs();
        --armed_;
        any = true;
      }
    }
    if (any) fire_cv_.notify_all();
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
    ++telemetry_dropped_;
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
      const NicCounters& c = s.counters;
      n->set_rx_bytes(c.rx_bytes);
      n->set_tx_bytes(c.tx_bytes);
      n->set_rx_packets(c.rx_packets);
      n->set_tx_packets(c.tx_packets);
      n->set_rx_dropped(c.rx_dropped);
      n->set_tx_dropped(c.tx_dropped);
      n->set_rx_errors(c.rx_errors);
      n->set_tx_errors(c.tx_errors);
      if (c.rx_pause) n->set_rx_pause(*c.rx_pause);
      if (c.tx_pause) n->set_tx_pause(*c.tx_pause);
      n->mutable_extra()->insert(c.extra.begin(), c.extra.end());
    }
  }

  // The host's data NICs are sampled while its ranks run (from the first LaunchRanks to
  // StopRanks, Shutdown or a lapsed lease). A host whose fabric names no NIC of its own (the
  // fabric agent's) samples nothing.
  void StartNicSampling() {
    if (!fabric_ || !nic_sampler_) return;
    auto ports = fabric_->HostLinks(opts_.host, injectors::PortSide::kHost);
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

  // Waits until the Asio thread has read what the workers wrote, then flushes.
  void DrainTelemetry() {
    std::promise<void> done;
    asio::post(io_, [&] {
      Flush();
      done.set_value();
    });
    done.get_future().wait_for(std::chrono::seconds(2));
  }

  // ---- commands --------------------------------------------------------------------------

  // Commands come from the peer: checked before anything acts on them, and nothing that
  // escapes a handler may end the agent (it would leave its faults to the lease alone).
  std::optional<pb::Ack> Handle(const pb::CoordinatorMessage& m) {
    try {
      if (Status v = ValidateCommand(m); !v.ok()) return Fail(v);
      return Dispatch(m);
    } catch (const std::exception& e) {
      return Fail(InternalError(std::string("agent: command failed: ") + e.what()));
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
        return Launch(m.launch());
      case pb::CoordinatorMessage::kStop:
        return Stop(m.stop());
      case pb::CoordinatorMessage::kInject:
        return Inject(m.inject(), m.command_id());
      case pb::CoordinatorMessage::kRevert:
        return Revert(m.revert(), m.command_id());
      case pb::CoordinatorMessage::kShutdown: {
        RevertAllAndStop("coordinator asked to shut down");
        pb::Ack ack;
        ack.set_ok(true);
        return ack;
      }
      default:
        return Fail(InvalidArgumentError("unknown command"));
    }
  }

  pb::Ack Launch(const pb::LaunchRanks& l) {
    if (!opts_.policy.allow_ranks)
      return Fail(FailedPreconditionError("policy: this agent does not start ranks"));
    if (!site_) return Fail(FailedPreconditionError("agent has no site to start ranks in"));
    auto extra_json = ParseJson(l.worker_args_json(), "launch: worker_args_json");
    if (!extra_json.ok()) return Fail(extra_json.status());
    auto extra = JsonAs<std::vector<std::string>>(*extra_json, "launch: worker_args_json");
    if (!extra.ok()) return Fail(extra.status());
    for (const auto& spec : l.ranks()) {
      if (spec.world_size() < 1 || spec.world_size() > kMaxTelemetryRank + 1 || spec.rank() < 0 ||
          spec.rank() >= spec.world_size())
        return Fail(InvalidArgumentError("launch: rank " + std::to_string(spec.rank()) +
                                         " of world size " + std::to_string(spec.world_size()) +
                                         " is out of range"));
      for (const auto& n : spec.nics())
        if (!injectors::IsSafeName(n))
          return Fail(InvalidArgumentError("launch: NIC name is not a safe name"));
    }
    {  // bounded by the policy before anything starts
      if (Status st =
              CheckLaunch(opts_.policy, l, *extra, site_->WorkerDirs(), site_->disposable());
          !st.ok())
        return Fail(st);
    }
    std::lock_guard lock(mu_);
    int local_index = 0;
    for (const auto& spec : l.ranks()) {
      std::vector<std::string> argv = {opts_.worker_binary, "--rank", std::to_string(spec.rank()),
                                       "--world-size", std::to_string(spec.world_size())};
      if (spec.nics_size() > 0) {
        std::string nics;
        for (const auto& n : spec.nics()) nics += (nics.empty() ? "" : ",") + n;
        argv.insert(argv.end(), {"--nics", nics});
      }
      if (!socket_path_.empty()) argv.insert(argv.end(), {"--telemetry", socket_path_});
      // The rank's place on this host (also its container slot: with a command job's
      // ranks_per_host below the lab's, rank % slots would name another host's slot), and
      // where a command job's output is kept.
      const int local = local_index++;
      argv.insert(argv.end(), {"--local-rank", std::to_string(local), "--local-world-size",
                               std::to_string(l.ranks_size())});
      if (!opts_.run_dir.empty()) argv.insert(argv.end(), {"--log-dir", opts_.run_dir + "/ranks"});
      // A TCP rendezvous store is authenticated with the control plane's token. The
      // coordinator's arguments come last: a command job's argv ends them, after "--".
      const auto worker_end = std::find(extra->begin(), extra->end(), "--");
      if (std::find(extra->begin(), worker_end, "--store") != worker_end &&
          !opts_.token_file.empty())
        argv.insert(argv.end(), {"--store-token-file", opts_.token_file});
      argv.insert(argv.end(), extra->begin(), extra->end());
      auto info = site_->StartRank(local, argv);
      if (!info.ok()) return Fail(info.status());
      auto r = std::make_unique<Rank>();
      r->rank = spec.rank();
      r->container = *info;
      Rank* raw = r.get();
      r->reaper = std::thread([this, raw] { Reap(raw); });
      ranks_.push_back(std::move(r));
      FL_LOG(kInfo, "agent") << "rank " << spec.rank() << " started in container " << info->name
                             << " (pid " << info->init_pid << ")";
    }
    StartNicSampling();
    pb::Ack ack;
    ack.set_ok(true);
    return ack;
  }

  void Reap(Rank* r) {
    int status = 0;
    while (waitpid(r->container.init_pid, &status, 0) < 0 && errno == EINTR) {
    }
    r->exited = true;
    nlohmann::json d = {{"container", r->container.name}};
    if (WIFEXITED(status)) d["code"] = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) d["signal"] = WTERMSIG(status);
    // A rank that ended badly brings the end of its log (rank-N.log, written by the worker
    // under --log-dir): the coordinator shows it, the store keeps it after the run directory
    // is gone.
    const bool bad = (WIFEXITED(status) && WEXITSTATUS(status) != 0) || WIFSIGNALED(status);
    if (bad && !opts_.run_dir.empty()) {
      std::string tail = LogTail(opts_.run_dir + "/ranks/rank-" + std::to_string(r->rank) + ".log",
                                 kRankLogTailBytes);
      if (!tail.empty()) d["log_tail"] = std::move(tail);
    }
    AddEvent(r->rank, "rank_exit", d);
  }

  pb::Ack Stop(const pb::StopRanks& s) {
    StopRanks(std::clamp<int64_t>(s.grace_ms(), 0, 60 * 1000) * kNsPerMs);  // at most a minute
    StopNicSampling();  // its last round, after the ranks, goes with the drain
    DrainTelemetry();
    pb::Ack ack;
    ack.set_ok(true);
    return ack;
  }

  void StopRanks(Nanos grace) {
    std::vector<std::unique_ptr<Rank>> ranks;
    {
      std::lock_guard lock(mu_);
      ranks.swap(ranks_);
    }
    if (ranks.empty()) return;
    for (auto& r : ranks)
      if (!r->exited) kill(r->container.init_pid, SIGTERM);
    Deadline d = Deadline::After(grace);
    WaitUntil(
        [&] {
          for (auto& r : ranks)
            if (!r->exited) return false;
          return true;
        },
        d, 5 * kNsPerMs);
    injectors::LocalContainerRuntime rt;
    for (auto& r : ranks) {
      Status k = rt.Kill(r->container.cgroup_path, Deadline::After(5 * kNsPerSec));
      if (!k.ok())
        FL_LOG(kError, "agent") << "cannot kill container " << r->container.name << ": "
                                << k.message();
      if (r->reaper.joinable()) r->reaper.join();
      rt.Remove(r->container.cgroup_path).IgnoreError();
    }
    FL_LOG(kInfo, "agent") << "stopped " << ranks.size() << " rank(s)";
  }

  // A fault sent ahead (due_agent_wall_ns later than kFireAtOnceNs from now) goes through
  // the same checks, is prepared and journaled now, and its ack is sent when the fire thread
  // applied it (nullopt here); otherwise it is applied at once.
  std::optional<pb::Ack> Inject(const pb::InjectFault& f, uint64_t command_id) {
    const InjectDecision decision =
        DecideInject(opts_.policy, site_ && site_->disposable(), opts_.host, f);
    if (!decision.status.ok()) return Fail(decision.status);
    const bool armed = f.has_after_iteration();
    if (armed && (f.iteration_ranks().empty() || f.iteration_ranks_size() > 4096))
      return Fail(InvalidArgumentError(
          "inject: fault " + f.fault_id() + " is armed on an iteration but names " +
          std::to_string(f.iteration_ranks_size()) + " ranks (iteration_ranks: 1 to 4096)"));
    for (int r : f.iteration_ranks())
      if (r < 0)
        return Fail(InvalidArgumentError("inject: fault " + f.fault_id() + ": iteration rank " +
                                         std::to_string(r) + " is negative"));
    const AheadMode mode =
        armed ? AheadMode::kAhead : ClassifyDue(WallNowNs(), f.due_agent_wall_ns());
    if (mode == AheadMode::kTooFar)
      return Fail(InvalidArgumentError("inject: fault " + f.fault_id() + " is due more than " +
                                       std::to_string(kMaxAheadNs / kNsPerSec) +
                                       " s ahead (due_agent_wall_ns)"));
    if (mode == AheadMode::kAhead) {
      std::lock_guard lock(mu_);
      if (pending_.count(f.fault_id()) || faults_.count(f.fault_id()) || firing_ == f.fault_id())
        return Fail(FailedPreconditionError("inject: fault " + f.fault_id() +
                                            " is already prepared or applied"));
    }
    if (!fabric_) return Fail(FailedPreconditionError("agent has no site to resolve targets in"));
    auto inj = registry_.Create(f.kind());
    if (!inj.ok()) return Fail(inj.status());
    injectors::FaultSpec spec;
    spec.kind = f.kind();
    spec.target = f.target();
    spec.params = {f.params().begin(), f.params().end()};
    spec.duration = f.duration_ms() * kNsPerMs;
    // Switch ports the policy does not name are refused before any switch is contacted (the
    // target's switch-side ports as the site resolves them, no network) and again on the
    // prepared fault's own ports, before anything is journaled or applied.
    std::function<Status(const injectors::FaultHandle&)> admit;
    if (!site_ || !site_->disposable() || !opts_.policy.switch_ports.empty()) {
      if (Status st =
              CheckSwitchPorts(opts_.policy, SwitchSidePorts(*fabric_, f.kind(), f.target()));
          !st.ok())
        return Fail(st);
      admit = [this](const injectors::FaultHandle& h) {
        return CheckSwitchPorts(opts_.policy, HandlePorts(h));
      };
    }
    if (mode == AheadMode::kAhead) {
      auto prepared = injectors::PrepareFault(**inj, spec, *fabric_, &journal_, admit);
      if (!prepared.ok()) return Fail(prepared.status());
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
        // Its ranks may be past the iteration already: look on the Asio thread, which owns the
        // iterations seen.
        asio::post(io_, [this] { TriggerArmed(); });
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
    auto handle = injectors::InjectFault(**inj, spec, *fabric_, &journal_, admit);
    if (!handle.ok()) return Fail(handle.status());
    pb::Ack ack;
    ack.set_ok(true);
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

  // Fires the prepared faults at their due times, earliest first (one at a time). It runs at
  // a real-time priority where the agent may have one (root), so that a loaded machine does
  // not delay the wake-up; nothing else runs on it.
  void FireLoop() {
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
      Status st = injectors::FireFault(*p.injector, p.handle, &journal_);
      pb::Ack ack;
      if (st.ok()) {
        ack.set_ok(true);
        ack.set_handle(p.handle.id);
        ack.set_requested_wall_ns(p.handle.requested_wall_ns ? p.handle.requested_wall_ns
                                                             : requested);
        ack.set_effective_wall_ns(p.handle.effective_wall_ns);
      } else {
        ack = Fail(st);
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

  void SendDeferredAck(const pb::Ack& ack) {
    std::lock_guard lock(sink_mu_);
    if (ack_sink_) ack_sink_(ack);
  }

  // Cancels a prepared fault (its journal entry goes; nothing was applied) and answers its
  // inject with why.
  void CancelPending(PendingFault& p, const std::string& why) {
    Status st = injectors::CancelPrepared(p.handle, &journal_);
    if (!st.ok())
      FL_LOG(kError, "agent") << "cancelling fault " << p.fault_id << ": " << st.message();
    FL_LOG(kInfo, "agent") << "fault " << p.fault_id << " cancelled before its time (" << why
                           << ")";
    pb::Ack ack = Fail(
        UnavailableError("fault " + p.fault_id + " was cancelled before its time (" + why + ")"));
    ack.set_command_id(p.command_id);
    SendDeferredAck(ack);
  }

  // Reverts each applied fault at its deadline, whether or not the coordinator says so.
  void DeadlineLoop() {
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
      Status st = injectors::RevertFault(*af.injector, af.handle, &journal_);
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
      AddEvent(-1, "agent_fault_deadline",
               {{"fault", due}, {"policy_cap", af.capped}, {"reverted_wall_ns", reverted}});
    }
  }

  // A revert sent ahead of its time (due_agent_wall_ns later than kFireAtOnceNs from now) of
  // an applied fault is left to the fire thread, which answers it then (nullopt here); any other
  // revert acts at once, and answers a revert of the same fault still waiting for its time too.
  std::optional<pb::Ack> Revert(const pb::RevertFault& r, uint64_t command_id) {
    const AheadMode mode = ClassifyDue(WallNowNs(), r.due_agent_wall_ns());
    if (mode == AheadMode::kTooFar)
      return Fail(InvalidArgumentError("revert: fault " + r.fault_id() + " is due more than " +
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
        pb::Ack ack;  // nothing was applied: nothing to revert
        ack.set_ok(true);
        return ack;
      }
      fire_cv_.wait(lock, [&] { return firing_ != r.fault_id(); });
      if (auto f = faults_.find(r.fault_id()); mode == AheadMode::kAhead && f != faults_.end() &&
                                               !pending_reverts_.count(r.fault_id())) {
        // The "reverting" record now (its fsync), under the lock so that no other revert of it
        // runs meanwhile; the fire thread only reverts it at its time.
        if (Status st = injectors::PrepareRevert(f->second.handle, &journal_); !st.ok())
          return Fail(st);
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
  pb::Ack RevertNow(const std::string& fault_id, bool prepared = false) {
    AppliedFault af;
    {
      std::unique_lock lock(mu_);
      auto it = faults_.find(fault_id);
      if (it == faults_.end()) {
        pb::Ack ack;
        ack.set_ok(true);
        if (auto e = expired_.find(fault_id); e != expired_.end()) {
          ack.set_handle(e->second.handle_id);
          ack.set_effective_wall_ns(e->second.reverted_wall_ns);
        }
        return ack;
      }
      af = std::move(it->second);
      faults_.erase(it);
    }
    Status st = prepared ? injectors::FireRevert(*af.injector, af.handle, &journal_)
                         : injectors::RevertFault(*af.injector, af.handle, &journal_);
    if (!st.ok()) {
      std::lock_guard lock(mu_);
      faults_[fault_id] = std::move(af);
      return Fail(st);
    }
    pb::Ack ack = RevertedAck(af.handle);
    std::lock_guard lock(mu_);  // what a later revert of it is answered with
    expired_[fault_id] = ExpiredFault{af.handle.id, ack.effective_wall_ns()};
    return ack;
  }

  void RevertAllAndStop(const std::string& why) {
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
      Status st = injectors::RevertFault(*af.injector, af.handle, &journal_);
      if (st.ok())
        FL_LOG(kInfo, "agent") << "reverted fault " << id << " (" << why << ")";
      else
        FL_LOG(kError, "agent") << "revert of fault " << id
                                << " failed (journal keeps it): " << st.message();
      // A revert of it that was waiting for its time: answered now, with this one's result.
      if (auto pr = reverts.find(id); pr != reverts.end()) {
        pb::Ack ack = st.ok() ? RevertedAck(af.handle) : Fail(st);
        ack.set_command_id(pr->second.command_id);
        SendDeferredAck(ack);
      }
    }
    StopRanks(2 * kNsPerSec);
    StopNicSampling();
    if (site_) site_->Close();  // the site's rank cgroup folder
  }

  pb::Heartbeat Heartbeat() {
    pb::Heartbeat hb;
    std::lock_guard lock(mu_);
    uint32_t running = 0;
    for (auto& r : ranks_) running += !r->exited;
    hb.set_ranks_running(running);
    hb.set_faults_applied(static_cast<uint32_t>(faults_.size()));
    return hb;
  }

  AgentRuntimeOptions opts_;
  std::unique_ptr<lab::Site> site_;
  const injectors::Fabric* fabric_ = nullptr;  // site_'s
  injectors::InjectorRegistry registry_{"injector"};
  injectors::FaultJournal journal_;
  std::mutex mu_;
  std::map<std::string, AppliedFault> faults_;
  std::map<std::string, PendingFault> pending_;           // sent ahead, not fired yet
  std::atomic<int> armed_{0};                             // pending_ entries still armed
  std::map<std::string, PendingRevert> pending_reverts_;  // reverts sent ahead, by fault id
  std::map<int, uint64_t> last_iteration_;                // each rank's highest; Asio thread only
  std::string firing_;                                    // the fault the fire thread is applying
  std::condition_variable fire_cv_;  // pending_ or firing_ changed, or stopping_
  std::thread fire_thread_;
  std::mutex sink_mu_;  // guards ack_sink_
  std::function<void(const pb::Ack&)> ack_sink_;
  std::map<std::string, ExpiredFault> expired_;  // reverted: what a later revert is answered with
  std::condition_variable deadline_cv_;          // faults_ changed, or stopping_
  bool stopping_ = false;
  std::thread deadline_thread_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::atomic<AgentSession*> session_{nullptr};
  asio::io_context io_;
  UnixProto::acceptor acceptor_;
  asio::steady_timer flush_timer_;
  bool urgent_flush_posted_ = false;  // Asio thread only
  std::thread io_thread_;
  std::string socket_path_;
  std::atomic<uint64_t> telemetry_dropped_{0};  // bad lines from workers, all connections
  std::mutex batch_mu_;
  pb::TelemetryBatch batch_;
  // Last: destroyed first (its thread appends to batch_). Stopped by RevertAllAndStop.
  std::unique_ptr<NicSampler> nic_sampler_;
};

StatusOr<std::unique_ptr<AgentRuntime>> AgentRuntime::Create(AgentRuntimeOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  FL_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<AgentRuntime>(new AgentRuntime(std::move(impl)));
}

AgentRuntime::AgentRuntime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AgentRuntime::~AgentRuntime() {
  impl_->session_ = nullptr;
  SetAckSink({});  // the session may be gone: cancellations at exit are not acked
}
void AgentRuntime::AttachSession(AgentSession* session) {
  impl_->session_ = session;
  if (session)
    SetAckSink([session](const pb::Ack& ack) { session->SendAck(ack).IgnoreError(); });
  else
    SetAckSink({});
}
void AgentRuntime::SetAckSink(std::function<void(const pb::Ack&)> sink) {
  std::lock_guard lock(impl_->sink_mu_);
  impl_->ack_sink_ = std::move(sink);
}
std::optional<pb::Ack> AgentRuntime::HandleCommand(const pb::CoordinatorMessage& msg) {
  return impl_->Handle(msg);
}
pb::Ack AgentRuntime::Handle(const pb::CoordinatorMessage& msg) {
  std::optional<pb::Ack> ack = impl_->Handle(msg);
  if (ack) return *ack;
  pb::Ack prepared;  // sent ahead: its ack goes to the sink when it fired
  prepared.set_ok(true);
  return prepared;
}
pb::Heartbeat AgentRuntime::Heartbeat() { return impl_->Heartbeat(); }
void AgentRuntime::RevertAllAndStop(const std::string& why) { impl_->RevertAllAndStop(why); }

}  // namespace fl::harness
