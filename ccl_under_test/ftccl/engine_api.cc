// ftccl's engine: the public API (engine.h), start-up and shutdown, the user thread's side
// (posting, waiting for completions, cancel, dump) and the ops it hands the engine thread.
// The rest of the engine: engine_impl.h lists its parts.
#include "ccl_under_test/ftccl/engine_impl.h"

#include <sys/eventfd.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "common/log.h"
#include "common/units.h"

namespace fl::ccl::ftccl {

namespace {

// "Same host" for the host-local channel means "can reach each other's abstract unix sockets":
// the same kernel (boot id) and the same network namespace (inode of /proc/self/ns/net).
std::string HostKey() {
  std::string boot;
  if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof(buf), f)) boot = buf;
    std::fclose(f);
  }
  while (!boot.empty() && (boot.back() == '\n' || boot.back() == ' ')) boot.pop_back();
  struct stat st {};
  if (boot.empty() || stat("/proc/self/ns/net", &st) != 0) return "";
  return boot + ":" + std::to_string(st.st_ino);
}

}  // namespace

Status Engine::Impl::Init() {
  const int n = cfg_.world_size;
  const int me = cfg_.rank;
  if (n < 1 || me < 0 || me >= n) return InvalidArgumentError("ftccl: bad rank/world size");
  if (cfg_.nics.empty()) return InvalidArgumentError("ftccl: no NIC addresses");
  if (n > 1 && !cfg_.store) return InvalidArgumentError("ftccl: no rendezvous store");
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epfd_ < 0 || wake_fd_ < 0) return ErrnoStatus(errno, "ftccl: epoll/eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = Key(kFdWake, 0);
  epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd_, &ev);

  Deadline deadline = Deadline::After(cfg_.init_timeout);
  for (size_t k = 0; k < cfg_.nics.size(); ++k) {
    FL_ASSIGN_OR_RETURN(auto l, transport_->Listen(cfg_.nics[k]));
    my_addrs_.push_back(l->address());
    ev.events = EPOLLIN;
    ev.data.u64 = Key(kFdListener, k);
    epoll_ctl(epfd_, EPOLL_CTL_ADD, l->fd(), &ev);
    listeners_.push_back(std::move(l));
    auto idx = IfIndexOfAddress(cfg_.nics[k]);
    nic_ifindex_.push_back(idx.ok() ? *idx : -1);
    nic_down_.push_back(false);
  }
  if (opt_.watch_links) {
    if (!links_.Open().ok()) {
      FL_LOG(kWarn, "ftccl") << "rtnetlink unavailable: link-down detection by timeouts only";
    } else {
      ev.events = EPOLLIN;
      ev.data.u64 = Key(kFdLink, 0);
      epoll_ctl(epfd_, EPOLL_CTL_ADD, links_.fd(), &ev);
    }
  }
  // Host-local channel and relay: only with a host id, and a host-local listener.
  host_id_ = opt_.host_id == "auto" ? HostKey() : opt_.host_id;
  if (!host_id_.empty() && host_id_.find_first_of(",|") == std::string::npos) {
    auto l = host_transport_->Listen(kHostLocal);
    if (l.ok()) {
      my_lo_ = (*l)->address();
      ev.events = EPOLLIN;
      ev.data.u64 = Key(kFdListener, listeners_.size());
      epoll_ctl(epfd_, EPOLL_CTL_ADD, (*l)->fd(), &ev);
      listeners_.push_back(std::move(*l));
    } else {
      FL_LOG(kWarn, "ftccl") << "no host-local listener (" << l.status().ToString()
                             << "): no host-local channels, no relay";
    }
  }
  if (my_lo_.empty()) host_id_.clear();
  relay_ = !host_id_.empty() && cfg_.failover;
  // "ip:port,ip:port" (NICs in rail order), then "|host|@name" with a host id.
  std::string joined;
  for (const auto& a : my_addrs_) joined += (joined.empty() ? "" : ",") + a;
  if (!host_id_.empty()) joined += "|" + host_id_ + "|" + my_lo_;
  const std::string prefix = "ftccl/" + cfg_.job_id + "/";
  if (n > 1) FL_RETURN_IF_ERROR(cfg_.store->Set(prefix + "addr/" + std::to_string(me), joined));

  // Path health: the engine's keep-alive interval and dead timeout (its cap) rule.
  PathHealthOptions health = opt_.health;
  health.keepalive_interval = opt_.keepalive_interval;
  health.dead_cap = opt_.dead_timeout;
  health.dead_floor = std::min(health.dead_floor, opt_.dead_timeout);
  health.stall_cap = std::min(health.stall_cap, opt_.dead_timeout);
  health.stall_floor = std::min(health.stall_floor, health.stall_cap);
  peers_.resize(n);
  for (int p = 0; p < n; ++p) {
    Peer& peer = peers_[p];
    peer.rank = p;
    if (p == me) continue;
    FL_ASSIGN_OR_RETURN(std::string s,
                        cfg_.store->Get(prefix + "addr/" + std::to_string(p), deadline));
    size_t bar = s.find('|');
    if (bar != std::string::npos) {
      size_t bar2 = s.find('|', bar + 1);
      if (bar2 != std::string::npos) {
        peer.host = s.substr(bar + 1, bar2 - bar - 1);
        peer.lo_addr = s.substr(bar2 + 1);
      }
      s.resize(bar);
    }
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) peer.addrs.push_back(item);
    if (peer.addrs.empty())
      return InternalError("ftccl: rank " + std::to_string(p) + " has no NICs");
    int nch = static_cast<int>(std::max(cfg_.nics.size(), peer.addrs.size())) *
              std::max(1, opt_.channels_per_nic);
    // Ranks of one host also get a host-local channel (both sides decide alike: both host
    // ids are published).
    const bool local = !host_id_.empty() && peer.host == host_id_ && !peer.lo_addr.empty();
    peer.ch.resize(nch + (local ? 1 : 0));
    for (int c = 0; c < static_cast<int>(peer.ch.size()); ++c) {
      Channel& ch = peer.ch[c];
      ch.index = c;
      ch.local_nic = c < nch ? c % static_cast<int>(cfg_.nics.size()) : -1;
      ch.remote_nic = c < nch ? c % static_cast<int>(peer.addrs.size()) : -1;
      ch.active = me < p;
      ch.backoff = opt_.reconnect_min;
      ch.path = LocalAddr(ch) + "->" + RemoteAddr(p, ch);
      ch.health = PathHealth(health);
    }
  }
  Nanos now = MonoNowNs();
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    for (auto& ch : peers_[p].ch) {
      if (ch.active) StartConnect(p, ch, now);
    }
  }
  thread_ = std::thread([this] { Loop(); });

  // Wait until every channel is up (or, at the deadline, at least one per peer).
  auto all_up = [&](bool any_per_peer) {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      int up = 0;
      for (auto& ch : peers_[p].ch) up += ch.ever_up;
      if (any_per_peer ? up == 0 : up != static_cast<int>(peers_[p].ch.size())) return false;
    }
    return true;
  };
  // ever_up is written by the engine thread under inbox_mu_ (see ChannelUp).
  Deadline full = Deadline::After(std::min<Nanos>(deadline.Remaining(), cfg_.init_timeout));
  if (!WaitUntil([&] { return all_up(false) || !error().ok(); }, full)) {
    if (!all_up(true)) {
      return DeadlineExceededError("ftccl: rank " + std::to_string(me) +
                                   " could not connect to every peer in time:\n" + Dump());
    }
    FL_LOG(kWarn, "ftccl") << "not every channel came up at init; continuing degraded";
  }
  FL_RETURN_IF_ERROR(error());
  // A store barrier so that no rank starts a collective before all are connected.
  if (n > 1) FL_RETURN_IF_ERROR(StoreBarrier(*cfg_.store, prefix + "ready", me, n, deadline));
  return OkStatus();
}

void Engine::Impl::Flush() {
  if (!thread_.joinable() || !error().ok()) return;
  flushing_ = true;
  const uint64_t gen0 = loop_gen_;
  const Deadline d = Deadline::After(opt_.peer_dead_timeout + 2 * kNsPerSec);
  // Two loop iterations after the request: the count reflects every op posted before it.
  while (!d.Expired() && error().ok() && (loop_gen_ < gen0 + 2 || owed_ > 0)) {
    Wake();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (owed_ > 0 && error().ok()) {
    FL_LOG(kWarn, "ftccl") << owed_ << " chunk(s) still unacknowledged at exit";
  }
}

void Engine::Impl::Stop() {
  if (thread_.joinable()) {
    stop_ = true;
    Wake();
    thread_.join();
  }
  for (auto& p : peers_)
    for (auto& ch : p.ch) ch.conn.reset();
  listeners_.clear();
  pending_.clear();
  if (epfd_ >= 0) close(epfd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  epfd_ = wake_fd_ = -1;
}

void Engine::Impl::Fail(Status s) {
  {
    std::lock_guard<std::mutex> lock(done_mu_);
    if (!error_.ok()) return;
    error_ = s;
  }
  done_cv_.notify_all();
  Event e{EventType::kCommError};
  e.cause = std::string(CodeName(s.code()));
  e.detail = s.message();
  Emit(e);
}

StatusOr<Completion> Engine::Impl::Wait(Deadline deadline) {
  std::unique_lock<std::mutex> lock(done_mu_);
  while (true) {
    if (!error_.ok()) return error_;
    if (!done_.empty()) {
      Completion c = done_.front();
      done_.pop_front();
      --(c.is_send ? queued_sends_ : queued_recvs_);
      return c;
    }
    if (deadline.Expired()) return DeadlineExceededError("ftccl: collective timed out");
    done_cv_.wait_for(
        lock, std::chrono::nanoseconds(std::min<Nanos>(deadline.Remaining(), 100 * kNsPerMs)));
  }
}

Status Engine::Impl::WaitCounts(size_t recvs, size_t sends, size_t* recvs_done, size_t* sends_done,
                                Deadline deadline) {
  std::unique_lock<std::mutex> lock(done_mu_);
  while (true) {
    for (const Completion& c : done_) ++*(c.is_send ? sends_done : recvs_done);
    done_.clear();
    queued_recvs_ = queued_sends_ = 0;
    counting_ = false;
    if (!error_.ok()) return error_;
    if (*recvs_done >= recvs && *sends_done >= sends) return OkStatus();
    if (deadline.Expired()) return DeadlineExceededError("ftccl: collective timed out");
    counting_ = true;
    want_recvs_ = recvs > *recvs_done ? recvs - *recvs_done : 0;
    want_sends_ = sends > *sends_done ? sends - *sends_done : 0;
    done_cv_.wait_for(
        lock, std::chrono::nanoseconds(std::min<Nanos>(deadline.Remaining(), 100 * kNsPerMs)));
  }
}

bool Engine::Impl::Request(Op::Kind kind, uint64_t* issued, const uint64_t* answered, Nanos bound,
                           std::unique_lock<std::mutex>* lock) {
  uint64_t gen;
  {
    std::lock_guard<std::mutex> l(done_mu_);
    gen = ++*issued;
  }
  Post(MakeOp(kind, -1, 0, nullptr, 0, gen));
  *lock = std::unique_lock<std::mutex>(done_mu_);
  Deadline d = Deadline::After(bound);
  while (*answered < gen && !d.Expired() && thread_.joinable())
    done_cv_.wait_for(*lock, std::chrono::milliseconds(10));
  return *answered >= gen;
}

void Engine::Impl::CancelAll() {
  std::unique_lock<std::mutex> lock;
  // The engine thread never blocks, so this wait is short; the bound guards against a bug.
  // Unanswered or not, what is queued for the user goes.
  Request(Op::kCancel, &cancel_gen_, &cancel_done_, 5 * kNsPerSec, &lock);
  done_.clear();
  queued_recvs_ = queued_sends_ = 0;
}

std::string Engine::Impl::Dump() {
  if (!thread_.joinable()) return DumpLocked();
  std::unique_lock<std::mutex> lock;
  if (!Request(Op::kDump, &dump_gen_, &dump_done_, 2 * kNsPerSec, &lock))
    return "(engine did not answer the dump request)";
  return dump_;
}

std::string Engine::Impl::DumpLocked() {
  std::ostringstream os;
  Nanos now = MonoNowNs();
  static const char* kStates[] = {"down", "connecting", "handshake", "up"};
  os << "rank " << cfg_.rank << " of " << cfg_.world_size << "\n";
  for (auto& p : peers_) {
    if (p.rank == cfg_.rank) continue;
    os << " peer " << p.rank << ": unacked " << p.send.unacked() << " queued " << p.send.queued()
       << " posted_recv " << p.posted.size() << " unexpected " << p.unexpected.size()
       << " next_recv_seq " << p.recv.low();
    if (p.via >= 0) os << " relayed via rank " << p.via;
    os << "\n";
    for (auto& [tag, r] : p.posted) {
      os << "  waits for recv " << TagString(tag) << " (" << r.len << " B)\n";
      break;
    }
    if (p.send.HasQueued()) {
      const uint64_t front = p.send.FrontQueued();
      os << "  oldest queued send seq " << front << " " << TagString(p.send.Find(front)->tag)
         << "\n";
    }
    for (auto& ch : p.ch) {
      os << "  ch " << ch.index << " " << ch.path << " " << kStates[static_cast<int>(ch.state)]
         << " inflight " << ch.inflight.chunks << " chunks/" << ch.inflight.bytes << " B"
         << " heard " << (ch.last_rx ? (now - ch.last_rx) / kNsPerMs : -1) << " ms ago"
         << " sent " << ch.chunks_sent << " chunks";
      if (ch.local_nic >= 0 && ch.state == ChState::kUp) os << "; " << ch.health.Describe();
      os << "\n";
    }
  }
  return os.str();
}

void Engine::Impl::HandleOp(const Op& op) {
  switch (op.kind) {
    case Op::kSend:
      EnqueueSend(op.peer, op.tag, op.data, op.len, op.cookie);
      break;
    case Op::kRecv: {
      Peer& p = peers_[op.peer];
      auto u = p.unexpected.find(op.tag);
      if (u != p.unexpected.end()) {
        if (u->second.size() != op.len) {
          Fail(InternalError("ftccl: message " + TagString(op.tag) + " size mismatch"));
          return;
        }
        if (op.data && op.len) std::memcpy(op.data, u->second.data(), op.len);
        if (op.has_arrival) OnArrival(op.arrival, op.data ? op.data : u->second.data(), op.len);
        p.unexpected.erase(u);
        Complete(op.cookie, false);
        return;
      }
      p.posted[op.tag] = {op.data, op.len, op.cookie, op.has_arrival, op.arrival};
      // A channel may be receiving this message into a private buffer: fine, it is copied
      // when complete.
      break;
    }
    case Op::kCancel: {
      for (auto& p : peers_) {
        p.posted.clear();
        p.unexpected.clear();
        for (auto& ch : p.ch) {
          if (ch.in_payload && ch.rposted) ch.rdst = nullptr;
          SendChunk* cur = ch.cur;
          if (cur && !cur->forward && !cur->owned.data() && cur->data) {
            // Half-written frame: keep the stream framed, but stop reading the user buffer.
            cur->owned.Reset(cur->len);
            if (cur->len) std::memcpy(cur->owned.data(), cur->data, cur->len);
            if (!cur->len) cur->data = nullptr;
          }
        }
        // Unsent chunks are dropped; sent-but-unacked ones are kept as "cancelled" so that
        // a late ack is understood, but they are never resent from user memory. Chunks we
        // forward for other ranks are theirs, not our collective's: kept.
        p.send.RemoveIf([&](SendChunk& c) {
          bool writing = c.forward || (c.channel >= 0 && ChannelOf(p.rank, c).cur == &c);
          if (writing) return false;
          if (c.channel >= 0) ChannelOf(p.rank, c).inflight.Remove(c.len);
          return true;
        });
      }
      {
        std::lock_guard<std::mutex> lock(done_mu_);
        cancel_done_ = op.cookie;
        done_.clear();
        queued_recvs_ = queued_sends_ = 0;
      }
      done_cv_.notify_all();
      return;
    }
    case Op::kDetach: {
      // The caller's buffers are released: what is still unacknowledged is delivered (and
      // resent after a fault) from a copy.
      for (auto& p : peers_) {
        p.send.ForEach([&](SendChunk& c) {
          if (c.forward || c.detached || c.owned.data() || c.data == nullptr) return;
          if (c.len) {
            c.owned.Reset(c.len);
            std::memcpy(c.owned.data(), c.data, c.len);
          }
          c.detached = true;
          ++st_detached_;
          Complete(c.cookie, true);
        });
      }
      return;
    }
    case Op::kDump: {
      std::string s = DumpLocked();
      {
        std::lock_guard<std::mutex> lock(done_mu_);
        dump_ = std::move(s);
        dump_done_ = op.cookie;
      }
      done_cv_.notify_all();
      return;
    }
  }
}

void Engine::Impl::DrainInbox() {
  std::vector<Op> ops;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    ops.swap(inbox_);
  }
  std::set<int> touched;
  for (const Op& op : ops) {
    HandleOp(op);
    if (op.kind == Op::kSend) touched.insert(op.peer);
  }
  for (int p : touched) PumpPeer(p);
}

// ---------------------------------------------------------------------------------------------

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

StatusOr<std::unique_ptr<Engine>> Engine::Create(
    const CommConfig& config, std::shared_ptr<transport::Transport> transport,
    const EngineOptions& options, std::shared_ptr<transport::Transport> host_transport) {
  auto impl =
      std::make_unique<Impl>(config, std::move(transport), std::move(host_transport), options);
  FL_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

int Engine::rank() const { return impl_->cfg_.rank; }
int Engine::size() const { return impl_->cfg_.world_size; }
const EngineOptions& Engine::options() const { return impl_->opt_; }
std::vector<std::string> Engine::HostIds() const { return impl_->HostIds(); }
std::vector<std::vector<std::string>> Engine::NicAddrs() const { return impl_->NicAddrs(); }
void Engine::PostSend(int peer, uint64_t tag, const void* data, size_t len, uint64_t cookie) {
  impl_->Post(
      MakeOp(Op::kSend, peer, tag, const_cast<char*>(static_cast<const char*>(data)), len, cookie));
}
void Engine::PostRecv(int peer, uint64_t tag, void* data, size_t len, uint64_t cookie) {
  impl_->Post(MakeOp(Op::kRecv, peer, tag, static_cast<char*>(data), len, cookie));
}
void Engine::PostRecv(int peer, uint64_t tag, void* data, size_t len, uint64_t cookie,
                      const Arrival& arrival) {
  Op op = MakeOp(Op::kRecv, peer, tag, static_cast<char*>(data), len, cookie);
  op.has_arrival = true;
  op.arrival = arrival;
  impl_->Post(op);
}
StatusOr<Completion> Engine::WaitCompletion(Deadline deadline) { return impl_->Wait(deadline); }
Status Engine::WaitCounts(size_t recvs, size_t sends, size_t* recvs_done, size_t* sends_done,
                          Deadline deadline) {
  return impl_->WaitCounts(recvs, sends, recvs_done, sends_done, deadline);
}
void Engine::CancelAll() { impl_->CancelAll(); }
void Engine::DetachSends() { impl_->Post(MakeOp(Op::kDetach)); }
std::string Engine::DumpState() { return impl_->Dump(); }
Status Engine::error() const { return impl_->error(); }
EngineStats Engine::stats() const {
  EngineStats s;
  s.chunks_sent = impl_->st_sent_;
  s.chunks_requeued = impl_->st_requeued_;
  s.duplicates_dropped = impl_->st_dups_;
  s.path_faults = impl_->st_faults_;
  s.paths_restored = impl_->st_restored_;
  s.chunks_relayed = impl_->st_relayed_;
  s.chunks_forwarded = impl_->st_forwarded_;
  s.sends_detached = impl_->st_detached_;
  s.chunks_host_local = impl_->st_host_local_;
  s.paths_drained = impl_->st_drained_;
  s.probes_sent = impl_->st_probes_;
  return s;
}
void Engine::Fail(Status status) { impl_->Fail(std::move(status)); }
void Engine::Abort() { impl_->Fail(CancelledError("ftccl: communicator aborted")); }
void Engine::EmitCollective(EventType type, uint64_t seq, std::string detail) {
  Event e{type};
  e.seq = seq;
  e.detail = std::move(detail);
  impl_->Emit(e);
}

}  // namespace fl::ccl::ftccl
