// Clocks and deadlines.
//
// Monotonic time (MonoNs) orders and measures events inside one process; wall time (WallNs,
// Unix epoch nanoseconds) is what results are stored in, because runs are compared across
// machines. Code that must be testable without sleeping takes a Clock&; tests pass a FakeClock.
//
// Thread-safety: SystemClock is stateless; FakeClock is safe to read and advance from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace fl {

using Nanos = int64_t;
inline constexpr Nanos kNsPerUs = 1000;
inline constexpr Nanos kNsPerMs = 1000 * 1000;
inline constexpr Nanos kNsPerSec = 1000 * 1000 * 1000;

Nanos MonoNowNs();
Nanos WallNowNs();

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Nanos MonoNs() const = 0;
  virtual Nanos WallNs() const = 0;
};

// The real clocks. Never destroyed.
const Clock& SystemClock();

// A clock that moves only when told to. Mono and wall time advance together.
class FakeClock : public Clock {
 public:
  explicit FakeClock(Nanos wall_start_ns = 1'700'000'000 * kNsPerSec) : wall_base_(wall_start_ns) {}
  Nanos MonoNs() const override { return mono_.load(); }
  Nanos WallNs() const override { return wall_base_ + mono_.load(); }
  void Advance(Nanos ns) { mono_.fetch_add(ns); }

 private:
  Nanos wall_base_;
  std::atomic<Nanos> mono_{0};
};

// A point in monotonic time after which a wait gives up.
class Deadline {
 public:
  static Deadline After(Nanos timeout, const Clock& clock = SystemClock()) {
    return Deadline(clock.MonoNs() + timeout, &clock);
  }
  static Deadline Never() { return Deadline(INT64_MAX, &SystemClock()); }
  bool Expired() const { return clock_->MonoNs() >= at_; }
  // Nanoseconds left, never negative.
  Nanos Remaining() const {
    Nanos r = at_ - clock_->MonoNs();
    return r > 0 ? r : 0;
  }
  // Milliseconds left rounded up, clamped to int for poll(2)-style APIs; -1 never happens.
  int RemainingMsForPoll() const;
  Nanos at() const { return at_; }

 private:
  Deadline(Nanos at, const Clock* clock) : at_(at), clock_(clock) {}
  Nanos at_;
  const Clock* clock_;
};

// Polls cond every poll_ns until it returns true or the deadline passes. Returns cond's last
// value. For waiting on conditions outside the process (a link state, a file) with a bound.
bool WaitUntil(const std::function<bool()>& cond, Deadline deadline, Nanos poll_ns = kNsPerMs);

// "2026-11-30T01:02:03.456Z"
std::string FormatWallIso(Nanos wall_ns);

}  // namespace fl
