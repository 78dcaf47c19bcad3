#include "common/units.h"

#include <catch2/catch.hpp>

namespace fl {
namespace {

TEST_CASE("units: durations with and without units", "[unit]") {
  CHECK(*ParseDuration("250ms") == 250 * kNsPerMs);
  CHECK(*ParseDuration("1.5s") == 1500 * kNsPerMs);
  CHECK(*ParseDuration("2m") == 120 * kNsPerSec);
  CHECK(*ParseDuration("3") == 3 * kNsPerSec);
  CHECK(*ParseDuration("10us") == 10 * kNsPerUs);
  CHECK(*ParseDuration(" 7 ms ") == 7 * kNsPerMs);
  CHECK(*ParseDuration("1e3ms") == kNsPerSec);
}

TEST_CASE("units: bad durations say why", "[unit]") {
  auto neg = ParseDuration("-5s");
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.status().message().find("negative") != std::string::npos);
  auto unit = ParseDuration("5 fortnights");
  REQUIRE_FALSE(unit.ok());
  CHECK(unit.status().message().find("unknown duration unit 'fortnights'") != std::string::npos);
  CHECK_FALSE(ParseDuration("").ok());
  CHECK_FALSE(ParseDuration("ms").ok());
  CHECK_FALSE(ParseDuration("1.2.3s").ok());
}

TEST_CASE("units: RFC 3339 times", "[unit]") {
  CHECK(*ParseWallIso("1970-01-01T00:00:00Z") == 0);
  CHECK(*ParseWallIso("2026-12-06T18:49:58.146573917Z") == 1'796'582'998'146'573'917);
  CHECK(*ParseWallIso("2026-12-06t19:49:58.146573917+01:00") == 1'796'582'998'146'573'917);
  // Alertmanager's: an offset and nanoseconds.
  CHECK(*ParseWallIso("2018-08-03T09:52:26.739266876+02:00") ==
        1'533'282'746 * kNsPerSec + 739'266'876);
  CHECK(*ParseWallIso("2026-12-06T18:49:58.5Z") == 1'796'582'998'500'000'000);
  CHECK(*ParseWallIso("2026-12-06T18:49:58.1234567891Z") == 1'796'582'998'123'456'789);
  CHECK(*ParseWallIso("2024-02-29T00:00:00Z") == 1'709'164'800 * kNsPerSec);
  for (const char* bad : {"", "2023-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
                          "2026-12-06 18:49:58Z", "2026-12-06T18:49:58", "2026-12-06T24:00:00Z",
                          "2026-12-06T18:49:58.Z", "2026-12-06T18:49:58Z ", "2026-12-06T18:49:58+1",
                          "0001-01-01T00:00:00Z", "2263-01-01T00:00:00Z", "9999-12-31T23:59:59Z"}) {
    auto t = ParseWallIso(bad);
    INFO(bad);
    CHECK_FALSE(t.ok());
    if (!t.ok()) CHECK(t.status().message().find("not an RFC 3339 time") != std::string::npos);
  }
}

TEST_CASE("units: sizes and rates", "[unit]") {
  CHECK(*ParseBytes("64MiB") == 64ull << 20);
  CHECK(*ParseBytes("4k") == 4096);
  CHECK(*ParseBytes("1GB") == 1'000'000'000ull);
  CHECK(*ParseBytes("17") == 17);
  CHECK(*ParseBitRate("1gbit") == 1'000'000'000ull);
  CHECK(*ParseBitRate("500mbit") == 500'000'000ull);
  CHECK(*ParseBitRate("100Mbps") == 100'000'000ull);
  CHECK_FALSE(ParseBitRate("fast").ok());
  CHECK_FALSE(ParseBytes("-1k").ok());
}

TEST_CASE("units: formatting", "[unit]") {
  CHECK(FormatBytes(64ull << 20) == "64 MiB");
  CHECK(FormatBytes(17) == "17 B");
  CHECK(FormatBitRate(500'000'000) == "500 Mbit/s");
  CHECK(FormatDuration(1500 * kNsPerMs) == "1.5s");
  CHECK(FormatDuration(340 * kNsPerMs) == "340ms");
  CHECK(FormatDuration(12) == "12ns");
}

}  // namespace
}  // namespace fl
