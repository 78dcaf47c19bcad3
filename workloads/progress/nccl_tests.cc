// NcclTestsParser (progress.h): nccl-tests' stdout, line by line.
#include <cstdint>
#include <string>

#include "workloads/progress/progress.h"
#include "workloads/progress/text.h"

namespace fl::workloads::progress {
namespace {

using internal::Clip;
using internal::Contains;
using internal::ParseDouble;
using internal::ParseU64;
using internal::StartsWith;
using internal::Tokens;
using internal::Trim;

constexpr size_t kMaxKeptLines = 256;  // devices and errors kept (a big job has many ranks)
constexpr size_t kMaxLineBytes = 512;
// A time column past this (µs: about 11.6 days per call) is not a measurement.
constexpr double kMaxTimeUs = 1e12;
// Bandwidths past this (GB/s) are garbage, not a result.
constexpr double kMaxBandwidthGbs = 1e9;

// mpirun --tag-output prefixes every line with "[1,0]<stdout>:" (and srun -l with "0: ").
std::string_view StripLauncherTag(std::string_view line) {
  if (StartsWith(line, "[")) {
    auto tag = line.find("]<stdout>:");
    if (tag != std::string_view::npos && tag < 32) return line.substr(tag + 10);
  }
  return line;
}

void Keep(std::vector<std::string>& v, std::string_view line) {
  if (v.size() < kMaxKeptLines) v.push_back(Clip(line, kMaxLineBytes));
}

// The value after the first ':' of a "# Name : value ..." line.
std::string_view AfterColon(std::string_view body) {
  auto colon = body.find(':');
  return colon == std::string_view::npos ? std::string_view() : Trim(body.substr(colon + 1));
}

// nccl-tests' failure lines ("HOST: Test NCCL failure common.cu:123 'reason'", " .. HOST pid
// N: Test failure ...", "HOST: Test timeout (5s) ...") and ftccl-perf's ("ftccl-perf: ...").
bool IsErrorLine(std::string_view line) {
  if (StartsWith(line, "ftccl-perf:")) return true;
  if (!Contains(line, "Test ")) return false;
  return Contains(line, " failure") || Contains(line, "Test timeout");
}

// One half of a row: time algbw busbw #wrong.
std::optional<Progress> ParseHalf(const std::vector<std::string_view>& t, size_t at,
                                  uint64_t bytes) {
  auto time_us = ParseDouble(t[at]);
  auto algbw = ParseDouble(t[at + 1]);
  auto busbw = ParseDouble(t[at + 2]);
  if (!time_us || !algbw || !busbw) return std::nullopt;
  if (*time_us < 0 || *time_us > kMaxTimeUs || *algbw < 0 || *algbw > kMaxBandwidthGbs ||
      *busbw < 0 || *busbw > kMaxBandwidthGbs)
    return std::nullopt;
  Progress p;
  p.bytes = bytes;
  p.duration_ns = static_cast<Nanos>(*time_us * 1000.0);
  p.algbw_gbs = *algbw;
  p.busbw_gbs = *busbw;
  if (t[at + 3] != "N/A") {
    // "%5g" of a count: "0", "12", "1.5e+06"; old versions printed a max error ("0e+00").
    std::string_view w = t[at + 3];
    if (!w.empty() && w.front() == '+') w.remove_prefix(1);
    auto wrong = ParseDouble(w);
    if (!wrong || *wrong < 0) return std::nullopt;
    p.verified_ok = *wrong == 0;
  }
  return p;
}

}  // namespace

std::vector<Progress> NcclTestsParser::Feed(std::string_view raw) {
  std::string_view line = Trim(StripLauncherTag(Trim(raw)));
  if (line.empty()) return {};
  if (line.front() == '#') {
    std::string_view body = Trim(line.substr(1));
    if (body.empty()) return {};
    if (StartsWith(body, "nThread ")) {
      summary_.command = Clip(body, kMaxLineBytes);
      saw_nthread_ = true;
    } else if (!saw_nthread_ && summary_.command.empty() && summary_.rows == 0 &&
               !StartsWith(body, "Rank ")) {
      summary_.command = Clip(body, kMaxLineBytes);  // e.g. "# nccl-tests version ..."
    }
    if (StartsWith(body, "Rank ") && Contains(body, " on ")) {
      Keep(summary_.devices, body);
    } else if (StartsWith(body, "Out of bounds values")) {
      auto tok = Tokens(AfterColon(body));
      std::optional<uint64_t> n = tok.empty() ? std::nullopt : ParseU64(tok[0]);
      if (n) {
        summary_.out_of_bounds = *n;
      } else {
        ++summary_.malformed;
      }
    } else if (StartsWith(body, "Avg bus bandwidth")) {
      auto tok = Tokens(AfterColon(body));
      std::optional<double> bw = tok.empty() ? std::nullopt : ParseDouble(tok[0]);
      if (bw && *bw >= 0) {
        summary_.avg_busbw_gbs = *bw;
      } else {
        ++summary_.malformed;
      }
    }
    return {};
  }
  if (IsErrorLine(line)) {
    Keep(summary_.errors, line);
    return {};
  }
  if (line.front() < '0' || line.front() > '9') return {};  // NCCL INFO lines and the like
  // A result row: size count type redop [root] then one or two halves of
  // time algbw busbw #wrong (out-of-place, in-place). Old nccl-tests had no root column.
  auto t = Tokens(line);
  auto bad = [&]() -> std::vector<Progress> {
    ++summary_.malformed;
    return {};
  };
  if (t.size() < 8) return bad();
  const size_t rest = t.size() - 4;
  const size_t root = rest % 4 == 1 ? 1 : 0;
  const size_t halves = (rest - root) / 4;
  if ((rest - root) % 4 != 0 || halves < 1 || halves > 2) return bad();
  auto bytes = ParseU64(t[0]);
  auto count = ParseU64(t[1]);
  if (!bytes || !count) return bad();
  if (t[2].front() >= '0' && t[2].front() <= '9') return bad();  // the type is a name
  std::vector<Progress> out;
  for (size_t h = 0; h < halves; ++h) {
    auto p = ParseHalf(t, 4 + root + 4 * h, *bytes);
    if (!p) return bad();
    out.push_back(*p);
  }
  for (auto& p : out) p.iteration = next_iteration_++;
  ++summary_.rows;
  return out;
}

}  // namespace fl::workloads::progress
