// ftccl's reliable window: the bookkeeping that makes delivery over failing paths exactly-once,
// apart from sockets, threads and clocks (the engine, engine_impl.h, does the I/O and calls
// these).
//
//   - SendWindow: one per peer. Chunks get a sequence number and stay in the window until
//     acknowledged; each is either queued (waiting for a channel) or in flight on one channel
//     (of the peer, or of a relay rank). A channel takes the lowest queued sequence number
//     next; an ack releases the chunk; a failed channel's unacknowledged chunks go back to the
//     queue (RequeueCarried) and are resent on another path.
//   - RecvWindow: one per peer. Says whether an arriving sequence number is new (apply it)
//     or a duplicate (a resend after a lost ack or a false alarm: ack again, drop), in any
//     arrival order, with memory for the sequence numbers above the first gap only.
//   - InflightCount: what one channel has in flight, against the window (window_bytes): a
//     channel takes another chunk only while it has less than the window unacknowledged.
//
// Where an applied chunk lands (a posted receive's buffer, or an engine buffer until the
// receive is posted) is the engine's: it keys posted receives by tag.
//
// Thread-safety: none; each window is owned by the engine thread.
// Ownership: a SendWindow owns its chunks (std::unique_ptr) until Release or RemoveIf.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>

namespace fl::ccl::ftccl {

// Unacknowledged data a channel carries.
struct InflightCount {
  size_t bytes = 0;
  size_t chunks = 0;
  // The channel may take another chunk (which may then take it past the window by less than
  // one chunk: a chunk is never split).
  bool HasRoom(size_t window_bytes) const { return bytes < window_bytes; }
  void Add(size_t len) {
    bytes += len;
    ++chunks;
  }
  void Remove(size_t len) {
    bytes -= std::min(bytes, len);
    if (chunks) --chunks;
  }
  void Clear() { bytes = chunks = 0; }
};

// The part of a chunk the window reads and writes. The engine's chunk type derives from it.
struct WindowSlot {
  uint64_t seq = 0;  // key in the window: the sequence number (or a relay's forward key)
  uint32_t len = 0;  // payload bytes
  int channel = -1;  // in flight on this channel, or -1: queued
  int via = -1;      // the channel belongs to this relay rank instead of the peer, or -1
  bool queued() const { return channel < 0; }
};

// REQUIRES: Chunk derives from WindowSlot.
template <typename Chunk>
class SendWindow {
 public:
  // Gives the chunk the next sequence number (1, 2, ...) and queues it.
  Chunk& AddNext(std::unique_ptr<Chunk> c) {
    c->seq = next_seq_++;
    return Add(std::move(c));
  }
  // Queues a chunk under the key it carries. REQUIRES: no chunk with that key.
  Chunk& Add(std::unique_ptr<Chunk> c) {
    c->channel = -1;
    c->via = -1;
    Chunk& ref = *c;
    queue_.insert(c->seq);
    chunks_[c->seq] = std::move(c);
    return ref;
  }

  bool HasQueued() const { return !queue_.empty(); }
  // REQUIRES: HasQueued().
  uint64_t FrontQueued() const { return *queue_.begin(); }
  // The lowest queued chunk, now in flight on `channel` (of relay rank `via`, or -1).
  // REQUIRES: HasQueued().
  Chunk& Take(int channel, int via) {
    uint64_t seq = *queue_.begin();
    queue_.erase(queue_.begin());
    Chunk& c = *chunks_.at(seq);
    c.channel = channel;
    c.via = via;
    return c;
  }

  // nullptr: not in the window (never sent, or already acknowledged).
  Chunk* Find(uint64_t seq) const {
    auto it = chunks_.find(seq);
    return it == chunks_.end() ? nullptr : it->second.get();
  }
  // An ack: the chunk leaves the window (queued or in flight). nullptr: unknown (a second
  // ack of a resent chunk, or an ack after CancelAll).
  std::unique_ptr<Chunk> Release(uint64_t seq) {
    auto it = chunks_.find(seq);
    if (it == chunks_.end()) return nullptr;
    std::unique_ptr<Chunk> c = std::move(it->second);
    chunks_.erase(it);
    queue_.erase(seq);
    return c;
  }

  // Back to the queue, to be sent again on whichever channel takes it next.
  void Requeue(Chunk& c) {
    c.channel = -1;
    c.via = -1;
    queue_.insert(c.seq);
  }
  // A channel failed: every chunk in flight on (`channel`, `via`) is requeued, after
  // on_requeue(chunk) (the engine's failover bookkeeping). Returns how many.
  template <typename F>
  size_t RequeueCarried(int channel, int via, F&& on_requeue) {
    size_t moved = 0;
    for (auto& [seq, c] : chunks_) {
      if (c->channel != channel || c->via != via) continue;
      on_requeue(*c);
      Requeue(*c);
      ++moved;
    }
    return moved;
  }
  size_t RequeueCarried(int channel, int via) {
    return RequeueCarried(channel, via, [](Chunk&) {});
  }

  // Drops every chunk for which remove(chunk) is true (queued or in flight).
  template <typename F>
  void RemoveIf(F&& remove) {
    for (auto it = chunks_.begin(); it != chunks_.end();) {
      if (remove(*it->second)) {
        queue_.erase(it->first);
        it = chunks_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // f(chunk) for every chunk in the window, in key order.
  template <typename F>
  void ForEach(F&& f) {
    for (auto& [seq, c] : chunks_) f(*c);
  }

  size_t unacked() const { return chunks_.size(); }  // in the window: queued + in flight
  size_t queued() const { return queue_.size(); }
  bool empty() const { return chunks_.empty(); }

 private:
  uint64_t next_seq_ = 1;
  std::map<uint64_t, std::unique_ptr<Chunk>> chunks_;  // unacknowledged, by key
  std::set<uint64_t> queue_;                           // keys waiting for a channel
};

class RecvWindow {
 public:
  // Whether `seq` was applied already (a duplicate). Sequence numbers start at 1 (SendWindow):
  // 0 reads as applied.
  bool Applied(uint64_t seq) const { return seq < low_ || above_.count(seq) > 0; }
  // Records `seq` as applied. Returns false (and changes nothing) for a duplicate.
  bool Apply(uint64_t seq);
  // Every sequence number below this one was applied (the next one in order).
  uint64_t low() const { return low_; }
  // Sequence numbers applied above the first gap (arrived out of order).
  size_t out_of_order() const { return above_.size(); }

 private:
  uint64_t low_ = 1;
  std::set<uint64_t> above_;
};

}  // namespace fl::ccl::ftccl
