// Fuzzes ParseSpool (reports/store/spool.h), which reads the writer's spool back: for the
// writer's own replay and for `faultline store replay FILE`, a file a crash may have cut
// short or a disk damaged. Any input must parse or be DataLoss, never crash or hang. What
// parses must survive a round trip: its rows written out again read back the same.
// Seeds: tests/fuzz/corpus/spool/ (files as SpoolWriter writes them).
#include <string>
#include <string_view>

#include "reports/store/spool.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fl;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  StatusOr<reports::SpoolContents> first = reports::ParseSpool(text);
  if (!first.ok()) {
    FL_FUZZ_CHECK(first.status().code() == Code::kDataLoss);
    return 0;
  }
  FL_FUZZ_CHECK(first->replayed <= first->rows.size());
  std::string again = reports::SpoolHeaderLine(first->header);
  for (const auto& r : first->rows) again += reports::SpoolLine(r);
  StatusOr<reports::SpoolContents> second = reports::ParseSpool(again);
  FL_FUZZ_CHECK(second.ok());
  FL_FUZZ_CHECK(second->header == first->header);
  FL_FUZZ_CHECK(second->rows == first->rows);
  FL_FUZZ_CHECK(!second->torn_tail);
  return 0;
}
