// Chunks on the engine's channels (engine_impl.h): a channel pulling the next chunk from the
// reliable window and writing its frame, reading frames, applying each sequence number once
// into the posted buffer (or an engine buffer until the receive is posted), acks, and the
// arrival actions that run a collective's next step on the engine thread.
#include "ccl_under_test/ftccl/engine_impl.h"

#include <cstring>

#include "ccl_under_test/ftccl/host_reduce.h"
#include "common/units.h"

namespace fl::ccl::ftccl {

void Engine::Impl::PumpPeer(int peer) {
  for (auto& ch : peers_[peer].ch) {
    if (ch.state == ChState::kUp) PumpSend(peer, ch);
  }
  const int via = peers_[peer].via;
  if (via >= 0) {
    for (auto& ch : peers_[via].ch) {
      if (ch.state == ChState::kUp) PumpSend(via, ch);
    }
  }
}

bool Engine::Impl::WriteRest(int peer, Channel& ch, char* data, size_t size, size_t* off) {
  iovec v{data + *off, size - *off};
  auto n = ch.conn->Send(&v, 1);
  if (!n.ok()) {
    FailChannel(peer, ch, "transport_error", n.status().message());
    return false;
  }
  if (*n == 0) {
    SetWantOut(peer, ch, true);
    return false;
  }
  *off += *n;
  ch.last_tx = MonoNowNs();
  return true;
}

void Engine::Impl::PumpSend(int peer, Channel& ch) {
  Peer& p = peers_[peer];
  if (!ch.conn) return;
  for (int rounds = 0; rounds < 64; ++rounds) {
    // The rest of a frame half written when the channel was drained comes first.
    if (ch.tail_off < ch.tail.size()) {
      if (!WriteRest(peer, ch, ch.tail.data(), ch.tail.size(), &ch.tail_off)) return;
      if (ch.tail_off == ch.tail.size()) {
        ch.tail.Reset(0);
        ch.tail_off = 0;
      }
      continue;
    }
    // Control frames go between data frames.
    if (!ch.cur && ch.ctrl_off < ch.ctrl.size()) {
      if (!WriteRest(peer, ch, ch.ctrl.data(), ch.ctrl.size(), &ch.ctrl_off)) return;
      if (ch.ctrl_off == ch.ctrl.size()) {
        ch.ctrl.clear();
        ch.ctrl_off = 0;
      }
      continue;
    }
    if (ch.state != ChState::kUp) break;
    // A drained path takes no chunks (path_health.h): only probes and control frames.
    if (!ch.cur && ch.health.drained()) break;
    if (!ch.cur) {
      // The peer's own queue first, then chunks of ranks we reach through this peer (only
      // chunks of our own: forwarded ones, keyed from kForwardKeyBase, are not relayed again).
      Peer* from = p.send.HasQueued() ? &p : nullptr;
      for (size_t d = 0; !from && relay_ && d < peers_.size(); ++d) {
        Peer& q = peers_[d];
        if (q.via == peer && q.send.HasQueued() && q.send.FrontQueued() < kForwardKeyBase)
          from = &q;
      }
      if (!from || !ch.inflight.HasRoom(opt_.window_bytes)) break;
      // A peer of our host is reached over the host-local channel while it works: its NIC
      // channels would only loop back through the kernel's IP stack at twice the CPU per
      // byte. They stay connected (keep-alives) for failover.
      const bool local_up = HostLocalUp(p);
      if (local_up && ch.local_nic >= 0) break;
      // Take the next chunk only if no other working channel has less in flight: chunks
      // spread over the paths, and a path whose acks come back faster takes more.
      bool least = true;
      for (auto& other : p.ch) {
        if (&other != &ch && Usable(other) && !(local_up && other.local_nic >= 0) &&
            other.inflight.bytes < ch.inflight.bytes) {
          least = false;
        }
      }
      if (!least) break;
      SendChunk* c = &from->send.Take(ch.index, from == &p ? -1 : peer);
      ch.cur = c;
      if (c->forward) {
        ch.cur_hdr = MakeHeader(kData, c->len, static_cast<uint32_t>(c->origin), c->oseq, c->tag,
                                kFlagRelayed);
      } else if (c->via >= 0) {
        ch.cur_hdr = MakeHeader(kData, c->len, static_cast<uint32_t>(from->rank), c->seq, c->tag,
                                kFlagForward);
        ++st_relayed_;
      } else {
        ch.cur_hdr = MakeHeader(kData, c->len, 0, c->seq, c->tag);
      }
      ch.cur_off = 0;
      c->taken = MonoNowNs();
      c->written = 0;
      if (ch.inflight.chunks == 0) ch.health.OnBusy(c->taken, true);
      ch.inflight.Add(c->len);
      ++ch.chunks_sent;
      ++st_sent_;
      if (ch.local_nic < 0) ++st_host_local_;
    }
    SendChunk* c = ch.cur;
    const char* payload = c->Bytes();
    iovec v[2];
    int nv = 0;
    if (ch.cur_off < sizeof(FrameHeader)) {
      v[nv++] = {reinterpret_cast<char*>(&ch.cur_hdr) + ch.cur_off,
                 sizeof(FrameHeader) - ch.cur_off};
      if (c->len) v[nv++] = {const_cast<char*>(payload), c->len};
    } else {
      size_t off = ch.cur_off - sizeof(FrameHeader);
      v[nv++] = {const_cast<char*>(payload) + off, c->len - off};
    }
    auto n = ch.conn->Send(v, nv);
    if (!n.ok()) return FailChannel(peer, ch, "transport_error", n.status().message());
    if (*n == 0) return SetWantOut(peer, ch, true);
    ch.cur_off += *n;
    ch.bytes_sent += *n;
    ch.last_tx = MonoNowNs();
    if (ch.cur_off == sizeof(FrameHeader) + c->len) {
      c->written = ch.last_tx;
      ch.cur = nullptr;
    }
  }
  // Wait for writability only with bytes in hand; new chunks are pulled when acks arrive.
  bool more = ch.cur || ch.ctrl_off < ch.ctrl.size() || ch.tail_off < ch.tail.size();
  SetWantOut(peer, ch, more);
}

void Engine::Impl::OnReadable(int peer, Channel& ch) {
  Peer& p = peers_[peer];
  size_t budget = 8 << 20;
  while (ch.conn && budget > 0) {
    if (!ch.in_payload) {
      auto n = ch.conn->Recv(reinterpret_cast<char*>(&ch.rhdr) + ch.rhdr_got,
                             sizeof(FrameHeader) - ch.rhdr_got);
      if (!n.ok()) return FailChannel(peer, ch, "transport_error", n.status().message());
      if (*n == 0) return;
      ch.last_rx = MonoNowNs();
      ch.rhdr_got += *n;
      if (ch.rhdr_got < sizeof(FrameHeader)) continue;
      ch.rhdr_got = 0;
      if (Status bad = frame::CheckHeader(ch.rhdr); !bad.ok()) {
        return FailChannel(peer, ch, "protocol_error", bad.message());
      }
      OnHeader(peer, ch);
      if (!ch.conn) return;  // the header failed the channel
    } else {
      size_t want = ch.rhdr.len - ch.rgot;
      char scratch[65536];
      char* dst = ch.rdst ? ch.rdst + ch.rgot : scratch;
      if (!ch.rdst) want = std::min(want, sizeof(scratch));
      auto n = ch.conn->Recv(dst, want);
      if (!n.ok()) return FailChannel(peer, ch, "transport_error", n.status().message());
      if (*n == 0) return;
      ch.last_rx = MonoNowNs();
      ch.rgot += *n;
      budget -= std::min(budget, *n);
      if (ch.rgot == ch.rhdr.len) {
        ch.in_payload = false;
        if (ch.rprobe) {
          ch.rprobe = false;
          QueueCtrl(ch, MakeHeader(kProbeAck, 0, 0, ch.rhdr.seq, 0));
        } else {
          OnPayloadDone(peer, ch);
        }
      }
    }
  }
  (void)p;
}

void Engine::Impl::OnHeader(int peer, Channel& ch) {
  const FrameHeader& h = ch.rhdr;
  const int n = cfg_.world_size;
  switch (h.type) {
    case kHello:
      if (ch.state == ChState::kHandshake) ChannelUp(peer, ch, nullptr);
      return;
    case kPing:
      return;
    case kProbe:
      // Read into nothing, then answered (OnReadable).
      ch.rgot = 0;
      ch.rdst = nullptr;
      ch.rfwd = false;
      ch.rprobe = h.len > 0;
      ch.in_payload = h.len > 0;
      if (h.len == 0) QueueCtrl(ch, MakeHeader(kProbeAck, 0, 0, h.seq, 0));
      return;
    case kProbeAck:
      return OnProbeAck(peer, ch, h.seq);
    case kBye: {
      epoll_ctl(epfd_, EPOLL_CTL_DEL, ch.conn->fd(), nullptr);
      ch.conn.reset();
      ch.state = ChState::kDown;
      ch.bye = true;
      ch.cur = nullptr;
      // Not a fault, but what this channel carried unacknowledged (chunks relayed through a
      // departing rank included) must go another way.
      RequeueCarried(peer, ch, -1, nullptr);
      UpdateRoutes();
      for (auto& q : peers_)
        if (q.send.HasQueued()) PumpPeer(q.rank);
      return;
    }
    case kAck:
      if (h.flags & (kFlagRelayed | kFlagRelayAck)) {
        const int other = static_cast<int>(h.aux);
        if (other < 0 || other >= n || other == cfg_.rank) {
          return FailChannel(peer, ch, "protocol_error", "relayed ack names a bad rank");
        }
        if (h.flags & kFlagRelayed) return OnRelayedAck(peer, other, h.seq);
        peers_[other].relay_heard = MonoNowNs();
        return OnAck(other, h.seq);
      }
      return OnAck(peer, h.seq);
    case kPathDown: {
      Peer& p = peers_[peer];
      if (h.aux < p.ch.size() && &p.ch[h.aux] != &ch && p.ch[h.aux].state == ChState::kUp &&
          p.ch[h.aux].gen == static_cast<uint32_t>(h.seq)) {
        FailChannel(peer, p.ch[h.aux], "peer_notice",
                    "rank " + std::to_string(peer) + " reported the path down");
      }
      return;
    }
    case kData:
      break;
    default:
      return FailChannel(peer, ch, "protocol_error", "unknown frame type");
  }
  ch.rgot = 0;
  ch.rposted = false;
  ch.rdst = nullptr;
  ch.rprobe = false;
  ch.in_payload = h.len > 0;
  ch.rfwd = (h.flags & kFlagForward) != 0;
  ch.rsrc = (h.flags & kFlagRelayed) ? static_cast<int>(h.aux) : peer;
  if (h.flags & (kFlagForward | kFlagRelayed)) {
    const int other = static_cast<int>(h.aux);
    if (other < 0 || other >= n || other == cfg_.rank || other == peer) {
      return FailChannel(peer, ch, "protocol_error", "relayed chunk names a bad rank");
    }
  }
  if (ch.rfwd) {
    // To be forwarded (we are the relay): kept until the destination acknowledges it.
    ch.rpriv.Reset(h.len);
    ch.rdst = ch.rpriv.data();
    if (!ch.in_payload) OnPayloadDone(peer, ch);
    return;
  }
  const int src = ch.rsrc;
  Peer& p = peers_[src];
  if (p.recv.Applied(h.seq)) {
    // A duplicate (its ack was lost, or it was resent after a false alarm): read into
    // nothing, then ack again (OnPayloadDone).
    if (!ch.in_payload) OnPayloadDone(peer, ch);
    return;
  }
  // The same chunk may be arriving on another channel (a resend, possibly relayed).
  bool elsewhere = false;
  for (auto& q : peers_) {
    for (auto& other : q.ch) {
      if (&other != &ch && other.in_payload && !other.rfwd && other.rsrc == src &&
          other.rhdr.seq == h.seq && other.rdst)
        elsewhere = true;
    }
  }
  auto it = p.posted.find(h.tag);
  if (!elsewhere && it != p.posted.end()) {
    if (it->second.len != h.len) {
      Fail(InternalError("ftccl: message " + TagString(h.tag) + " from rank " +
                         std::to_string(src) + " has " + std::to_string(h.len) +
                         " bytes, receiver expected " + std::to_string(it->second.len)));
      ch.rdst = nullptr;
      return;
    }
    if (it->second.data) {
      ch.rdst = it->second.data;
      ch.rposted = true;
    } else {  // lands in an engine buffer, for the arrival action
      ch.rpriv.Reset(h.len);
      ch.rdst = ch.rpriv.data();
    }
  } else {
    ch.rpriv.Reset(h.len);
    ch.rdst = ch.rpriv.data();
  }
  if (!ch.in_payload) OnPayloadDone(peer, ch);
}

void Engine::Impl::OnPayloadDone(int peer, Channel& ch) {
  const FrameHeader& h = ch.rhdr;
  if (ch.rfwd) return ForwardChunk(peer, ch);
  const int src = ch.rsrc;
  Peer& p = peers_[src];
  // A relayed chunk is acknowledged to its origin through the relay it came from.
  if (src != peer) {
    p.relay_heard = MonoNowNs();
    QueueCtrl(ch, MakeHeader(kAck, 0, static_cast<uint32_t>(src), h.seq, 0, kFlagRelayed));
  } else {
    QueueCtrl(ch, MakeHeader(kAck, 0, 0, h.seq, 0));
  }
  // The ack goes out when OnReadable is done with what has arrived: acks of chunks that
  // arrived together leave in one send.
  if (ch.rdst == nullptr || p.recv.Applied(h.seq)) {
    if (p.recv.Applied(h.seq)) ++st_dups_;
    ch.rdst = nullptr;
    return;
  }
  p.recv.Apply(h.seq);
  // Another channel receiving the same chunk (a resend) must not write into the buffer now.
  for (auto& q : peers_) {
    for (auto& other : q.ch) {
      if (&other != &ch && other.in_payload && !other.rfwd && other.rsrc == src &&
          other.rhdr.seq == h.seq)
        other.rdst = nullptr;
    }
  }
  if (ch.rposted) {
    auto it = p.posted.find(h.tag);
    RecvReq req = it->second;
    p.posted.erase(it);
    if (req.has_arrival) OnArrival(req.arrival, req.data, req.len);
    Complete(req.cookie, false);
  } else {
    auto it = p.posted.find(h.tag);
    if (it != p.posted.end()) {
      RecvReq req = it->second;
      p.posted.erase(it);
      if (req.data && h.len) std::memcpy(req.data, ch.rpriv.data(), h.len);
      if (req.has_arrival) OnArrival(req.arrival, req.data ? req.data : ch.rpriv.data(), h.len);
      Complete(req.cookie, false);
    } else {
      p.unexpected[h.tag] = std::move(ch.rpriv);
    }
    ch.rpriv = Blob{};
  }
  ch.rdst = nullptr;
  ch.rposted = false;
}

void Engine::Impl::EnqueueSend(int peer, uint64_t tag, const char* data, size_t len,
                               uint64_t cookie) {
  auto c = std::make_unique<SendChunk>();
  c->tag = tag;
  c->data = data;
  c->len = static_cast<uint32_t>(len);
  c->cookie = cookie;
  peers_[peer].send.AddNext(std::move(c));
}

// The collective's next step, on the engine thread: reduce what arrived, send the result on.
void Engine::Impl::OnArrival(const Arrival& a, const char* got, size_t len) {
  ArrivalJoin* join = a.join;
  if (a.reduce && len) {
    const size_t count = len / SizeOf(a.type);
    if (a.own && (!join || join->arrived == 0)) {
      HostReduce3(a.out, a.own, got, count, a.type, a.op);
    } else {
      HostReduce(a.out, got, count, a.type, a.op);
    }
  }
  if (join) {
    if (++join->arrived < join->expected) return;
    for (const ArrivalJoin::Send& s : join->sends) {
      EnqueueSend(s.to, s.tag, a.out, len, s.cookie);
      PumpPeer(s.to);
    }
    return;
  }
  if (a.to >= 0) {
    EnqueueSend(a.to, a.tag, a.out, len, a.send_cookie);
    PumpPeer(a.to);
  }
}

void Engine::Impl::OnAck(int peer, uint64_t seq) {
  Peer& p = peers_[peer];
  SendChunk* c = p.send.Find(seq);
  if (!c) return;  // a second ack for a resent chunk
  if (c->channel >= 0) {
    Channel& ch = ChannelOf(peer, *c);
    if (ch.cur == c) return;  // still being written: cannot be acked yet (stale ack)
    ch.inflight.Remove(c->len);
    const Nanos now = MonoNowNs();
    ch.health.OnAck(now, c->written, c->len);
    if (ch.inflight.chunks == 0) ch.health.OnBusy(now, false);
  }
  std::unique_ptr<SendChunk> released = p.send.Release(seq);
  if (c->failover >= 0) {
    Failover& f = failovers_[c->failover];
    if (f.remaining > 0 && --f.remaining == 0) {
      Event e{EventType::kFailoverDone};
      e.peer = peer;
      e.channel = f.channel;
      e.path = f.path;
      e.cause = f.cause;
      e.detail = std::to_string(f.moved) + " chunks resent in " +
                 FormatDuration(MonoNowNs() - f.detected_mono);
      Emit(e);
    }
  }
  const int via = c->via;
  if (c->forward) {
    // Pass the destination's ack back to the chunk's origin on the channel the chunk came in
    // on, as acks of direct chunks do: if that channel fails before the ack gets through, the
    // origin resends the chunk (the relay forwards it again, the destination drops the
    // duplicate and acks again). An ack sent on another channel could die with that one
    // while the origin's chunk waits on a working channel for ever. Any working channel only
    // when that one is down (the origin is requeueing then).
    const int origin = c->origin;
    fwd_index_.erase(std::make_tuple(peer, origin, c->oseq));
    std::vector<Channel>& back = peers_[origin].ch;
    Channel* via_ch = nullptr;
    if (c->origin_channel >= 0 && c->origin_channel < static_cast<int>(back.size()) &&
        back[c->origin_channel].state == ChState::kUp) {
      via_ch = &back[c->origin_channel];
    }
    for (size_t k = 0; !via_ch && k < back.size(); ++k) {
      if (back[k].state == ChState::kUp) via_ch = &back[k];
    }
    if (via_ch) {
      QueueCtrl(*via_ch,
                MakeHeader(kAck, 0, static_cast<uint32_t>(peer), c->oseq, 0, kFlagRelayAck));
      PumpSend(origin, *via_ch);
    }
    released.reset();
  } else {
    uint64_t cookie = c->cookie;
    bool cancelled = c->detached || c->owned.data() || c->data == nullptr;
    released.reset();
    if (!cancelled) Complete(cookie, true);
  }
  PumpPeer(peer);
  if (via >= 0) PumpPeer(via);
}

}  // namespace fl::ccl::ftccl
