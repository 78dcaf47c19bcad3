#include "common/clock.h"

#include <catch2/catch.hpp>
#include <thread>

namespace fl {
namespace {

TEST_CASE("clock: fake clock drives deadlines without sleeping", "[unit]") {
  FakeClock clock;
  Deadline d = Deadline::After(50 * kNsPerMs, clock);
  CHECK_FALSE(d.Expired());
  CHECK(d.Remaining() == 50 * kNsPerMs);
  CHECK(d.RemainingMsForPoll() == 50);
  clock.Advance(49 * kNsPerMs + 1);
  CHECK_FALSE(d.Expired());
  CHECK(d.RemainingMsForPoll() == 1);  // rounded up, never 0 while time is left
  clock.Advance(kNsPerMs);
  CHECK(d.Expired());
  CHECK(d.Remaining() == 0);
  CHECK(clock.WallNs() - clock.MonoNs() == 1'700'000'000 * kNsPerSec);
}

TEST_CASE("clock: WaitUntil returns as soon as the condition holds, false at the deadline",
          "[unit]") {
  std::atomic<bool> flag{false};
  std::thread t([&] { flag = true; });
  CHECK(WaitUntil([&] { return flag.load(); }, Deadline::After(5 * kNsPerSec)));
  t.join();
  Nanos start = MonoNowNs();
  CHECK_FALSE(WaitUntil([] { return false; }, Deadline::After(20 * kNsPerMs)));
  CHECK(MonoNowNs() - start >= 20 * kNsPerMs);
}

TEST_CASE("clock: ISO formatting of wall time", "[unit]") {
  CHECK(FormatWallIso(0) == "1970-01-01T00:00:00.000Z");
  CHECK(FormatWallIso(1'764'464'523'456'000'000) == "2025-11-30T01:02:03.456Z");
  CHECK(MonoNowNs() > 0);
  CHECK(WallNowNs() > 1'700'000'000 * kNsPerSec);
}

}  // namespace
}  // namespace fl
