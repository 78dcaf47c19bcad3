// Path health on the engine's channels (engine_impl.h; the rules in path_health.h): each
// timer tick judges a working NIC channel against its siblings; a lossy, slow or stalled one
// is drained (its unacknowledged chunks resent on the others, no new chunks) and probed until
// it is healthy again, when it takes chunks again.
#include <algorithm>
#include <cstring>

#include "ccl_under_test/ftccl/engine_impl.h"
#include "common/log.h"
#include "common/units.h"

namespace fl::ccl::ftccl {
namespace {

// The probes' payload: zeros, shared.
const std::string& ProbePayload(size_t bytes) {
  static const std::string zeros(bytes, '\0');
  return zeros;
}

std::string FormatRate(double bytes_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MB/s", bytes_per_s / 1e6);
  return buf;
}

}  // namespace

Nanos Engine::Impl::PeerHeardElsewhereAgo(const Peer& p, const Channel& ch, Nanos now) {
  Nanos heard = -1;
  for (const Channel& other : p.ch)
    if (&other != &ch && other.state == ChState::kUp && other.last_rx > 0)
      heard = std::max(heard, other.last_rx);
  return heard < 0 ? -1 : std::max<Nanos>(0, now - heard);
}

void Engine::Impl::ReadCounters(Channel& ch, Nanos now) {
  if (!ch.conn || now < ch.next_counters) return;
  ch.next_counters = now + std::max<Nanos>(kNsPerMs, opt_.health.loss_window / 10);
  transport::Connection::Counters c;
  if (ch.conn->ReadCounters(&c)) ch.health.OnTcpInfo(now, c.segs_out, c.total_retrans, c.rtt);
}

void Engine::Impl::JudgeHealth(Peer& p, Channel& ch, Nanos now, Nanos peer_heard_ago) {
  if (!opt_.health.enabled || ch.local_nic < 0 || !cfg_.failover) return;
  ReadCounters(ch, now);
  if (ch.health.drained()) {
    if (ch.health.ProbeDue(now) && !ch.cur && ch.tail_off >= ch.tail.size()) {
      SendProbe(p.rank, ch, now);
    }
    ch.health.Judge(now, 0, SiblingView{});  // keeps its rate samples going
    return;
  }
  // The oldest of our own chunks in flight here (frames still being written count from when
  // they began).
  Nanos oldest = 0;
  if (ch.inflight.chunks > 0) {
    p.send.ForEach([&](SendChunk& c) {
      if (c.channel != ch.index || c.via >= 0) return;
      const Nanos t = c.written ? c.written : c.taken;
      if (t > 0 && (oldest == 0 || t < oldest)) oldest = t;
    });
  }
  SiblingView sib;
  sib.peer_heard_ago = peer_heard_ago;
  for (const Channel& other : p.ch) {
    if (&other == &ch || other.local_nic < 0 || !Usable(other)) continue;
    ++sib.healthy;
    sib.best_rate = std::max(sib.best_rate, other.health.rate());
    const double l = other.health.loss();
    if (l >= 0 && (sib.best_loss < 0 || l < sib.best_loss)) sib.best_loss = l;
  }
  const PathVerdict v = ch.health.Judge(now, oldest, sib);
  if (v == PathVerdict::kHealthy || sib.healthy == 0) return;
  std::string detail = ch.health.Describe();
  if (v == PathVerdict::kStalled) {
    detail = "no ack for " + FormatDuration(now - std::max(oldest, now - ch.health.StallAfter())) +
             " with " + std::to_string(ch.inflight.chunks) + " chunk(s) in flight; " + detail;
  } else if (sib.best_rate > 0) {
    detail += "; best sibling " + FormatRate(sib.best_rate);
  }
  DrainChannel(p.rank, ch, v, detail);
}

void Engine::Impl::DrainChannel(int peer, Channel& ch, PathVerdict why, const std::string& detail) {
  const Nanos now = MonoNowNs();
  ch.health.Drain(now, why);
  ++st_drained_;
  // A frame half written stays on this channel (the stream cannot skip it): its remaining
  // bytes are copied, so its chunk can go back to the queue and be resent elsewhere.
  if (ch.cur) {
    SendChunk* c = ch.cur;
    const size_t total = sizeof(FrameHeader) + c->len;
    ch.tail.Reset(total - ch.cur_off);
    size_t at = 0;
    if (ch.cur_off < sizeof(FrameHeader)) {
      const size_t h = sizeof(FrameHeader) - ch.cur_off;
      std::memcpy(ch.tail.data(), reinterpret_cast<const char*>(&ch.cur_hdr) + ch.cur_off, h);
      at = h;
    }
    const size_t from = ch.cur_off > sizeof(FrameHeader) ? ch.cur_off - sizeof(FrameHeader) : 0;
    if (c->len > from) std::memcpy(ch.tail.data() + at, c->Bytes() + from, c->len - from);
    ch.tail_off = 0;
    ch.cur = nullptr;
  }
  std::vector<int> relayed_for;
  const int fid = StartFailover(peer, ch, PathVerdictCause(why), "drained: " + detail, "drained",
                                now, &relayed_for);
  ch.health.OnBusy(now, false);
  FinishIfNothingMoved(peer, ch, fid);
  SetWantOut(peer, ch, ch.tail_off < ch.tail.size() || ch.ctrl_off < ch.ctrl.size());
  PumpPeer(peer);
  for (int q : relayed_for) PumpPeer(q);
}

void Engine::Impl::SendProbe(int peer, Channel& ch, Nanos now) {
  const uint64_t id = ch.next_probe++;
  const size_t bytes = opt_.health.probe_bytes;
  QueueCtrl(ch, MakeHeader(kProbe, static_cast<uint32_t>(bytes), 0, id, 0));
  ch.ctrl += ProbePayload(bytes);
  ch.health.OnProbeSent(now, id);
  ++st_probes_;
  PumpSend(peer, ch);
}

void Engine::Impl::OnProbeAck(int peer, Channel& ch, uint64_t id) {
  const Nanos now = MonoNowNs();
  ch.next_counters = 0;
  ReadCounters(ch, now);  // the probe's retransmits, if any, are counted before it is judged
  double reference = 0;
  for (const Channel& other : peers_[peer].ch) {
    if (&other != &ch && other.local_nic >= 0 && Usable(other)) {
      reference = std::max(reference, other.health.rate());
    }
  }
  const PathVerdict was = ch.health.drained_for();
  const Nanos since = ch.health.drained_since();
  if (!ch.health.OnProbeAck(now, id, reference)) return;
  Event e{EventType::kPathRestored};
  e.peer = peer;
  e.channel = ch.index;
  e.path = ch.path;
  e.cause = PathVerdictCause(was);
  e.detail = "probes healthy after " + FormatDuration(now - since) + " drained";
  Emit(e);
  ++st_restored_;
  FL_LOG(kInfo, "ftccl") << "path to rank " << peer << " ch " << ch.index << " " << ch.path
                         << " healthy again (" << e.cause << " " << FormatDuration(now - since)
                         << ")";
  PumpPeer(peer);
}

void Engine::Impl::UndrainIfNoneLeft(int peer) {
  Peer& p = peers_[peer];
  if (HostLocalUp(p)) return;
  for (const Channel& ch : p.ch)
    if (ch.local_nic >= 0 && Usable(ch)) return;
  const Nanos now = MonoNowNs();
  bool any = false;
  for (Channel& ch : p.ch) {
    if (ch.state == ChState::kUp && ch.health.drained()) {
      ch.health.Undrain(now);
      any = true;
      FL_LOG(kInfo, "ftccl") << "path to rank " << peer << " ch " << ch.index << " " << ch.path
                             << " used again though drained: no other path is left";
    }
  }
  if (any) PumpPeer(peer);
}

}  // namespace fl::ccl::ftccl
