// ftccl's engine: reliable, exactly-once, tagged point-to-point messages between the ranks
// of a group, carried over several channels per peer (one per local NIC and rail) and kept
// alive through path faults. The collectives (ftccl.cc) are written on top of it.
//
// How it works (docs/ftccl.md has the full story):
//   - every rank listens on each of its NICs (port 0) and publishes the addresses in the
//     rendezvous store; the lower rank of each pair opens channel c from its NIC c % L to the
//     peer's NIC c % R (same rail) and says HELLO; the peer answers HELLO;
//   - a message is one chunk (the collectives slice); chunks get a per-peer sequence number
//     and wait in the peer's queue; a channel pulls the next chunk whenever it has less than
//     window_bytes unacknowledged, so a faster path carries more;
//   - the receiver acknowledges every chunk on the channel it came on, applies each sequence
//     number once (duplicates are acknowledged and dropped) and writes straight into the
//     posted buffer when one is posted; a receive may carry an Arrival action (reduce, send
//     on) that the engine thread runs as soon as the message is in;
//   - ranks of one host (same host id) also get a host-local channel (abstract AF_UNIX), which
//     carries all their traffic while it is up;
//   - a channel fails on a transport error, on silence longer than dead_timeout (peers send
//     keep-alives when idle), on rtnetlink link-down of its NIC, or on the peer's notice
//     (PATH_DOWN over another channel); its unacknowledged chunks go back to the queue;
//     the connecting side reconnects with backoff (at once on link-up): failback;
//   - failover=false turns the first channel fault into a communicator error (fail-stop).
//
// Thread-safety: Post*, WaitCompletion, WaitCounts, DetachSends, CancelAll and DumpState are
// called by one user thread (the communicator's); error() and Abort() from any thread. All
// network state is owned by the engine's own thread.
// Ownership: posted buffers (and an Arrival's) are the caller's and must stay valid until
// their completion has been returned or CancelAll has returned; DetachSends releases sends.
// Blocking: waits take deadlines; the engine thread never blocks on the network.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ccl_under_test/api/communicator.h"
#include "ccl_under_test/ftccl/path_health.h"
#include "ccl_under_test/ftccl/transport/transport.h"

namespace fl::ccl::ftccl {

struct EngineOptions {
  // Largest message (chunk) the collectives post; frames carry at most this much payload.
  size_t chunk_bytes = 512 * 1024;
  // Unacknowledged bytes a channel may have in flight before it stops pulling chunks. Must
  // cover the path's bandwidth x (RTT + the receiver's scheduling delay): 8 MiB keeps a
  // 1 Gbit/s path with a 50 ms queue busy; smaller windows cap the rate of each path.
  size_t window_bytes = 8 * 1024 * 1024;
  // Channels per local NIC towards each peer.
  int channels_per_nic = 1;
  // A channel idle (nothing sent) this long sends a keep-alive.
  Nanos keepalive_interval = 20 * kNsPerMs;
  // A channel that has heard nothing for this long is failed (silent faults, carrier up): the
  // cap of the adaptive dead timeout (path_health.h; health.enabled=false: this, fixed).
  Nanos dead_timeout = 300 * kNsPerMs;
  // Path health: lossy, slow and stalled paths are drained and probed (path_health.h).
  // keepalive_interval and dead_timeout above override the ones in here.
  PathHealthOptions health;
  // A connect + handshake that takes longer is abandoned and retried.
  Nanos connect_timeout = 500 * kNsPerMs;
  Nanos reconnect_min = 10 * kNsPerMs;
  Nanos reconnect_max = 200 * kNsPerMs;
  // With work pending and every channel to a peer down this long: Unavailable.
  Nanos peer_dead_timeout = 10 * kNsPerSec;
  // Watch the local NICs' links through rtnetlink.
  bool watch_links = true;
  // Intra-host routing. Ranks that publish the same host id get a host-local channel
  // (an abstract AF_UNIX socket) between them, and a rank with no working channel of its own to a
  // peer sends through a rank of its own or of the peer's host that it still reaches (failover
  // only).
  // "" = off; "auto" = this kernel and network namespace (who can reach whom over loopback).
  std::string host_id;
};

// Counters for tests and tools (monotonic since Create).
struct EngineStats {
  uint64_t chunks_sent = 0;         // data frames started, resends included
  uint64_t chunks_requeued = 0;     // unacknowledged chunks moved off failed paths
  uint64_t duplicates_dropped = 0;  // chunks received again after they were applied
  uint64_t path_faults = 0;         // fault_detected events
  uint64_t paths_restored = 0;      // path_restored events
  uint64_t chunks_relayed = 0;      // our chunks sent through a relay rank
  uint64_t chunks_forwarded = 0;    // other ranks' chunks we forwarded as the relay
  uint64_t sends_detached = 0;      // sends completed from a copy by DetachSends
  uint64_t chunks_host_local = 0;   // of chunks_sent: over the host-local channel
  uint64_t paths_drained = 0;       // of path_faults: lossy, slow or stalled paths drained
  uint64_t probes_sent = 0;         // probe frames on drained paths
};

// What the engine thread does with a message the moment it has arrived, before reporting its
// completion: reduce it into `out` (with `own` as the other operand, or in place when own is
// nullptr) and/or send `out` (len bytes) on to rank `to` under `tag`, whose own completion
// is reported with `send_cookie`. A ring step then costs no hand-off to the caller's thread
// and back (two context switches per slice, about a tenth of the CPU on the lab).
// Several receives that feed one slice (a hierarchical AllReduce: the ring's partial sum and
// each same-host partner's contribution): each arrival is reduced into `out` (the first with
// `own`, the rest in place), and the sends go once all `expected` have arrived, in place of
// the Arrival's own `to`. Owned by the caller, like the buffers, and touched only by the
// engine thread once posted.
struct ArrivalJoin {
  struct Send {
    int to = -1;
    uint64_t tag = 0;
    uint64_t cookie = 0;
  };
  int expected = 1;
  int arrived = 0;
  std::vector<Send> sends;
};

struct Arrival {
  bool reduce = false;
  char* out = nullptr;
  const char* own = nullptr;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int to = -1;  // -1: no send
  uint64_t tag = 0;
  uint64_t send_cookie = 0;
  ArrivalJoin* join = nullptr;  // see ArrivalJoin; nullptr: this arrival alone
};

struct Completion {
  uint64_t cookie = 0;
  bool is_send = false;
};

class Engine {
 public:
  // Listens, publishes, connects to every peer and waits until each peer has at least one
  // working channel (init_timeout). config.store must be set when world_size > 1.
  // host_transport carries host-local channels (nullptr = abstract AF_UNIX sockets,
  // transport/unix); transport carries the NIC channels.
  static StatusOr<std::unique_ptr<Engine>> Create(
      const CommConfig& config, std::shared_ptr<transport::Transport> transport,
      const EngineOptions& options, std::shared_ptr<transport::Transport> host_transport = nullptr);
  ~Engine();

  int rank() const;
  int size() const;
  // Every rank's host id as published in the rendezvous ("" = none: no host-local channel),
  // the same on every rank.
  std::vector<std::string> HostIds() const;
  // Every rank's NIC listening addresses ("ip:port", rail order) as published.
  std::vector<std::vector<std::string>> NicAddrs() const;
  const EngineOptions& options() const;

  // REQUIRES: len <= chunk_bytes; tag unique per (peer, direction) among live messages.
  void PostSend(int peer, uint64_t tag, const void* data, size_t len, uint64_t cookie);
  void PostRecv(int peer, uint64_t tag, void* data, size_t len, uint64_t cookie);
  // A receive with an action on arrival (see Arrival). data == nullptr: the message lands in
  // an engine buffer that only the action reads (REQUIRES: arrival.reduce).
  // REQUIRES: the action's buffers stay valid as for posted buffers; len <= chunk_bytes.
  void PostRecv(int peer, uint64_t tag, void* data, size_t len, uint64_t cookie,
                const Arrival& arrival);
  // Next completed message. Returns error() when the engine has failed, Cancelled after
  // Abort, DeadlineExceeded when nothing completes in time.
  StatusOr<Completion> WaitCompletion(Deadline deadline);
  // Takes completions, counting them into *recvs_done and *sends_done, until those reach
  // recvs and sends; sleeps without a wake-up per completion. For callers that do not need
  // each cookie (the host ring: every step runs on the engine thread). Errors as
  // WaitCompletion.
  Status WaitCounts(size_t recvs, size_t sends, size_t* recvs_done, size_t* sends_done,
                    Deadline deadline);
  // Forgets every posted message and drops queued completions; after it returns no posted
  // buffer is touched again.
  void CancelAll();
  // Completes every posted send that is still unacknowledged, after copying its payload: the
  // caller's buffers are free, and the engine delivers (and after a fault resends) the copies.
  // For the end of a collective, whose last chunks would otherwise hold the caller for an ack
  // round trip through loaded links while the links stand idle (up to a window per channel).
  void DetachSends();
  // What every channel is doing and waiting for (the hang dump).
  std::string DumpState();

  Status error() const;
  EngineStats stats() const;
  // Sets `status` as the engine's error (first one wins) and wakes waiters.
  void Fail(Status status);
  void Abort();

  // Collective bookkeeping for events.
  void EmitCollective(EventType type, uint64_t seq, std::string detail);

  class Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Tags as the collectives build them: collective sequence (32 bits), step (12), slice (20).
inline uint64_t MakeTag(uint64_t coll, uint32_t step, uint32_t slice) {
  return (coll & 0xffffffffull) << 32 | static_cast<uint64_t>(step & 0xfff) << 20 |
         (slice & 0xfffff);
}
inline constexpr uint32_t kMaxSlices = 1u << 20;
inline constexpr uint32_t kMaxSteps = 1u << 12;

}  // namespace fl::ccl::ftccl
