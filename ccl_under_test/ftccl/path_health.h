// ftccl's path health: whether one channel (a path to a peer) is healthy, lossy, slow or
// stalled, judged from what the engine measures on it and on its siblings (the other working
// channels to the same peer), apart from sockets and clocks: the engine (event_loop.cc,
// data_path.cc) feeds it times and counters and acts on the verdict (docs/ftccl.md, "Path
// health").
//
//   - Acks: the time from a chunk's frame being written to its ack (srtt, rttvar, as TCP
//     smooths them) and the gaps between acks while the channel has chunks in flight.
//   - Throughput: bytes acknowledged per busy time (time with chunks in flight), a sample per
//     `rate_window` of busy time, smoothed.
//   - Loss: TCP_INFO's segments sent and retransmitted, over the last `loss_window`.
//
// A verdict other than kHealthy drains the path: new chunks go to its siblings, its chunks
// in flight are resent there, and it is probed (a probe frame of `probe_bytes`, answered by
// the peer) until `probes_to_restore` probes in a row come back at a healthy rate with no
// retransmits, after a hold that doubles each time the path is drained again soon after it
// came back. A path is never drained without a healthy sibling: there would be nowhere better
// to send.
//
// The dead timeout (silence after which a path is failed, not drained) adapts to the ack
// times: clamp(dead_rtts x (srtt + 4 rttvar), dead_floor, dead_cap), and never below
// 3 keep-alive intervals, so an idle path's keep-alives do not look like silence. It applies
// only while the peer is heard on another path (SilenceLimit): a peer silent on every path
// is more likely a peer starved of CPU than a fault on each of its paths, and gets the cap.
//
// Thread-safety: none (each channel's PathHealth is owned by the engine thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "common/units.h"

namespace fl::ccl::ftccl {

struct PathHealthOptions {
  bool enabled = true;
  Nanos keepalive_interval = 20 * kNsPerMs;
  // Dead timeout (silence): clamp(dead_rtts x (srtt + 4 rttvar), floor, cap).
  double dead_rtts = 4;
  Nanos dead_floor = 100 * kNsPerMs;
  Nanos dead_cap = 300 * kNsPerMs;
  // Stall: chunks in flight and no ack for clamp(max(stall_rtts x srtt, stall_gaps x ack
  // gap, stall_peaks x the recent peak of ack times and gaps), floor, cap) since the later of
  // the last ack and the oldest chunk's write, while the peer is heard on another path (within
  // the last half of that time). The peak (it decays over about peak_acks acks) keeps a loaded
  // host's scheduling delays from reading as stalls; the peer heard elsewhere keeps a peer
  // starved of CPU (silent on every path at once) from reading as stalled paths.
  double stall_rtts = 3;
  double stall_gaps = 8;
  double stall_peaks = 3;
  int peak_acks = 256;
  Nanos stall_floor = 100 * kNsPerMs;
  Nanos stall_cap = 250 * kNsPerMs;
  // Slow: the smoothed rate below slow_ratio x the best sibling's for slow_samples samples in a
  // row.
  double slow_ratio = 0.2;
  int slow_samples = 4;
  Nanos rate_window = 20 * kNsPerMs;
  // Lossy: retransmitted / sent segments over loss_window at least loss_ratio (with at least
  // loss_min_segments sent), in each half of the window at least loss_half_share x
  // loss_ratio, and at least loss_vs_siblings x the siblings' best ratio, for loss_hold on
  // end. A lossy link loses steadily; a burst of tail drops at a congested queue, or a starved
  // peer's spurious retransmits, raises the window's ratio for a whole window but lies in one
  // half of it (the hold covers the moment it straddles the middle).
  double loss_ratio = 0.02;
  double loss_half_share = 0.75;
  double loss_vs_siblings = 3;
  uint64_t loss_min_segments = 1000;
  Nanos loss_window = 400 * kNsPerMs;
  Nanos loss_hold = 50 * kNsPerMs;
  // Probing a drained path.
  size_t probe_bytes = 1024 * 1024;
  Nanos probe_interval = 100 * kNsPerMs;
  int probes_to_restore = 3;
  double restore_ratio = 0.3;  // a probe's rate against the reference rate
  Nanos hold_min = 300 * kNsPerMs;
  Nanos hold_max = 4 * kNsPerSec;
};

enum class PathVerdict { kHealthy, kLossy, kSlow, kStalled };
// "path_lossy", "path_slow", "path_stalled" (the fault_detected cause); "healthy".
const char* PathVerdictCause(PathVerdict v);

// What the engine knows of a channel's siblings (the other working, undrained NIC channels to
// the same peer) when it judges the channel.
struct SiblingView {
  int healthy = 0;        // how many
  double best_rate = 0;   // bytes/s, 0 = none measured
  double best_loss = -1;  // lowest retransmit ratio among them (-1 = none measured)
  // Since the peer was last heard on any other path (0 = just now; -1 = never, or no other
  // path).
  Nanos peer_heard_ago = 0;
};

class PathHealth {
 public:
  explicit PathHealth(PathHealthOptions o = {}) : opt_(o) {}

  // A fresh connection: forget what the last one measured (the drain state too).
  void Reset(Nanos now);

  // The channel's chunks in flight went from none to some (busy) or back.
  void OnBusy(Nanos now, bool busy);
  // An ack of `bytes` whose frame was completely written at `written`.
  void OnAck(Nanos now, Nanos written, size_t bytes);
  // TCP_INFO's cumulative counters, read at `now`.
  void OnTcpInfo(Nanos now, uint64_t segs_out, uint64_t total_retrans, Nanos tcp_rtt = 0);

  // The verdict on a working, undrained channel. `oldest_written`: when the oldest chunk in
  // flight was completely written (0: none in flight, or none written yet).
  PathVerdict Judge(Nanos now, Nanos oldest_written, const SiblingView& siblings);

  // Draining: the verdict that drained the path, from `now`.
  void Drain(Nanos now, PathVerdict why);
  // Back in use without the probes' say (every other path went away).
  void Undrain(Nanos now);
  // The engine thread itself was starved of CPU: what it did not read says nothing of the
  // path, so the stall clock restarts.
  void Excuse(Nanos now);
  bool drained() const { return drained_; }
  PathVerdict drained_for() const { return drained_for_; }
  Nanos drained_since() const { return drained_since_; }
  // Whether a probe may be sent now (drained, none outstanding, the probe interval passed).
  bool ProbeDue(Nanos now) const;
  void OnProbeSent(Nanos now, uint64_t id);
  uint64_t probe_outstanding() const { return probe_id_; }
  // The probe's answer. `reference_rate`: the rate a healthy path should reach (the best
  // sibling's). True when the path is healthy again (and no longer drained).
  bool OnProbeAck(Nanos now, uint64_t id, double reference_rate);

  Nanos DeadTimeout() const;
  // The silence after which the channel is failed: DeadTimeout() when the peer was heard on
  // another of its paths within the last half of it (`peer_heard_ago`: since the latest such
  // word; negative: no other path), else the cap.
  Nanos SilenceLimit(Nanos peer_heard_ago) const;
  Nanos StallAfter() const;
  double rate() const { return rate_; }
  // The best rate seen while healthy (a slowly decaying peak), 0 = none.
  double healthy_rate() const { return healthy_rate_; }
  double loss() const;  // retransmit ratio over the loss window, -1 = not enough data
  // The lower of the ratios over the two halves of the loss window, -1 = not enough data.
  double half_loss() const;
  Nanos tcp_rtt_max() const;  // the transport's largest smoothed RTT over the loss window
  Nanos srtt() const { return srtt_; }
  Nanos ack_gap() const { return gap_; }
  Nanos peak() const { return peak_; }
  uint64_t samples() const { return rate_samples_; }
  std::string Describe() const;  // for logs and the hang dump

 private:
  struct TcpSample {
    Nanos at;
    uint64_t segs, retrans;
    Nanos rtt;
  };
  PathHealthOptions opt_;
  // Ack times.
  Nanos srtt_ = 0, rttvar_ = 0;
  Nanos gap_ = 0;
  Nanos peak_ = 0;  // recent peak of ack times and gaps
  Nanos last_ack_ = 0;
  // Throughput.
  bool busy_ = false;
  Nanos busy_since_ = 0;
  Nanos busy_acc_ = 0;      // busy time in the current rate window
  uint64_t acked_acc_ = 0;  // bytes acked in it
  double rate_ = 0;
  double healthy_rate_ = 0;
  uint64_t rate_samples_ = 0;
  int slow_run_ = 0;
  Nanos lossy_since_ = 0;  // 0 = not lossy now
  // Loss.
  std::deque<TcpSample> tcp_;
  // Drain and probes.
  bool drained_ = false;
  PathVerdict drained_for_ = PathVerdict::kHealthy;
  Nanos drained_since_ = 0;
  Nanos restored_at_ = 0;
  Nanos hold_ = 0;
  uint64_t probe_id_ = 0;  // outstanding, 0 = none
  Nanos probe_sent_ = 0;
  Nanos last_probe_ = 0;
  uint64_t probe_retrans_ = 0;  // TCP retransmits when the probe was sent
  int good_probes_ = 0;
  uint64_t last_retrans_ = 0;
};

}  // namespace fl::ccl::ftccl
