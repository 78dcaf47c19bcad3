#include "common/units.h"

#include <cctype>
#include <charconv>
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
  static const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int i = 0;
  while (v >= 1024 && i < 4) {
    v /= 1024;
    ++i;
  }
  char buf[32];
  if (i == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.4g %s", v, kNames[i]);
  return buf;
}

std::string FormatBitRate(uint64_t bps) {
  static const char* kNames[] = {"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"};
  double v = static_cast<double>(bps);
  int i = 0;
  while (v >= 1000 && i < 4) {
    v /= 1000;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g %s", v, kNames[i]);
  return buf;
}

}  // namespace fl
