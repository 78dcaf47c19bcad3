// The workers' telemetry protocol (one JSON object per line on the agent's Unix socket
// RUN_DIR/<host>.sock), parsed and checked without trusting the writer.
//
// Lines: {"t":"sample","rank":R,"it":N,"start":NS,"end":NS,"bytes":B,"verified":b,"mismatch":b}
//        {"t":"ccl","rank":R,"e":{"type":K,"wall_ns":NS,...}}
//        {"t":"worker","rank":R,"wall":NS,"kind":K,"detail":{...}}
// Every field is checked for type and range; a line that fails is an InvalidArgument status
// saying why (the agent counts it, logs the first per connection, and drops it). Event kinds
// that only the agent itself reports (rank_exit, telemetry_dropped) are refused from a worker,
// so that a worker cannot fake its own exit.
//
// Pure functions with no I/O and no Asio or gRPC: libFuzzer targets call them directly.
// Thread-safety: pure. Never throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "common/status.h"
#include "workloads/sample.h"

namespace fl::harness {

inline constexpr size_t kMaxTelemetryLineBytes = 64 * 1024;  // newline excluded
inline constexpr int kMaxTelemetryRank = (1 << 20) - 1;
inline constexpr size_t kMaxEventKindBytes = 64;
// The end of a rank's log that a rank_exit event carries ("log_tail") for a bad exit.
inline constexpr size_t kRankLogTailBytes = 4 * 1024;

// A sample line is the worker's IterationSample (workloads/sample.h), checked.
using TelemetrySample = workloads::IterationSample;

struct TelemetryEvent {
  int rank = -1;  // -1: not rank-specific
  int64_t wall_ns = 0;
  std::string kind;
  std::string detail_json;  // a JSON object, re-serialised (never the writer's raw text)
};

using TelemetryLine = std::variant<TelemetrySample, TelemetryEvent>;

// One line (a trailing "\n" or "\r\n" is allowed).
StatusOr<TelemetryLine> ParseTelemetryLine(std::string_view line);

// 1..kMaxEventKindBytes characters from [A-Za-z0-9_.:?-].
bool IsValidEventKind(std::string_view kind);
// Kinds only the agent reports; refused on the workers' socket.
bool IsAgentOnlyEventKind(std::string_view kind);

// The agent's NIC samples (TelemetryBatch.nics; its own sampler's, not the workers'), as the
// coordinator checks them: at most kMaxNicExtraCounters extra counters a sample, each named by
// 1..kMaxNicCounterNameBytes characters from [A-Za-z0-9_.:-].
inline constexpr size_t kMaxNicCounterNameBytes = 64;
inline constexpr size_t kMaxNicExtraCounters = 64;
bool IsValidNicCounterName(std::string_view name);

// The coordinator's reading of a rank_exit event's detail: {"code": 0..255} gives the code,
// {"signal": 1..128} gives -signal, neither gives -9 (the agent could not tell). A wrong type
// or range is InvalidArgument.
StatusOr<int> ParseRankExitDetail(std::string_view detail_json);

}  // namespace fl::harness
