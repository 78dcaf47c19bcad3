// The engine's internals (engine.h has the contract; docs/ftccl.md the design), shared by its
// parts and included by them only:
//   engine_api.cc   the public API, Init/Flush/Stop, waits for completions, user ops, the dump
//   channel.cc      channel state: connect, handshake, up, fail (requeue), accept, link changes
//   data_path.cc    chunks on a channel: pulling from the window, writing and reading frames,
//                   exactly-once apply into posted buffers, acks, arrival actions
//   relay.cc        intra-host routing: choosing a relay, forwarding, relayed acks
//   event_loop.cc   the engine thread: epoll loop, timers (keep-alives, dead paths, reconnects)
//   health.cc       path health on the channels: judging, draining, probing, restoring
// The pure parts are apart: frame.h (wire frames), reliable_window.h (sequence numbers, acks,
// requeue, duplicates), path_health.h (verdicts on a path), buffer_pool.h (payload buffers).
//
// Thread-safety: everything below is owned by the engine thread except what Engine::Impl
// guards with inbox_mu_ / done_mu_ (see engine.h for who calls what).
#pragma once

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ccl_under_test/ftccl/buffer_pool.h"
#include "ccl_under_test/ftccl/engine.h"
#include "ccl_under_test/ftccl/frame.h"
#include "ccl_under_test/ftccl/link_monitor.h"
#include "ccl_under_test/ftccl/reliable_window.h"
#include "ccl_under_test/ftccl/transport/unix/unix_transport.h"

namespace fl::ccl::ftccl {

using frame::FrameHeader;
using frame::kMagic;
using frame::MakeHeader;
using enum frame::FrameType;
using enum frame::FrameFlags;

// Keys of forwarded chunks in the relay's per-peer chunk map: above every own sequence number,
// so the queue sends own chunks first and a forwarded chunk is never relayed again.
inline constexpr uint64_t kForwardKeyBase = 1ull << 63;

// The label of host-local channels (the local "address" given to the host transport).
inline constexpr char kHostLocal[] = "host-local";

inline std::string TagString(uint64_t tag) {
  return "coll " + std::to_string(tag >> 32) + " step " + std::to_string((tag >> 20) & 0xfff) +
         " slice " + std::to_string(tag & 0xfffff);
}

// epoll user data: kind in the top byte, indices below.
enum FdKind : uint64_t {
  kFdWake = 1,
  kFdLink = 2,
  kFdListener = 3,
  kFdChannel = 4,
  kFdPending = 5
};
inline uint64_t Key(FdKind kind, uint64_t a, uint64_t b = 0) { return kind << 56 | a << 24 | b; }

// A chunk in a peer's SendWindow (seq: our sequence number, or a forward key; where it is).
struct SendChunk : WindowSlot {
  uint64_t tag = 0;
  const char* data = nullptr;
  uint64_t cookie = 0;
  int failover = -1;      // id of the failover that moved it, or -1
  Nanos taken = 0;        // when a channel took it (its frame began), for path health
  Nanos written = 0;      // when its frame was completely written, 0 = not yet
  Blob owned;             // payload copy: after CancelAll (frame half written) or DetachSends
  bool detached = false;  // completed by DetachSends before its ack
  // A chunk we forward for another rank of our host (or to one): whose it is and its
  // sequence number there; the payload is ours.
  bool forward = false;
  int origin = -1;
  int origin_channel = -1;  // the channel of `origin` it came in on: the ack goes back there
  uint64_t oseq = 0;
  Blob payload;
  const char* Bytes() const {
    return forward ? payload.data() : owned.data() ? owned.data() : data;
  }
};

struct RecvReq {
  char* data;  // nullptr: into an engine buffer, for the arrival action only
  size_t len;
  uint64_t cookie;
  bool has_arrival = false;
  Arrival arrival;
};

struct Failover {
  int channel;
  std::string path;
  std::string cause;
  Nanos detected_mono;
  size_t remaining;
  size_t moved;
};

enum class ChState { kDown, kConnecting, kHandshake, kUp };

struct Channel {
  int index = 0;
  int local_nic = 0;  // -1: the host-local channel (loopback, same-host peers only)
  int remote_nic = 0;
  bool active = false;  // we connect (lower rank)
  ChState state = ChState::kDown;
  std::unique_ptr<transport::Connection> conn;
  std::string path;
  bool want_out = false;
  // Sending.
  std::string ctrl;  // control frames waiting
  size_t ctrl_off = 0;
  SendChunk* cur = nullptr;  // data frame being written
  FrameHeader cur_hdr{};
  size_t cur_off = 0;  // bytes of header + payload written
  // The rest of a data frame that was half written when the channel was drained (its chunk
  // went back to the queue): written before anything else.
  Blob tail;
  size_t tail_off = 0;
  InflightCount inflight;
  // Path health (NIC channels): judged in Timers, drained and probed (health.cc).
  PathHealth health;
  uint64_t next_probe = 1;
  Nanos next_counters = 0;
  // Receiving.
  FrameHeader rhdr{};
  size_t rhdr_got = 0;
  bool in_payload = false;
  char* rdst = nullptr;  // where the payload goes (posted buffer, private buffer or null=discard)
  Blob rpriv;
  bool rposted = false;
  size_t rgot = 0;
  int rsrc = -1;        // whose chunk is arriving (the peer, or the origin of a relayed one)
  bool rfwd = false;    // arriving chunk is to be forwarded to rank rhdr.aux
  bool rprobe = false;  // arriving payload is a probe's: discarded, then answered
  // Timing.
  Nanos last_rx = 0;
  Nanos last_tx = 0;
  Nanos attempt_started = 0;
  Nanos next_attempt = 0;
  Nanos backoff = 0;
  bool ever_up = false;
  uint32_t gen = 0;  // connection generation (set by the connecting side, sent in HELLO)
  bool bye = false;  // the peer closed the communicator: not a fault, do not reconnect
  bool failed_before = false;
  uint64_t bytes_sent = 0;
  uint64_t chunks_sent = 0;
};

struct Peer {
  int rank = 0;
  std::vector<Channel> ch;
  std::vector<std::string> addrs;  // the peer's listening addresses, per NIC
  SendWindow<SendChunk> send;      // our chunks to this peer (and ones we forward to it)
  RecvWindow recv;                 // its chunks to us: which were applied
  std::unordered_map<uint64_t, RecvReq> posted;  // by tag
  std::unordered_map<uint64_t, Blob> unexpected;
  Nanos all_down_since = 0;
  bool gone = false;      // Flush: unreachable at exit, owed nothing more
  std::string host;       // host id ("" = unknown: no host-local channel, no relay through it)
  std::string lo_addr;    // host-local listening address
  int via = -1;           // relay rank while we have no working channel of our own, or -1
  Nanos relay_heard = 0;  // last ack or chunk of this peer that came through a relay
};

struct PendingAccept {
  std::unique_ptr<transport::Connection> conn;
  FrameHeader hdr{};
  size_t got = 0;
  Nanos since = 0;
  int nic = 0;
};

struct Op {
  enum Kind { kSend, kRecv, kCancel, kDump, kDetach } kind = kSend;
  int peer = -1;
  uint64_t tag = 0;
  char* data = nullptr;
  size_t len = 0;
  uint64_t cookie = 0;
  bool has_arrival = false;
  Arrival arrival;
};

inline Op MakeOp(Op::Kind kind, int peer = -1, uint64_t tag = 0, char* data = nullptr,
                 size_t len = 0, uint64_t cookie = 0) {
  Op op;
  op.kind = kind;
  op.peer = peer;
  op.tag = tag;
  op.data = data;
  op.len = len;
  op.cookie = cookie;
  return op;
}

class Engine::Impl {
 public:
  Impl(const CommConfig& config, std::shared_ptr<transport::Transport> t,
       std::shared_ptr<transport::Transport> host_t, EngineOptions o)
      : cfg_(config), transport_(std::move(t)), host_transport_(std::move(host_t)), opt_(o) {
    if (!host_transport_) host_transport_ = transport::unix_socket::CreateUnixTransport();
  }
  ~Impl() {
    Flush();
    Stop();
  }

  Status Init();
  // Before the engine goes: waits (bounded by peer_dead_timeout, after which a peer we still
  // owe data counts as dead anyway) until every chunk we still carry is acknowledged. The
  // last collective returned once its own receives were in (DetachSends): its remaining
  // sends, and chunks we forward for other ranks, would otherwise die with this process
  // while a peer still waits for them. Peers that said BYE have finished and need nothing.
  void Flush();
  void Stop();

  // User-thread side.
  void Post(Op op) {
    bool was_empty;
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      was_empty = inbox_.empty();
      inbox_.push_back(op);
    }
    // The engine thread takes the whole inbox after each wake-up: one wake per batch (a
    // collective posts a send and a receive per reduced slice).
    if (was_empty) Wake();
  }
  StatusOr<Completion> Wait(Deadline deadline);
  Status WaitCounts(size_t recvs, size_t sends, size_t* recvs_done, size_t* sends_done,
                    Deadline deadline);
  void CancelAll();
  std::string Dump();
  // Set in Init, read-only afterwards.
  std::vector<std::string> HostIds() const {
    std::vector<std::string> out(peers_.size());
    for (size_t r = 0; r < out.size(); ++r) {
      out[r] = static_cast<int>(r) == cfg_.rank ? host_id_ : peers_[r].host;
    }
    return out;
  }
  std::vector<std::vector<std::string>> NicAddrs() const {
    std::vector<std::vector<std::string>> out(peers_.size());
    for (size_t r = 0; r < out.size(); ++r) {
      out[r] = static_cast<int>(r) == cfg_.rank ? my_addrs_ : peers_[r].addrs;
    }
    return out;
  }
  Status error() const {
    std::lock_guard<std::mutex> lock(done_mu_);
    return error_;
  }
  void Fail(Status s);
  void Emit(Event e) {
    if (!cfg_.events) return;
    e.rank = cfg_.rank;
    if (e.wall_ns == 0) e.wall_ns = WallNowNs();
    if (e.mono_ns == 0) e.mono_ns = MonoNowNs();
    cfg_.events->OnEvent(e);
  }

  const CommConfig cfg_;
  std::shared_ptr<transport::Transport> transport_;
  std::shared_ptr<transport::Transport> host_transport_;  // host-local channels
  const EngineOptions opt_;

 private:
  void Wake() {
    uint64_t one = 1;
    ssize_t n = write(wake_fd_, &one, sizeof(one));
    (void)n;
  }
  void Loop();
  void DrainInbox();
  void HandleOp(const Op& op);
  void Complete(uint64_t cookie, bool is_send) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(done_mu_);
      done_.push_back({cookie, is_send});
      ++(is_send ? queued_sends_ : queued_recvs_);
      // A WaitCounts caller sleeps until its counts are there: one wake-up per collective
      // instead of one per slice.
      wake = !counting_ || (queued_recvs_ >= want_recvs_ && queued_sends_ >= want_sends_);
    }
    if (wake) done_cv_.notify_one();
  }

  Channel& Ch(int peer, int c) { return peers_[peer].ch[c]; }
  // The channel a chunk to `peer` is in flight on (a relay's channel when c.via >= 0).
  // REQUIRES: c.channel >= 0.
  Channel& ChannelOf(int peer, const SendChunk& c) {
    return peers_[c.via >= 0 ? c.via : peer].ch[c.channel];
  }
  std::string LocalAddr(const Channel& ch) const {
    return ch.local_nic < 0 ? kHostLocal : cfg_.nics[ch.local_nic];
  }
  std::string RemoteAddr(int peer, const Channel& ch) const {
    return ch.local_nic < 0 ? peers_[peer].lo_addr : peers_[peer].addrs[ch.remote_nic];
  }
  // The host-local channel, when the peer has one, is the last.
  static bool HostLocalUp(const Peer& p) {
    return !p.ch.empty() && p.ch.back().local_nic < 0 && p.ch.back().state == ChState::kUp;
  }
  static bool AnyUp(const Peer& p) {
    for (auto& ch : p.ch)
      if (ch.state == ChState::kUp) return true;
    return false;
  }
  int ChooseRelay(int peer) const;
  void UpdateRoutes();
  void OnRelayedAck(int dest, int origin, uint64_t oseq);
  void ForwardChunk(int from, Channel& ch);
  void SetWantOut(int peer, Channel& ch, bool want);
  void StartConnect(int peer, Channel& ch, Nanos now);
  void OnConnectable(int peer, Channel& ch);
  void ChannelUp(int peer, Channel& ch, std::unique_ptr<transport::Connection> conn,
                 uint32_t gen = 0);
  void FailChannel(int peer, Channel& ch, const std::string& cause, const std::string& detail);
  void QueueCtrl(Channel& ch, const FrameHeader& h) {
    ch.ctrl.append(reinterpret_cast<const char*>(&h), sizeof(h));
  }
  void PumpPeer(int peer);
  void PumpSend(int peer, Channel& ch);
  // Writes what is left of a byte buffer (a drained frame's tail, the control frames) from
  // *off on, advancing *off. False when the channel takes no more now: it failed
  // (FailChannel) or its socket is full (SetWantOut).
  bool WriteRest(int peer, Channel& ch, char* data, size_t size, size_t* off);
  void OnReadable(int peer, Channel& ch);
  void OnHeader(int peer, Channel& ch);
  void OnPayloadDone(int peer, Channel& ch);
  void OnAck(int peer, uint64_t seq);
  void EnqueueSend(int peer, uint64_t tag, const char* data, size_t len, uint64_t cookie);
  void OnArrival(const Arrival& a, const char* got, size_t len);
  void NoteRequeued(SendChunk& c, int fid);
  size_t RequeueCarried(int peer, Channel& ch, int fid, std::vector<int>* relayed_for);
  int StartFailover(int peer, Channel& ch, const std::string& cause, const std::string& detail,
                    const char* what, Nanos now, std::vector<int>* relayed_for);
  void FinishIfNothingMoved(int peer, const Channel& ch, int fid);
  void OnAccept(int nic);
  void OnPendingReadable(size_t idx);
  void Timers(Nanos now);
  bool HasPendingBytes(Channel& ch);
  // Path health (health.cc).
  // peer_heard_ago: PeerHeardElsewhereAgo(p, ch, now), which the caller has already.
  void JudgeHealth(Peer& p, Channel& ch, Nanos now, Nanos peer_heard_ago);
  // Since the peer was last heard on a working channel other than ch; -1 when on none (a
  // peer silent everywhere is more likely starved than cut off on each path).
  static Nanos PeerHeardElsewhereAgo(const Peer& p, const Channel& ch, Nanos now);
  void DrainChannel(int peer, Channel& ch, PathVerdict why, const std::string& detail);
  void SendProbe(int peer, Channel& ch, Nanos now);
  void OnProbeAck(int peer, Channel& ch, uint64_t id);
  void ReadCounters(Channel& ch, Nanos now);
  // Every working channel to the peer is drained: use them again (a bad path beats none).
  void UndrainIfNoneLeft(int peer);
  static bool Usable(const Channel& ch) { return ch.state == ChState::kUp && !ch.health.drained(); }
  void OnLinkChanges();
  std::string DumpLocked();
  // A user thread's request to the engine thread (kCancel, kDump): posts it numbered
  // ++*issued and waits, at most `bound`, until the engine thread has set *answered to that
  // number (or is gone). *lock holds done_mu_ on return. Whether the request was answered.
  bool Request(Op::Kind kind, uint64_t* issued, const uint64_t* answered, Nanos bound,
               std::unique_lock<std::mutex>* lock);

  int epfd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  std::mutex inbox_mu_;
  std::vector<Op> inbox_;

  mutable std::mutex done_mu_;
  std::condition_variable done_cv_;
  // Flush: the engine thread counts the chunks still owed to peers that have not left.
  std::atomic<bool> flushing_{false};
  std::atomic<size_t> owed_{0};
  std::atomic<uint64_t> loop_gen_{0};
  std::deque<Completion> done_;
  size_t queued_recvs_ = 0, queued_sends_ = 0;  // in done_
  bool counting_ = false;                       // a WaitCounts caller is asleep
  size_t want_recvs_ = 0, want_sends_ = 0;      // ... until done_ holds this many
  Status error_;
  uint64_t cancel_gen_ = 0;
  uint64_t cancel_done_ = 0;
  std::string dump_;
  uint64_t dump_gen_ = 0;
  uint64_t dump_done_ = 0;

  std::vector<std::unique_ptr<transport::Listener>> listeners_;
  std::vector<std::string> my_addrs_;
  std::vector<Peer> peers_;
  std::vector<std::unique_ptr<PendingAccept>> pending_;
  std::vector<int> nic_ifindex_;
  std::vector<bool> nic_down_;
  LinkMonitor links_;
  std::vector<Failover> failovers_;
  // Relay (intra-host routing): our host id ("" = off), host-local listening address.
  std::string host_id_;
  std::string my_lo_;
  bool relay_ = false;
  uint64_t next_fwd_key_ = kForwardKeyBase;
  // Chunks we forward, by (destination, origin, origin's sequence number) -> key.
  std::map<std::tuple<int, int, uint64_t>, uint64_t> fwd_index_;

 public:
  std::atomic<uint64_t> st_sent_{0}, st_requeued_{0}, st_dups_{0}, st_faults_{0}, st_restored_{0};
  std::atomic<uint64_t> st_relayed_{0}, st_forwarded_{0}, st_detached_{0}, st_host_local_{0};
  std::atomic<uint64_t> st_drained_{0}, st_probes_{0};

 private:
  bool fail_stopped_ = false;
};

}  // namespace fl::ccl::ftccl
