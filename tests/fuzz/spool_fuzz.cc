// Fuzzes ParseSpool (reports/store/spool.h), which reads the writer's spool back: for the
// writer's own replay and for `faultline store replay FILE`, a file a crash may have cut
// short or a disk damaged. Any input must parse or be DataLoss, never crash or hang. What
// parses must survive a round trip: its rows written out again read back the same. Each
// input runs twice: as it is, and with every line's checksum made right.
// Seeds: tests/fuzz/corpus/spool/ (files as SpoolWriter writes them).
#include <string>
#include <string_view>

#include "reports/store/spool.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void Check(std::string_view text) {
  using namespace fl;
  StatusOr<reports::SpoolContents> first = reports::ParseSpool(text);
  if (!first.ok()) {
    FL_FUZZ_CHECK(first.status().code() == Code::kDataLoss);
    return;
  }
  FL_FUZZ_CHECK(first->replayed <= first->rows.size());
  std::string again = reports::SpoolHeaderLine(first->header);
  for (const auto& r : first->rows) again += reports::SpoolLine(r);
  StatusOr<reports::SpoolContents> second = reports::ParseSpool(again);
  FL_FUZZ_CHECK(second.ok());
  FL_FUZZ_CHECK(second->header == first->header);
  FL_FUZZ_CHECK(second->rows == first->rows);
  FL_FUZZ_CHECK(!second->torn_tail);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Check(text);
  // The same lines with their checksums made right, so that mutations reach the JSON (a
  // checksum a mutation broke stops nearly every input at the first line otherwise).
  std::string fixed;
  for (size_t at = 0; at <= text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (end == text.size() && line.empty()) break;  // the newline of the last line
    if (line.size() >= 9 && line[8] == ' ') line.remove_prefix(9);
    fixed += fl::reports::SpoolRecordLine(line);
    at = end + 1;
  }
  Check(fixed);
  return 0;
}
