// ftccl's path health (path_health.h) on its own, with a fake clock: a healthy path stays
// healthy; a stalled, slow or lossy one gets its verdict; the dead timeout adapts within its
// floor and cap; a drained path is restored only by enough good probes after its hold, and
// held out longer when it is drained again soon after.
#include "ccl_under_test/ftccl/path_health.h"

#include <catch2/catch.hpp>

namespace fl::ccl::ftccl {
namespace {

constexpr Nanos kMs = kNsPerMs;

// A busy path that acks a chunk of `bytes` every `every` for `span`, from `t` on; each ack
// comes `rtt` after its frame was written.
Nanos Feed(PathHealth& h, Nanos t, Nanos span, Nanos every, Nanos rtt, size_t bytes,
           const SiblingView& sib = {}, PathVerdict* worst = nullptr) {
  h.OnBusy(t, true);
  for (Nanos end = t + span; t < end; t += every) {
    h.OnAck(t, t - rtt, bytes);
    PathVerdict v = h.Judge(t, t - rtt / 2, sib);
    if (worst && v != PathVerdict::kHealthy) *worst = v;
  }
  return t;
}

SiblingView Sibling(double rate, double loss = 0) {
  SiblingView s;
  s.healthy = 1;
  s.best_rate = rate;
  s.best_loss = loss;
  return s;
}

TEST_CASE("path health: a steady path is healthy and its rate is measured", "[unit]") {
  PathHealth h;
  PathVerdict worst = PathVerdict::kHealthy;
  // 512 KiB every 4 ms: 131 MB/s, as a 1 Gbit/s path.
  Feed(h, 1000 * kMs, 2000 * kMs, 4 * kMs, 10 * kMs, 512 * 1024, Sibling(131e6), &worst);
  CHECK(worst == PathVerdict::kHealthy);
  CHECK(h.rate() == Approx(131e6).epsilon(0.05));
  CHECK(h.srtt() == 10 * kMs);
  CHECK(h.samples() > 50);
}

TEST_CASE("path health: acks that stop with chunks in flight are a stall", "[unit]") {
  PathHealth h;
  Nanos t = Feed(h, 1000 * kMs, 500 * kMs, 4 * kMs, 6 * kMs, 512 * 1024, Sibling(131e6));
  const Nanos stall = h.StallAfter();
  // 3 x srtt (18 ms) is below the floor.
  CHECK(stall == PathHealthOptions{}.stall_floor);
  const Nanos written = t;  // a chunk written now whose ack never comes
  CHECK(h.Judge(t + stall - kMs, written, Sibling(131e6)) == PathVerdict::kHealthy);
  CHECK(h.Judge(t + stall + kMs, written, Sibling(131e6)) == PathVerdict::kStalled);
  // Nothing in flight: silence is not a stall.
  CHECK(h.Judge(t + 10 * stall, 0, Sibling(131e6)) == PathVerdict::kHealthy);
  // The peer silent on its other paths too (a peer starved of CPU, not a stalled path), or
  // heard there only before half the stall time: not a stall either.
  SiblingView quiet = Sibling(131e6);
  quiet.peer_heard_ago = -1;
  CHECK(h.Judge(t + stall + kMs, written, quiet) == PathVerdict::kHealthy);
  quiet.peer_heard_ago = stall / 2 + kMs;
  CHECK(h.Judge(t + stall + kMs, written, quiet) == PathVerdict::kHealthy);
  quiet.peer_heard_ago = stall / 2;
  CHECK(h.Judge(t + stall + kMs, written, quiet) == PathVerdict::kStalled);
}

TEST_CASE("path health: the engine thread's own starvation excuses a stall", "[unit]") {
  PathHealth h;
  Nanos t = Feed(h, 1000 * kMs, 500 * kMs, 4 * kMs, 6 * kMs, 512 * 1024);
  const Nanos late = t + h.StallAfter() + 10 * kMs;
  h.Excuse(late);
  CHECK(h.Judge(late + kMs, t, {}) == PathVerdict::kHealthy);
}

TEST_CASE("path health: a path at a tenth of its sibling's rate is slow, one at 0.7 is not",
          "[unit]") {
  SECTION("a tenth") {
    PathHealth h;
    PathVerdict worst = PathVerdict::kHealthy;
    Feed(h, 1000 * kMs, 300 * kMs, 40 * kMs, 40 * kMs, 512 * 1024, Sibling(131e6), &worst);
    CHECK(worst == PathVerdict::kSlow);
  }
  SECTION("0.7") {
    PathHealth h;
    PathVerdict worst = PathVerdict::kHealthy;
    Feed(h, 1000 * kMs, 2000 * kMs, 6 * kMs, 8 * kMs, 512 * 1024, Sibling(131e6), &worst);
    CHECK(worst == PathVerdict::kHealthy);
  }
  SECTION("no sibling measured: never slow") {
    PathHealth h;
    PathVerdict worst = PathVerdict::kHealthy;
    Feed(h, 1000 * kMs, 300 * kMs, 40 * kMs, 40 * kMs, 512 * 1024, SiblingView{}, &worst);
    CHECK(worst == PathVerdict::kHealthy);
  }
}

TEST_CASE("path health: retransmits over the loss window make a path lossy, against its siblings",
          "[unit]") {
  PathHealth h;
  Nanos t = Feed(h, 1000 * kMs, 100 * kMs, 4 * kMs, 6 * kMs, 512 * 1024, Sibling(131e6));
  h.OnBusy(t, false);  // idle from here: its rate stays as measured
  uint64_t segs = 0, re = 0;
  // 8000 segments/s, none retransmitted.
  for (int i = 0; i < 20; ++i, t += 10 * kMs) {
    h.OnTcpInfo(t, segs += 80, re);
    CHECK(h.Judge(t, 0, Sibling(131e6, 0)) == PathVerdict::kHealthy);
  }
  CHECK(h.loss() == 0);
  // 5% of them now: over 2% of the loss window within 40% of it, then held for loss_hold.
  const PathHealthOptions o;
  PathVerdict v = PathVerdict::kHealthy;
  Nanos first = 0;
  for (int i = 0; i < 100 && v == PathVerdict::kHealthy; ++i, t += 10 * kMs) {
    if (first == 0) first = t;
    h.OnTcpInfo(t, segs += 80, re += 4);
    v = h.Judge(t, 0, Sibling(131e6, 0));
  }
  CHECK(v == PathVerdict::kLossy);
  CHECK(t - first <= o.loss_window);
  CHECK(h.half_loss() >= o.loss_half_share * o.loss_ratio);
  // Siblings that lose as much: the path is no worse than the rest.
  PathHealth same;
  t = 1000 * kMs;
  segs = re = 0;
  for (int i = 0; i < 40; ++i, t += 10 * kMs) {
    same.OnTcpInfo(t, segs += 80, re += 2);
    CHECK(same.Judge(t, 0, Sibling(131e6, 0.02)) == PathVerdict::kHealthy);
  }
  // One burst of retransmits (a queue tail-dropping under incast, a starved peer's spurious
  // retransmits): 5% of a whole window's segments within 10 ms. The window's ratio is over
  // 2% for a whole window, but the burst lies in one half of it: not lossy.
  PathHealth burst;
  t = 1000 * kMs;
  segs = re = 0;
  PathVerdict worst = PathVerdict::kHealthy;
  bool window_over = false;
  for (int i = 0; i < 150; ++i, t += 10 * kMs) {
    burst.OnTcpInfo(t, segs += 80, re += (i == 60 ? 160 : 0));
    window_over |= burst.loss() >= o.loss_ratio;
    if (PathVerdict v = burst.Judge(t, 0, Sibling(131e6, 0)); v != PathVerdict::kHealthy) worst = v;
  }
  CHECK(window_over);  // the rule without halves would have drained it
  CHECK(worst == PathVerdict::kHealthy);
  // Too few segments to say.
  PathHealth few;
  few.OnTcpInfo(t, 0, 0);
  few.OnTcpInfo(t + 10 * kMs, 50, 5);
  CHECK(few.loss() < 0);
}

TEST_CASE("path health: the dead timeout follows the ack times between its floor and cap",
          "[unit]") {
  PathHealthOptions o;
  PathHealth fresh(o);
  CHECK(fresh.DeadTimeout() == o.dead_cap);  // nothing measured yet
  PathHealth fast(o);
  Feed(fast, 1000 * kMs, 200 * kMs, 2 * kMs, 2 * kMs, 64 * 1024);
  CHECK(fast.DeadTimeout() == std::max(o.dead_floor, 3 * o.keepalive_interval));
  PathHealth mid(o);
  Feed(mid, 1000 * kMs, 400 * kMs, 10 * kMs, 30 * kMs, 512 * 1024);
  CHECK(mid.DeadTimeout() > o.dead_floor);
  CHECK(mid.DeadTimeout() < o.dead_cap);
  PathHealth slow(o);
  Feed(slow, 1000 * kMs, 2000 * kMs, 100 * kMs, 200 * kMs, 512 * 1024);
  CHECK(slow.DeadTimeout() == o.dead_cap);
  o.enabled = false;
  PathHealth off(o);
  Feed(off, 1000 * kMs, 200 * kMs, 2 * kMs, 2 * kMs, 64 * 1024);
  CHECK(off.DeadTimeout() == o.dead_cap);
  CHECK(off.SilenceLimit(1 * kMs) == o.dead_cap);
}

// A peer silent on every path is more likely starved of CPU than cut off on each: the short
// timeout applies only while it is heard on another path.
TEST_CASE(
    "path health: the short dead timeout applies only while the peer speaks on another "
    "path",
    "[unit]") {
  PathHealthOptions o;
  PathHealth fast(o);
  Feed(fast, 1000 * kMs, 200 * kMs, 2 * kMs, 2 * kMs, 64 * 1024);
  const Nanos dead = fast.DeadTimeout();
  REQUIRE(dead < o.dead_cap);
  CHECK(fast.SilenceLimit(0) == dead);                   // heard elsewhere just now
  CHECK(fast.SilenceLimit(dead / 2) == dead);            // within half the timeout
  CHECK(fast.SilenceLimit(dead / 2 + 1) == o.dead_cap);  // silent there too
  CHECK(fast.SilenceLimit(-1) == o.dead_cap);            // no other path to the peer
}

TEST_CASE("path health: a drained path comes back after its hold and enough good probes",
          "[unit]") {
  PathHealthOptions o;
  PathHealth h(o);
  Nanos t = Feed(h, 1000 * kMs, 200 * kMs, 4 * kMs, 6 * kMs, 512 * 1024);
  h.Drain(t, PathVerdict::kSlow);
  CHECK(h.drained());
  CHECK(h.drained_for() == PathVerdict::kSlow);
  CHECK(h.Judge(t + 10 * kMs, t, Sibling(131e6)) == PathVerdict::kHealthy);  // not judged
  const double ref = 131e6;
  const Nanos good_rtt = static_cast<Nanos>(static_cast<double>(o.probe_bytes) / ref * 1e9 * 1.5);
  const Nanos slow_rtt = static_cast<Nanos>(static_cast<double>(o.probe_bytes) / ref * 1e9 * 10);
  uint64_t id = 1;
  auto probe = [&](Nanos rtt, uint64_t retrans) {
    t += o.probe_interval;
    REQUIRE(h.ProbeDue(t));
    h.OnProbeSent(t, id);
    CHECK_FALSE(h.ProbeDue(t + o.probe_interval));  // one outstanding at a time
    t += rtt;
    h.OnTcpInfo(t, 1000 * id, retrans);
    return h.OnProbeAck(t, id++, ref);
  };
  // Slow probes never restore it.
  for (int i = 0; i < 10; ++i) CHECK_FALSE(probe(slow_rtt, 0));
  CHECK(h.drained());
  // A stray or repeated answer changes nothing.
  CHECK_FALSE(h.OnProbeAck(t, 999, ref));
  // Good probes, but one with a retransmit starts the count again.
  CHECK_FALSE(probe(good_rtt, 0));
  CHECK_FALSE(probe(good_rtt, 1));
  CHECK_FALSE(probe(good_rtt, 1));
  CHECK_FALSE(probe(good_rtt, 1));
  CHECK(probe(good_rtt, 1));
  CHECK_FALSE(h.drained());
  // Drained again at once: held out at least twice as long this time.
  const Nanos again = t + 10 * kMs;
  h.Drain(again, PathVerdict::kStalled);
  t = again;
  int probes = 0;
  while (!probe(good_rtt, 1)) ++probes;
  CHECK(t - again >= 2 * o.hold_min);
  CHECK(probes >= 3);
}

TEST_CASE("path health: Undrain puts a drained path back without probes", "[unit]") {
  PathHealth h;
  h.Drain(1000 * kMs, PathVerdict::kLossy);
  h.Undrain(1001 * kMs);
  CHECK_FALSE(h.drained());
  CHECK_FALSE(h.ProbeDue(2000 * kMs));
  CHECK(std::string(PathVerdictCause(PathVerdict::kLossy)) == "path_lossy");
}

}  // namespace
}  // namespace fl::ccl::ftccl
