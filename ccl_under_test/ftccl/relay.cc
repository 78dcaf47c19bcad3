// Intra-host routing (docs/ftccl.md, "Relay"): a rank with no working channel to a peer sends
// through a rank it still reaches; as the relay, a rank forwards such chunks and passes the
// destination's acks back.
#include "ccl_under_test/ftccl/engine_impl.h"

#include "common/log.h"

namespace fl::ccl::ftccl {

// While we have no working channel of our own to `peer`, its chunks go through a rank that we
// do reach: one on the peer's host first (it reaches the peer over the host-local channel),
// else one on ours (its NICs may work where ours do not). Forwarded chunks are never relayed
// again, so a route is one extra hop at most.
int Engine::Impl::ChooseRelay(int peer) const {
  if (!relay_ || AnyUp(peers_[peer])) return -1;
  bool ever_up = false;
  for (auto& ch : peers_[peer].ch) {
    if (ch.bye) return -1;  // the peer closed its communicator
    ever_up |= ch.ever_up;
  }
  if (!ever_up) return -1;  // still connecting (start-up), not a failure
  for (const std::string* want : {&peers_[peer].host, &host_id_}) {
    if (want->empty()) continue;
    for (const Peer& r : peers_) {
      if (r.rank == cfg_.rank || r.rank == peer || r.host != *want) continue;
      if (AnyUp(r)) return r.rank;
    }
  }
  return -1;
}

void Engine::Impl::UpdateRoutes() {
  if (!relay_) return;
  for (Peer& p : peers_) {
    if (p.rank == cfg_.rank) continue;
    int via = ChooseRelay(p.rank);
    if (via == p.via) continue;
    p.via = via;
    Event e{EventType::kRelayRoute};
    e.peer = p.rank;
    e.cause = via >= 0 ? "no_direct_path" : (AnyUp(p) ? "direct_path" : "no_route");
    e.path = via >= 0 ? "via rank " + std::to_string(via) : "";
    e.detail = via >= 0 ? "chunks to rank " + std::to_string(p.rank) + " go through rank " +
                              std::to_string(via)
                        : "relay to rank " + std::to_string(p.rank) + " ended";
    Emit(e);
    FL_LOG(kInfo, "ftccl") << e.detail;
  }
}

// We are the relay: rank `from` sent us a chunk for rank rhdr.aux. It goes to the destination
// (over our own channels to it) as a chunk of `from`, with `from`'s sequence number, and stays
// ours until the destination acknowledges it; a copy we already hold is dropped.
void Engine::Impl::ForwardChunk(int from, Channel& ch) {
  const FrameHeader& h = ch.rhdr;
  const int dest = static_cast<int>(h.aux);
  ch.rfwd = false;
  ch.rdst = nullptr;
  auto key = std::make_tuple(dest, from, h.seq);
  if (!fwd_index_.count(key)) {
    auto c = std::make_unique<SendChunk>();
    c->seq = next_fwd_key_++;
    c->tag = h.tag;
    c->data = nullptr;
    c->len = h.len;
    c->cookie = 0;
    c->forward = true;
    c->origin = from;
    c->origin_channel = ch.index;
    c->oseq = h.seq;
    c->payload = std::move(ch.rpriv);
    fwd_index_[key] = c->seq;
    peers_[dest].send.Add(std::move(c));
    ++st_forwarded_;
    PumpPeer(dest);
  }
  ch.rpriv = Blob{};
  PumpSend(from, ch);
}

// The destination `dest` acknowledged a chunk of `origin` that we forwarded.
void Engine::Impl::OnRelayedAck(int dest, int origin, uint64_t oseq) {
  auto it = fwd_index_.find(std::make_tuple(dest, origin, oseq));
  if (it == fwd_index_.end()) return;  // a second ack (the chunk was forwarded twice)
  OnAck(dest, it->second);
}

}  // namespace fl::ccl::ftccl
