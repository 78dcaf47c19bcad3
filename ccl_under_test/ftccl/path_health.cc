#include "ccl_under_test/ftccl/path_health.h"

#include <algorithm>
#include <cstdio>

#include "common/enum_names.h"

namespace fl::ccl::ftccl {

constexpr NamedValue<PathVerdict> kPathVerdictCauses[] = {{PathVerdict::kLossy, "path_lossy"},
                                                          {PathVerdict::kSlow, "path_slow"},
                                                          {PathVerdict::kStalled, "path_stalled"},
                                                          {PathVerdict::kHealthy, "healthy"}};

const char* PathVerdictCause(PathVerdict v) {
  return NameIn(kPathVerdictCauses, v, "healthy").data();
}

void PathHealth::Reset(Nanos now) {
  const Nanos hold = hold_;
  const Nanos restored = restored_at_;
  *this = PathHealth(opt_);
  // A path that keeps failing and coming back is held out longer each time.
  hold_ = hold;
  restored_at_ = restored;
  busy_since_ = now;
}

void PathHealth::OnBusy(Nanos now, bool busy) {
  if (busy == busy_) return;
  if (busy_) busy_acc_ += now - busy_since_;
  busy_ = busy;
  busy_since_ = now;
}

void PathHealth::OnAck(Nanos now, Nanos written, size_t bytes) {
  auto peak = [&](Nanos v) {
    peak_ = v >= peak_ ? v : peak_ - (peak_ - v) / std::max(1, opt_.peak_acks);
  };
  if (written > 0 && now >= written) {
    const Nanos sample = now - written;
    peak(sample);
    if (srtt_ == 0) {
      srtt_ = sample;
      rttvar_ = sample / 2;
    } else {
      const Nanos err = sample > srtt_ ? sample - srtt_ : srtt_ - sample;
      rttvar_ = (3 * rttvar_ + err) / 4;
      srtt_ = (7 * srtt_ + sample) / 8;
    }
  }
  if (busy_ && last_ack_ >= busy_since_ && last_ack_ > 0) {
    const Nanos g = now - last_ack_;
    gap_ = gap_ == 0 ? g : (7 * gap_ + g) / 8;
    if (g > peak_) peak(g);
  }
  last_ack_ = now;
  acked_acc_ += bytes;
}

void PathHealth::OnTcpInfo(Nanos now, uint64_t segs_out, uint64_t total_retrans, Nanos tcp_rtt) {
  tcp_.push_back({now, segs_out, total_retrans, tcp_rtt});
  last_retrans_ = total_retrans;
  // Keep one sample older than the window, so the window is always covered.
  while (tcp_.size() > 2 && now - tcp_[1].at >= opt_.loss_window) tcp_.pop_front();
}

namespace {

// Retransmitted / sent segments from a to b, -1 with fewer than min_segments sent.
template <typename Sample>
double RetransRatio(const Sample& a, const Sample& b, uint64_t min_segments) {
  if (b.segs < a.segs || b.segs - a.segs < std::max<uint64_t>(1, min_segments)) return -1;
  const uint64_t re = b.retrans >= a.retrans ? b.retrans - a.retrans : 0;
  return static_cast<double>(re) / static_cast<double>(b.segs - a.segs);
}

}  // namespace

double PathHealth::loss() const {
  if (tcp_.size() < 2) return -1;
  return RetransRatio(tcp_.front(), tcp_.back(), opt_.loss_min_segments);
}

double PathHealth::half_loss() const {
  if (tcp_.size() < 3) return -1;
  // The middle: the first sample at or after half a window before the newest.
  const Nanos mid_at = tcp_.back().at - opt_.loss_window / 2;
  size_t mid = 1;
  while (mid + 1 < tcp_.size() && tcp_[mid].at < mid_at) ++mid;
  const double older = RetransRatio(tcp_.front(), tcp_[mid], opt_.loss_min_segments / 2);
  const double newer = RetransRatio(tcp_[mid], tcp_.back(), opt_.loss_min_segments / 2);
  if (older < 0 || newer < 0) return -1;
  return std::min(older, newer);
}

Nanos PathHealth::tcp_rtt_max() const {
  Nanos m = 0;
  for (const TcpSample& s : tcp_) m = std::max(m, s.rtt);
  return m;
}

Nanos PathHealth::DeadTimeout() const {
  if (!opt_.enabled) return opt_.dead_cap;
  const Nanos floor = std::max(opt_.dead_floor, 3 * opt_.keepalive_interval);
  const Nanos cap = std::max(opt_.dead_cap, floor);
  if (srtt_ == 0) return cap;
  const auto t = static_cast<Nanos>(opt_.dead_rtts * static_cast<double>(srtt_ + 4 * rttvar_));
  return std::clamp(t, floor, cap);
}

Nanos PathHealth::SilenceLimit(Nanos peer_heard_ago) const {
  const Nanos dead = DeadTimeout();
  if (peer_heard_ago >= 0 && peer_heard_ago <= dead / 2) return dead;
  return std::max(opt_.dead_cap, dead);
}

Nanos PathHealth::StallAfter() const {
  if (srtt_ == 0) return opt_.stall_cap;
  const auto by_rtt = static_cast<Nanos>(opt_.stall_rtts * static_cast<double>(srtt_));
  const auto by_gap = static_cast<Nanos>(opt_.stall_gaps * static_cast<double>(gap_));
  const auto by_peak = static_cast<Nanos>(opt_.stall_peaks * static_cast<double>(peak_));
  return std::clamp(std::max({by_rtt, by_gap, by_peak}), opt_.stall_floor,
                    std::max(opt_.stall_cap, opt_.stall_floor));
}

PathVerdict PathHealth::Judge(Nanos now, Nanos oldest_written, const SiblingView& siblings) {
  // Throughput: a sample per rate_window of busy time (a stalled path's are 0).
  bool sampled = false;
  if (busy_) {
    busy_acc_ += now - busy_since_;
    busy_since_ = now;
  }
  if (busy_acc_ >= opt_.rate_window) {
    const double s = static_cast<double>(acked_acc_) * 1e9 / static_cast<double>(busy_acc_);
    rate_ = rate_samples_ == 0 ? s : 0.75 * rate_ + 0.25 * s;
    ++rate_samples_;
    busy_acc_ = 0;
    acked_acc_ = 0;
    sampled = true;
  }
  if (!opt_.enabled || drained_) return PathVerdict::kHealthy;
  // Stalled: chunks in flight and the acks stopped, while the peer speaks on another path.
  if (oldest_written > 0 && siblings.peer_heard_ago >= 0 &&
      siblings.peer_heard_ago <= StallAfter() / 2) {
    const Nanos since = std::max(last_ack_, oldest_written);
    if (now > since && now - since > StallAfter()) return PathVerdict::kStalled;
  }
  if (siblings.healthy == 0) return PathVerdict::kHealthy;
  // Lossy.
  const double l = loss();
  if (l >= opt_.loss_ratio && half_loss() >= opt_.loss_half_share * opt_.loss_ratio &&
      (siblings.best_loss < 0 || l >= opt_.loss_vs_siblings * siblings.best_loss)) {
    if (lossy_since_ == 0) lossy_since_ = now;
    if (now - lossy_since_ >= opt_.loss_hold) return PathVerdict::kLossy;
  } else {
    lossy_since_ = 0;
  }
  // Slow, against the best sibling.
  if (sampled) {
    const bool low = siblings.best_rate > 0 && rate_samples_ >= 2 &&
                     rate_ < opt_.slow_ratio * siblings.best_rate;
    slow_run_ = low ? slow_run_ + 1 : 0;
    if (!low) healthy_rate_ = std::max(rate_, 0.995 * healthy_rate_);
  }
  if (slow_run_ >= opt_.slow_samples) return PathVerdict::kSlow;
  return PathVerdict::kHealthy;
}

void PathHealth::Drain(Nanos now, PathVerdict why) {
  drained_ = true;
  drained_for_ = why;
  drained_since_ = now;
  // Drained again soon after it came back: hold it out twice as long.
  const bool soon = restored_at_ > 0 && now - restored_at_ < 4 * std::max(hold_, opt_.hold_min);
  hold_ = soon ? std::min(2 * std::max(hold_, opt_.hold_min), opt_.hold_max) : opt_.hold_min;
  probe_id_ = 0;
  good_probes_ = 0;
  slow_run_ = 0;
  lossy_since_ = 0;
  last_probe_ = 0;
}

void PathHealth::Undrain(Nanos now) {
  if (!drained_) return;
  drained_ = false;
  drained_for_ = PathVerdict::kHealthy;
  restored_at_ = now;
  probe_id_ = 0;
  good_probes_ = 0;
}

void PathHealth::Excuse(Nanos now) { last_ack_ = std::max(last_ack_, now); }

bool PathHealth::ProbeDue(Nanos now) const {
  return drained_ && probe_id_ == 0 &&
         (last_probe_ == 0 || now - last_probe_ >= opt_.probe_interval);
}

void PathHealth::OnProbeSent(Nanos now, uint64_t id) {
  probe_id_ = id;
  probe_sent_ = now;
  last_probe_ = now;
  probe_retrans_ = last_retrans_;
}

bool PathHealth::OnProbeAck(Nanos now, uint64_t id, double reference_rate) {
  if (!drained_ || id == 0 || id != probe_id_) return false;
  probe_id_ = 0;
  const Nanos rtt = std::max<Nanos>(1, now - probe_sent_);
  const double r = static_cast<double>(opt_.probe_bytes) * 1e9 / static_cast<double>(rtt);
  const double ref = reference_rate > 0 ? reference_rate : healthy_rate_;
  const bool fast = ref <= 0 || r >= opt_.restore_ratio * ref;
  const bool clean = last_retrans_ == probe_retrans_;
  good_probes_ = fast && clean ? good_probes_ + 1 : 0;
  if (good_probes_ < opt_.probes_to_restore || now - drained_since_ < hold_) return false;
  drained_ = false;
  drained_for_ = PathVerdict::kHealthy;
  restored_at_ = now;
  good_probes_ = 0;
  // Measure afresh: what the path did while drained says nothing of its rate.
  rate_samples_ = 0;
  rate_ = 0;
  busy_acc_ = 0;
  acked_acc_ = 0;
  tcp_.clear();
  return true;
}

std::string PathHealth::Describe() const {
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "srtt %.1f ms, ack gap %.1f ms, peak %.1f ms, %.0f MB/s, loss %.2f%%, tcp rtt max "
                "%.1f ms%s%s",
                static_cast<double>(srtt_) / 1e6, static_cast<double>(gap_) / 1e6,
                static_cast<double>(peak_) / 1e6, rate_ / 1e6, loss() < 0 ? 0.0 : 100 * loss(),
                static_cast<double>(tcp_rtt_max()) / 1e6, drained_ ? ", drained: " : "",
                drained_ ? PathVerdictCause(drained_for_) : "");
  return buf;
}

}  // namespace fl::ccl::ftccl
