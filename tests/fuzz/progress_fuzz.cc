// Fuzzes the command job's progress parsers (workloads/progress/progress.h): nccl-tests output,
// the progress line protocol and the CCL error lines. They read what any job prints, so none
// may throw, invoke undefined behaviour or grow without bound, and what they accept must be
// in range. The input is split into lines and each line goes to all three.
// Seeds: tests/fixtures/nccl_tests/ (nccl-tests output) and tests/fuzz/corpus/progress/.
#include <string>

#include "tests/fuzz/fuzz_util.h"
#include "workloads/progress/progress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fl::workloads::progress;
  std::string_view text = fl::fuzz::AsText(data, size);
  NcclTestsParser parser;
  uint64_t units = 0, lines = 0;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++lines;
    for (const Progress& p : parser.Feed(line)) {
      FL_FUZZ_CHECK(p.iteration == units);
      FL_FUZZ_CHECK(p.duration_ns >= 0);
      FL_FUZZ_CHECK(p.wall_ns == 0);
      FL_FUZZ_CHECK(p.algbw_gbs >= 0 && p.busbw_gbs >= 0);
      ++units;
    }
    auto pl = ParseProgressLine(line);
    if (pl.ok()) {
      FL_FUZZ_CHECK(pl->duration_ns >= 0 && pl->wall_ns >= 0);
    } else {
      FL_FUZZ_CHECK(pl.status().code() == fl::Code::kInvalidArgument);
      FL_FUZZ_CHECK(!pl.status().message().empty());
    }
    if (auto e = ParseCclLogLine(line)) {
      FL_FUZZ_CHECK(e->library == "nccl" || e->library == "ftccl");
      FL_FUZZ_CHECK(e->kind == "fault_detected" || e->kind == "ccl_error");
      FL_FUZZ_CHECK(!e->detail.empty() && e->detail.size() <= 512);
    }
  }
  const auto& s = parser.summary();
  FL_FUZZ_CHECK(units <= 2 * s.rows);
  FL_FUZZ_CHECK(s.rows + s.malformed <= lines);
  FL_FUZZ_CHECK(s.devices.size() <= 256 && s.errors.size() <= 256);
  FL_FUZZ_CHECK(s.command.size() <= 512);
  return 0;
}
