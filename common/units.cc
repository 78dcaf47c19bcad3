#include "common/units.h"

#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

namespace fl {
namespace {

struct Split {
  double number;
  std::string unit;  // lower-cased, spaces removed
  std::string unit_raw;
};

StatusOr<Split> SplitNumber(std::string_view text, std::string_view what) {
  std::string t;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) t.push_back(c);
  if (t.empty()) return InvalidArgumentError("empty " + std::string(what));
  if (t[0] == '-')
    return InvalidArgumentError(std::string(what) + " must not be negative: '" + std::string(text) +
                                "'");
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.' ||
                          t[i] == 'e' || t[i] == 'E' || t[i] == '+')) {
    // 'e' only counts as an exponent when followed by a digit or sign
    if ((t[i] == 'e' || t[i] == 'E') &&
        !(i + 1 < t.size() && (std::isdigit(static_cast<unsigned char>(t[i + 1])) ||
                               t[i + 1] == '+' || t[i + 1] == '-')))
      break;
    ++i;
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + i, v);
  if (ec != std::errc() || ptr != t.data() + i || i == 0)
    return InvalidArgumentError("not a valid " + std::string(what) + ": '" + std::string(text) +
                                "'");
  if (!std::isfinite(v))
    return InvalidArgumentError("not a finite " + std::string(what) + ": '" + std::string(text) +
                                "'");
  Split s{v, {}, t.substr(i)};
  for (char c : s.unit_raw)
    s.unit.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return s;
}

// "%.4g <unit>" with v in the largest of `units` (each `step` times the one before it) that
// keeps v at least 1, or in the first.
template <size_t N>
std::string FormatInUnits(double v, double step, const char* const (&units)[N]) {
  size_t i = 0;
  while (v >= step && i + 1 < N) {
    v /= step;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g %s", v, units[i]);
  return buf;
}

}  // namespace

StatusOr<Nanos> ParseDuration(std::string_view text) {
  FL_ASSIGN_OR_RETURN(Split s, SplitNumber(text, "duration"));
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1e9}, {"s", 1e9},  {"sec", 1e9},  {"ms", 1e6},  {"us", 1e3},
      {"ns", 1}, {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}};
  for (auto& [u, mult] : kUnits) {
    if (s.unit == u) {
      double ns = s.number * mult;
      if (ns > 9.2e18)
        return InvalidArgumentError("duration too large: '" + std::string(text) + "'");
      return static_cast<Nanos>(std::llround(ns));
    }
  }
  return InvalidArgumentError("unknown duration unit '" + s.unit_raw + "' in '" +
                              std::string(text) + "' (use ns, us, ms, s, m or h)");
}

StatusOr<uint64_t> ParseBytes(std::string_view text) {
  FL_ASSIGN_OR_RETURN(Split s, SplitNumber(text, "size"));
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},           {"b", 1},       {"k", 1024},        {"kb", 1e3},
      {"kib", 1024},     {"m", 1048576}, {"mb", 1e6},        {"mib", 1048576},
      {"g", 1073741824}, {"gb", 1e9},    {"gib", 1073741824}};
  for (auto& [u, mult] : kUnits) {
    if (s.unit == u) {
      double b = s.number * mult;
      if (b > 1.8e19) return InvalidArgumentError("size too large: '" + std::string(text) + "'");
      return static_cast<uint64_t>(std::llround(b));
    }
  }
  return InvalidArgumentError("unknown size unit '" + s.unit_raw + "' in '" + std::string(text) +
                              "' (use B, KiB, MiB, GiB, KB, MB, GB, k, M, G)");
}

StatusOr<uint64_t> ParseBitRate(std::string_view text) {
  FL_ASSIGN_OR_RETURN(Split s, SplitNumber(text, "rate"));
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},       {"bit", 1},    {"bps", 1},    {"kbit", 1e3}, {"kbps", 1e3},
      {"mbit", 1e6}, {"mbps", 1e6}, {"gbit", 1e9}, {"gbps", 1e9}, {"tbit", 1e12}};
  for (auto& [u, mult] : kUnits) {
    if (s.unit == u) return static_cast<uint64_t>(std::llround(s.number * mult));
  }
  return InvalidArgumentError("unknown rate unit '" + s.unit_raw + "' in '" + std::string(text) +
                              "' (use bit, kbit, mbit, gbit)");
}

std::string FormatDuration(Nanos ns) {
  char buf[32];
  double v = static_cast<double>(ns);
  if (ns >= kNsPerSec)
    std::snprintf(buf, sizeof buf, "%.3gs", v / 1e9);
  else if (ns >= kNsPerMs)
    std::snprintf(buf, sizeof buf, "%.3gms", v / 1e6);
  else if (ns >= kNsPerUs)
    std::snprintf(buf, sizeof buf, "%.3gus", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lldns", static_cast<long long>(ns));
  return buf;
}

std::string FormatBytes(uint64_t bytes) {
  static const char* const kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  return FormatInUnits(static_cast<double>(bytes), 1024, kNames);
}

std::string FormatBitRate(uint64_t bps) {
  static const char* const kNames[] = {"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"};
  return FormatInUnits(static_cast<double>(bps), 1000, kNames);
}

std::string FormatFixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

namespace {

// Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (the method of Howard
// Hinnant's days_from_civil: 400-year eras of 146,097 days, March-based years).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

StatusOr<Nanos> ParseWallIso(std::string_view text) {
  auto bad = [&](const char* why) {
    return InvalidArgumentError("'" + std::string(text.substr(0, 64)) +
                                "' is not an RFC 3339 time (" + why + ")");
  };
  size_t i = 0;
  auto digits = [&](size_t n, int64_t* out) {
    if (i + n > text.size()) return false;
    int64_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      const char c = text[i + k];
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    i += n;
    *out = v;
    return true;
  };
  auto expect = [&](char a, char b = 0) {
    if (i < text.size() && (text[i] == a || (b && text[i] == b))) {
      ++i;
      return true;
    }
    return false;
  };
  int64_t y, mo, d, h, mi, sec;
  if (!digits(4, &y) || !expect('-') || !digits(2, &mo) || !expect('-') || !digits(2, &d))
    return bad("expected YYYY-MM-DD");
  if (!expect('T', 't') || !digits(2, &h) || !expect(':') || !digits(2, &mi) || !expect(':') ||
      !digits(2, &sec))
    return bad("expected THH:MM:SS after the date");
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12) return bad("month out of range");
  const int max_day = kDays[mo - 1] + (mo == 2 && IsLeap(y) ? 1 : 0);
  if (d < 1 || d > max_day) return bad("day out of range");
  if (h > 23 || mi > 59 || sec > 60) return bad("time of day out of range");
  if (sec == 60) sec = 59;  // a leap second: the last second of its minute
  int64_t frac = 0;
  if (expect('.')) {
    size_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (n < 9) frac = frac * 10 + (text[i] - '0');
      ++n;
      ++i;
    }
    if (n == 0) return bad("no digits after '.'");
    for (size_t k = n; k < 9; ++k) frac *= 10;
  }
  int64_t offset_min = 0;
  if (expect('Z', 'z')) {
  } else if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    const int sign = text[i] == '-' ? -1 : 1;
    ++i;
    int64_t oh, om;
    if (!digits(2, &oh) || !expect(':') || !digits(2, &om) || oh > 23 || om > 59)
      return bad("expected an offset +HH:MM");
    offset_min = sign * (oh * 60 + om);
  } else {
    return bad("expected 'Z' or an offset +HH:MM");
  }
  if (i != text.size()) return bad("text after the time");
  const int64_t secs = DaysFromCivil(y, static_cast<int>(mo), static_cast<int>(d)) * 86400 +
                       h * 3600 + mi * 60 + sec - offset_min * 60;
  // INT64_MAX ns is 2262-04-11T23:47:16.854775807Z.
  constexpr int64_t kMaxSecs = INT64_MAX / kNsPerSec - 1;
  if (secs < 0 || secs > kMaxSecs) return bad("before 1970 or after 2262");
  return secs * kNsPerSec + frac;
}

}  // namespace fl
