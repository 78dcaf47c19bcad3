// ParseProgressLine (progress.h): faultline's progress line protocol.
#include <cstdint>
#include <limits>
#include <string>

#include "workloads/progress/progress.h"
#include "workloads/progress/text.h"

namespace fl::workloads::progress {
namespace {

using internal::Clip;
using internal::ParseU64;
using internal::Tokens;
using internal::Trim;

Status Bad(std::string_view what, std::string_view token) {
  return InvalidArgumentError("progress line: " + std::string(what) + " in '" + Clip(token, 64) +
                              "'");
}

}  // namespace

StatusOr<Progress> ParseProgressLine(std::string_view line) {
  line = Trim(line);
  if (line.empty()) return InvalidArgumentError("progress line: empty");
  Progress p;
  bool have_it = false, have_bytes = false, have_ok = false, have_t = false, have_dur = false;
  for (std::string_view tok : Tokens(line)) {
    auto eq = tok.find('=');
    if (eq == std::string_view::npos || eq == 0) return Bad("a field is not key=value", tok);
    std::string_view key = tok.substr(0, eq);
    std::string_view value = tok.substr(eq + 1);
    bool* seen = key == "it"      ? &have_it
                 : key == "bytes" ? &have_bytes
                 : key == "ok"    ? &have_ok
                 : key == "t"     ? &have_t
                 : key == "dur"   ? &have_dur
                                  : nullptr;
    if (!seen) continue;  // a key of a later version
    if (*seen) return Bad("repeated field " + std::string(key), tok);
    *seen = true;
    if (key == "ok") {
      if (value != "0" && value != "1") return Bad("ok must be 0 or 1", tok);
      p.verified_ok = value == "1";
      continue;
    }
    auto n = ParseU64(value);
    if (!n) return Bad("bad number for " + std::string(key), tok);
    constexpr uint64_t kMaxNs = static_cast<uint64_t>(std::numeric_limits<Nanos>::max());
    if (key == "it") {
      p.iteration = *n;
    } else if (key == "bytes") {
      p.bytes = *n;
    } else if (key == "t") {
      if (*n == 0 || *n > kMaxNs) return Bad("t out of range (wall clock, ns)", tok);
      p.wall_ns = static_cast<Nanos>(*n);
    } else {
      if (*n > kMaxNs) return Bad("dur out of range (ns)", tok);
      p.duration_ns = static_cast<Nanos>(*n);
    }
  }
  if (!have_it) return InvalidArgumentError("progress line: missing field it=");
  if (!have_bytes) return InvalidArgumentError("progress line: missing field bytes=");
  return p;
}

}  // namespace fl::workloads::progress
