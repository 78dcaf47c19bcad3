// The engine's channel state (engine_impl.h): connecting, the HELLO handshake, a channel
// coming up or failing (its unacknowledged chunks requeued, the peer told), accepting
// connections, and NIC link changes from rtnetlink.
#include "ccl_under_test/ftccl/engine_impl.h"

#include <sys/ioctl.h>

#include "common/log.h"
#include "common/units.h"

namespace fl::ccl::ftccl {

void Engine::Impl::SetWantOut(int peer, Channel& ch, bool want) {
  if (!ch.conn || ch.want_out == want) return;
  ch.want_out = want;
  epoll_event ev{};
  ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
  ev.data.u64 = Key(kFdChannel, peer, ch.index);
  epoll_ctl(epfd_, EPOLL_CTL_MOD, ch.conn->fd(), &ev);
}

void Engine::Impl::StartConnect(int peer, Channel& ch, Nanos now) {
  ch.attempt_started = now;
  ++ch.gen;
  auto c = (ch.local_nic < 0 ? host_transport_ : transport_)
               ->Connect(LocalAddr(ch), RemoteAddr(peer, ch));
  if (!c.ok()) {
    ch.state = ChState::kDown;
    ch.next_attempt = now + ch.backoff;
    ch.backoff = std::min(ch.backoff * 2, opt_.reconnect_max);
    return;
  }
  ch.conn = std::move(*c);
  ch.state = ChState::kConnecting;
  ch.want_out = true;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT;
  ev.data.u64 = Key(kFdChannel, peer, ch.index);
  epoll_ctl(epfd_, EPOLL_CTL_ADD, ch.conn->fd(), &ev);
}

void Engine::Impl::OnConnectable(int peer, Channel& ch) {
  Status s = ch.conn->FinishConnect();
  if (!s.ok()) {
    epoll_ctl(epfd_, EPOLL_CTL_DEL, ch.conn->fd(), nullptr);
    ch.conn.reset();
    ch.state = ChState::kDown;
    Nanos now = MonoNowNs();
    ch.next_attempt = now + ch.backoff;
    ch.backoff = std::min(ch.backoff * 2, opt_.reconnect_max);
    return;
  }
  ch.state = ChState::kHandshake;
  ch.ctrl.clear();
  ch.ctrl_off = 0;
  ch.rhdr_got = 0;
  ch.in_payload = false;
  ch.last_rx = ch.last_tx = MonoNowNs();
  QueueCtrl(ch, MakeHeader(kHello, ch.gen, cfg_.rank, ch.index, cfg_.world_size));
  PumpSend(peer, ch);
}

void Engine::Impl::ChannelUp(int peer, Channel& ch, std::unique_ptr<transport::Connection> conn,
                             uint32_t gen) {
  if (conn) {
    // Passive side: an accepted connection replaces whatever the channel had.
    if (ch.conn) FailChannel(peer, ch, "replaced", "peer reconnected this channel");
    ch.conn = std::move(conn);
    ch.gen = gen;
    ch.ctrl.clear();
    ch.ctrl_off = 0;
    ch.rhdr_got = 0;
    ch.in_payload = false;
    ch.want_out = false;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = Key(kFdChannel, peer, ch.index);
    epoll_ctl(epfd_, EPOLL_CTL_ADD, ch.conn->fd(), &ev);
    QueueCtrl(ch, MakeHeader(kHello, ch.gen, cfg_.rank, ch.index, cfg_.world_size));
  }
  ch.state = ChState::kUp;
  ch.path = ch.conn->Describe();
  ch.backoff = opt_.reconnect_min;
  ch.last_rx = ch.last_tx = MonoNowNs();
  ch.health.Reset(ch.last_rx);
  ch.next_counters = 0;
  ch.tail.Reset(0);
  ch.tail_off = 0;
  ch.rprobe = false;
  peers_[peer].all_down_since = 0;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    ch.ever_up = true;
  }
  if (ch.failed_before) {
    ++st_restored_;
    Event e{EventType::kPathRestored};
    e.peer = peer;
    e.channel = ch.index;
    e.path = ch.path;
    Emit(e);
    FL_LOG(kInfo, "ftccl") << "path restored to rank " << peer << " ch " << ch.index << " "
                           << ch.path;
  }
  UpdateRoutes();
  PumpSend(peer, ch);
}

void Engine::Impl::FailChannel(int peer, Channel& ch, const std::string& cause,
                               const std::string& detail) {
  Peer& p = peers_[peer];
  bool was_up = ch.state == ChState::kUp;
  if (ch.conn) {
    epoll_ctl(epfd_, EPOLL_CTL_DEL, ch.conn->fd(), nullptr);
    ch.conn.reset();
  }
  ch.state = ChState::kDown;
  ch.want_out = false;
  ch.ctrl.clear();
  ch.ctrl_off = 0;
  ch.cur = nullptr;
  ch.cur_off = 0;
  ch.rhdr_got = 0;
  ch.in_payload = false;
  ch.rdst = nullptr;
  ch.rpriv.Reset(0);
  ch.rprobe = false;
  ch.tail.Reset(0);
  ch.tail_off = 0;
  Nanos now = MonoNowNs();
  ch.next_attempt = now + (cause == "link_down" ? opt_.reconnect_max : ch.backoff);
  ch.backoff = std::min(ch.backoff * 2, opt_.reconnect_max);
  if (!was_up) return;  // a failed attempt, not a fault of a working path
  ch.failed_before = true;

  std::vector<int> relayed_for;
  const int fid = StartFailover(peer, ch, cause, detail, "failed", now, &relayed_for);
  if (!cfg_.failover) {
    fail_stopped_ = true;
    Fail(UnavailableError("ftccl (fail-stop): path to rank " + std::to_string(peer) + " " +
                          ch.path + " failed: " + cause + ": " + detail));
    return;
  }
  if (cause != "peer_notice" && cause != "replaced") {
    // Tell the peer over a surviving channel: it may not see the fault itself for a while.
    for (auto& other : p.ch) {
      if (other.state == ChState::kUp) {
        QueueCtrl(other, MakeHeader(kPathDown, 0, static_cast<uint32_t>(ch.index), ch.gen, 0));
        PumpSend(peer, other);
        break;
      }
    }
  }
  UndrainIfNoneLeft(peer);
  UpdateRoutes();
  if (!AnyUp(p) && p.all_down_since == 0) p.all_down_since = now;
  FinishIfNothingMoved(peer, ch, fid);
  PumpPeer(peer);
  for (int q : relayed_for) PumpPeer(q);
}

// A working path's fault (failed or drained): its unacknowledged chunks go back to the queue,
// to be resent on surviving paths (the peer's own, and other peers' chunks it was relaying:
// their ranks into *relayed_for); the failover is recorded and fault_detected emitted.
// Returns the failover's id.
int Engine::Impl::StartFailover(int peer, Channel& ch, const std::string& cause,
                                const std::string& detail, const char* what, Nanos now,
                                std::vector<int>* relayed_for) {
  const int fid = static_cast<int>(failovers_.size());
  const size_t moved = RequeueCarried(peer, ch, fid, relayed_for);
  failovers_.push_back({ch.index, ch.path, cause, now, moved, moved});
  st_requeued_ += moved;
  ++st_faults_;
  Event e{EventType::kFaultDetected};
  e.peer = peer;
  e.channel = ch.index;
  e.path = ch.path;
  e.cause = cause;
  e.detail = detail;
  Emit(e);
  FL_LOG(kWarn, "ftccl") << "path to rank " << peer << " ch " << ch.index << " " << ch.path << " "
                         << what << " (" << cause << "): " << detail << "; " << moved
                         << " chunk(s) requeued";
  return fid;
}

// A failover that moved nothing is done at once (failover_done follows every fault_detected).
void Engine::Impl::FinishIfNothingMoved(int peer, const Channel& ch, int fid) {
  Failover& f = failovers_[fid];
  if (f.moved != 0) return;
  Event d{EventType::kFailoverDone};
  d.peer = peer;
  d.channel = ch.index;
  d.path = f.path;
  d.cause = f.cause;
  d.detail = "0 chunks moved";
  Emit(d);
  f.remaining = 0;
}

// Every unacknowledged chunk channel `ch` to `peer` carried goes back to its queue: the
// peer's own, and other peers' chunks it was relaying (their ranks into *relayed_for).
size_t Engine::Impl::RequeueCarried(int peer, Channel& ch, int fid, std::vector<int>* relayed_for) {
  size_t moved = 0;
  for (auto& q : peers_) {
    const bool own = q.rank == peer;
    if (!own && !relay_) continue;
    const size_t n = q.send.RequeueCarried(ch.index, own ? -1 : peer,
                                           [&](SendChunk& c) { NoteRequeued(c, fid); });
    moved += n;
    if (!own && n > 0 && relayed_for) relayed_for->push_back(q.rank);
  }
  ch.inflight.Clear();
  return moved;
}

// A chunk moved by failover `fid` (-1: not a fault) no longer counts for the one that moved
// it before.
void Engine::Impl::NoteRequeued(SendChunk& c, int fid) {
  if (c.failover >= 0 && failovers_[c.failover].remaining > 0) --failovers_[c.failover].remaining;
  c.failover = fid;
}

void Engine::Impl::OnAccept(int nic) {
  while (true) {
    auto c = listeners_[nic]->Accept();
    if (!c.ok() || !*c) return;
    auto pa = std::make_unique<PendingAccept>();
    pa->conn = std::move(*c);
    pa->since = MonoNowNs();
    pa->nic = nic;
    epoll_event ev{};
    ev.events = EPOLLIN;
    // Pending connections are few and short-lived: find them by fd instead of by key.
    ev.data.u64 = Key(kFdPending, static_cast<uint64_t>(pa->conn->fd()));
    epoll_ctl(epfd_, EPOLL_CTL_ADD, pa->conn->fd(), &ev);
    pending_.push_back(std::move(pa));
  }
}

void Engine::Impl::OnPendingReadable(size_t idx) {
  PendingAccept& pa = *pending_[idx];
  auto n = pa.conn->Recv(reinterpret_cast<char*>(&pa.hdr) + pa.got, sizeof(FrameHeader) - pa.got);
  auto drop = [&] {
    epoll_ctl(epfd_, EPOLL_CTL_DEL, pa.conn->fd(), nullptr);
    pending_.erase(pending_.begin() + static_cast<long>(idx));
  };
  if (!n.ok()) return drop();
  pa.got += *n;
  if (pa.got < sizeof(FrameHeader)) return;
  const FrameHeader h = pa.hdr;  // a copy: pa goes with the erase below, h is read after it
  int peer = static_cast<int>(h.aux);
  if (h.magic != kMagic || h.type != kHello || peer < 0 || peer >= cfg_.world_size ||
      peer == cfg_.rank || h.seq >= peers_[peer].ch.size() ||
      h.tag != static_cast<uint64_t>(cfg_.world_size)) {
    FL_LOG(kWarn, "ftccl") << "dropping a connection with a bad hello";
    return drop();
  }
  std::unique_ptr<transport::Connection> conn = std::move(pa.conn);
  epoll_ctl(epfd_, EPOLL_CTL_DEL, conn->fd(), nullptr);
  pending_.erase(pending_.begin() + static_cast<long>(idx));
  ChannelUp(peer, peers_[peer].ch[h.seq], std::move(conn), h.len);
}

void Engine::Impl::OnLinkChanges() {
  Nanos now = MonoNowNs();
  for (const LinkChange& lc : links_.Read()) {
    for (size_t k = 0; k < nic_ifindex_.size(); ++k) {
      if (nic_ifindex_[k] != lc.ifindex) continue;
      bool was_down = nic_down_[k];
      nic_down_[k] = !lc.up;
      if (!lc.up && !was_down) {
        FL_LOG(kWarn, "ftccl") << "link down on NIC " << cfg_.nics[k];
        for (auto& p : peers_) {
          for (auto& ch : p.ch) {
            if (ch.local_nic != static_cast<int>(k)) continue;
            if (ch.state == ChState::kUp) {
              FailChannel(p.rank, ch, "link_down", "rtnetlink: NIC " + cfg_.nics[k] + " down");
            } else if (ch.conn) {
              epoll_ctl(epfd_, EPOLL_CTL_DEL, ch.conn->fd(), nullptr);
              ch.conn.reset();
              ch.state = ChState::kDown;
            }
          }
        }
      } else if (lc.up && was_down) {
        FL_LOG(kInfo, "ftccl") << "link up on NIC " << cfg_.nics[k];
        for (auto& p : peers_) {
          for (auto& ch : p.ch) {
            if (ch.local_nic == static_cast<int>(k) && ch.state == ChState::kDown) {
              ch.backoff = opt_.reconnect_min;
              ch.next_attempt = now;
            }
          }
        }
      }
    }
  }
}

bool Engine::Impl::HasPendingBytes(Channel& ch) {
  // Bytes already in the socket mean the path works and we were slow to read them.
  int avail = 0;
  return ch.conn && ioctl(ch.conn->fd(), FIONREAD, &avail) == 0 && avail > 0;
}

}  // namespace fl::ccl::ftccl
