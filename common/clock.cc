#include "common/clock.h"

#include <time.h>

#include <climits>
#include <cstdio>
#include <thread>

namespace fl {
namespace {

Nanos ReadClock(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<Nanos>(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}

class RealClock : public Clock {
 public:
  Nanos MonoNs() const override { return MonoNowNs(); }
  Nanos WallNs() const override { return WallNowNs(); }
};

}  // namespace

Nanos MonoNowNs() { return ReadClock(CLOCK_MONOTONIC); }
Nanos WallNowNs() { return ReadClock(CLOCK_REALTIME); }

const Clock& SystemClock() {
  static const RealClock* clock = new RealClock();
  return *clock;
}

int Deadline::RemainingMsForPoll() const {
  Nanos r = Remaining();
  Nanos ms = (r + kNsPerMs - 1) / kNsPerMs;
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

bool WaitUntil(const std::function<bool()>& cond, Deadline deadline, Nanos poll_ns) {
  while (true) {
    if (cond()) return true;
    if (deadline.Expired()) return cond();
    Nanos sleep = std::min(poll_ns, std::max<Nanos>(deadline.Remaining(), 1));
    std::this_thread::sleep_for(std::chrono::nanoseconds(sleep));
  }
}

std::string FormatWallIso(Nanos wall_ns) {
  time_t secs = static_cast<time_t>(wall_ns / kNsPerSec);
  int ms = static_cast<int>((wall_ns % kNsPerSec) / kNsPerMs);
  tm t;
  gmtime_r(&secs, &t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900,
                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ms);
  return buf;
}

}  // namespace fl
