// Parsing and printing of the quantities that appear in scenarios, topologies and flags:
// durations ("250ms", "1.5s", "2m"), byte sizes ("64MiB", "4k", "1G"), and bit rates
// ("1gbit", "500mbit", "100Mbps"). A bare number is seconds / bytes / bits per second.
// Negative values are rejected: no quantity in faultline is negative.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace fl {

StatusOr<Nanos> ParseDuration(std::string_view text);
StatusOr<uint64_t> ParseBytes(std::string_view text);
StatusOr<uint64_t> ParseBitRate(std::string_view text);
// An RFC 3339 time ("2026-12-06T18:49:58.146Z", "2026-12-06T19:49:58.1+01:00"; 'T' or 't',
// 'Z' or an offset, up to 9 fraction digits) as Unix epoch nanoseconds. Years 1970 to 2262
// only (what Nanos holds); InvalidArgument naming the text otherwise.
StatusOr<Nanos> ParseWallIso(std::string_view text);

// "1.25s", "340ms", "12.0us"
std::string FormatDuration(Nanos ns);
// "64 MiB", "1.5 KiB", "17 B"
std::string FormatBytes(uint64_t bytes);
// "1 Gbit/s", "500 Mbit/s"
std::string FormatBitRate(uint64_t bits_per_second);
// v with `digits` digits after the point: FormatFixed(0.98187, 4) is "0.9819".
std::string FormatFixed(double v, int digits);

}  // namespace fl
