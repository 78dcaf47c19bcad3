// Fuzzes the workers' telemetry line parser (harness/agent/telemetry_line.h), which reads what
// any process on the host may write to an agent's socket, and the coordinator's reading of a
// rank_exit detail. Neither may throw or invoke undefined behaviour; what they accept must be
// in range.
// Seeds: tests/fuzz/corpus/telemetry/ (one line each, as faultline-worker writes them).
#include <string>
#include <variant>

#include "harness/agent/telemetry_line.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fl;
  std::string_view text = fuzz::AsText(data, size);
  auto line = harness::ParseTelemetryLine(text);
  if (line.ok()) {
    if (const auto* s = std::get_if<harness::TelemetrySample>(&*line)) {
      FL_FUZZ_CHECK(s->rank >= 0 && s->rank <= harness::kMaxTelemetryRank);
    } else {
      const auto& e = std::get<harness::TelemetryEvent>(*line);
      FL_FUZZ_CHECK(e.rank >= -1 && e.rank <= harness::kMaxTelemetryRank);
      FL_FUZZ_CHECK(harness::IsValidEventKind(e.kind));
      FL_FUZZ_CHECK(!harness::IsAgentOnlyEventKind(e.kind));
      auto code = harness::ParseRankExitDetail(e.detail_json);
      if (code.ok()) FL_FUZZ_CHECK(*code >= -128 && *code <= 255);
    }
  }
  auto code = harness::ParseRankExitDetail(text);
  if (code.ok()) FL_FUZZ_CHECK(*code >= -128 && *code <= 255);
  return 0;
}
