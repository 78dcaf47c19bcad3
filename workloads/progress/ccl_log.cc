// ParseCclLogLine (progress.h): the error lines NCCL (NCCL_DEBUG=WARN) and ftccl log.
//
// NCCL writes "HOST:PID:TID [DEV] [file.cc:LINE ]NCCL WARN MESSAGE" (newer versions may put
// a timestamp first); the network layer's messages name NET/IB, NET/Socket, a socket call or
// an ibv_ call. ftccl logs through common/log.h: "TIME W ftccl [context] MESSAGE  (file:LINE)";
// ftccl-perf's last word is "ftccl-perf: CODE: MESSAGE".
#include <array>
#include <string>

#include "workloads/progress/progress.h"
#include "workloads/progress/text.h"

namespace fl::workloads::progress {
namespace {

using internal::Clip;
using internal::Contains;
using internal::StartsWith;
using internal::Trim;

constexpr size_t kMaxDetail = 512;

template <size_t N>
bool ContainsAny(std::string_view s, const std::array<std::string_view, N>& words) {
  for (std::string_view w : words) {
    if (Contains(s, w)) return true;
  }
  return false;
}

// What NCCL's network code says when a path or a peer fails.
constexpr std::array<std::string_view, 20> kNcclNetwork = {"NET/",
                                                           "Net :",
                                                           "Net:",
                                                           "socketProgress",
                                                           "socketPoll",
                                                           "socketWait",
                                                           "Connection closed",
                                                           "Connection reset",
                                                           "Connection refused",
                                                           "Connection timed out",
                                                           "Broken pipe",
                                                           "No route to host",
                                                           "Network is unreachable",
                                                           "Call to ibv_",
                                                           "ibv_",
                                                           "Got completion",
                                                           "async event",
                                                           "network error",
                                                           "ncclRemoteError",
                                                           "remote peer"};
// Network-layer WARN lines that are set-up notes, not faults.
constexpr std::array<std::string_view, 3> kNcclNotFaults = {"Plugin", "No device found",
                                                            "No usable listening interface"};

CclLogEvent Make(std::string_view library, std::string_view kind, std::string_view detail) {
  return CclLogEvent{std::string(library), std::string(kind), Clip(Trim(detail), kMaxDetail)};
}

std::optional<CclLogEvent> ParseNccl(std::string_view line) {
  auto warn = line.find("NCCL WARN");
  if (warn != std::string_view::npos) {
    std::string_view detail = Trim(line.substr(warn + 9));
    if (detail.empty()) return std::nullopt;
    if (ContainsAny(detail, kNcclNotFaults)) return std::nullopt;
    if (ContainsAny(detail, kNcclNetwork)) return Make("nccl", "fault_detected", detail);
    if (Contains(detail, "failure") || Contains(detail, "error") || Contains(detail, "Error"))
      return Make("nccl", "ccl_error", detail);
    return std::nullopt;
  }
  // Not a WARN line: what a caller of NCCL prints of its result (PyTorch's "NCCL error: ...",
  // nccl-tests' "HOST: Test NCCL failure common.cu:N 'reason'").
  if (Contains(line, "remote process exited or there was a network error") ||
      Contains(line, "ncclRemoteError"))
    return Make("nccl", "fault_detected", line);
  if (Contains(line, "Test NCCL failure")) return Make("nccl", "ccl_error", line);
  return std::nullopt;
}

std::optional<CclLogEvent> ParseFtccl(std::string_view line) {
  // ftccl-perf's failure line on stdout (nccl-tests' form): "HOST: Test CCL failure
  // ftccl-perf 'CODE: MESSAGE'"; on stderr: "ftccl-perf: CODE: MESSAGE".
  constexpr std::string_view kStdout = "Test CCL failure ftccl-perf '";
  std::string_view perf;
  if (auto at = line.find(kStdout); at != std::string_view::npos) {
    perf = line.substr(at + kStdout.size());
    if (!perf.empty() && perf.back() == '\'') perf.remove_suffix(1);
  } else if (StartsWith(line, "ftccl-perf:")) {
    perf = line.substr(11);
  }
  perf = Trim(perf);
  if (!perf.empty()) {
    if (StartsWith(perf, "Unavailable:")) return Make("ftccl", "fault_detected", perf);
    if (StartsWith(perf, "DeadlineExceeded:") || StartsWith(perf, "DataLoss:"))
      return Make("ftccl", "ccl_error", perf);
    return std::nullopt;
  }
  size_t at = std::string_view::npos;
  for (std::string_view level : {" W ftccl ", " E ftccl "}) {
    at = line.find(level);
    if (at != std::string_view::npos) {
      at += level.size();
      break;
    }
  }
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view msg = Trim(line.substr(at));
  if (StartsWith(msg, "[")) {  // the run/host/rank context
    auto close = msg.find("] ");
    if (close != std::string_view::npos) msg = Trim(msg.substr(close + 2));
  }
  if (auto loc = msg.rfind("  ("); loc != std::string_view::npos && msg.back() == ')')
    msg = Trim(msg.substr(0, loc));
  if ((StartsWith(msg, "path to rank ") && Contains(msg, " failed (")) ||
      StartsWith(msg, "link down on NIC") || StartsWith(msg, "no healthy path to rank"))
    return Make("ftccl", "fault_detected", msg);
  if (StartsWith(msg, "collective ") && Contains(msg, "timed out"))
    return Make("ftccl", "ccl_error", msg);
  return std::nullopt;
}

}  // namespace

std::optional<CclLogEvent> ParseCclLogLine(std::string_view line) {
  line = Trim(line);
  if (line.empty()) return std::nullopt;
  if (auto e = ParseNccl(line)) return e;
  return ParseFtccl(line);
}

}  // namespace fl::workloads::progress
