// Fuzzes ParseSpool (reports/store/spool.h), which reads the writer's spool back: for the
// writer's own replay and for `faultline store replay FILE`, a file a crash may have cut
// short or a disk damaged. Any input must parse or be DataLoss, never crash or hang. What
// parses must survive a round trip: its rows (and batches) written out again read back the
// same, and the replay's plan must cover the rows after the last mark once, in order, with
// only the batches the store holds marked as in it. Each input runs twice: as it is, and with
// every line's checksum made right.
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
  size_t b = 0;
  for (size_t i = 0; i < first->rows.size(); ++i) {
    for (; b < first->batches.size() && first->batches[b].first_row == i; ++b)
      again += reports::SpoolRecordLine(R"({"t":"batch","seq":)" +
                                        std::to_string(first->batches[b].seq) + "}");
    again += reports::SpoolLine(first->rows[i]);
  }
  StatusOr<reports::SpoolContents> second = reports::ParseSpool(again);
  FL_FUZZ_CHECK(second.ok());
  FL_FUZZ_CHECK(second->header == first->header);
  FL_FUZZ_CHECK(second->rows == first->rows);
  // Batches after the last row hold no rows: they are not written again.
  size_t with_rows = first->batches.size();
  while (with_rows > 0 && first->batches[with_rows - 1].first_row >= first->rows.size())
    --with_rows;
  FL_FUZZ_CHECK(second->batches.size() == with_rows);
  FL_FUZZ_CHECK(!second->torn_tail);
  const uint64_t stored =
      first->batches.empty() ? 0 : first->batches[first->batches.size() / 2].seq;
  for (size_t max_rows : {size_t{1}, size_t{3}, size_t{8192}}) {
    uint64_t at = first->replayed;
    for (const reports::ReplayStep& step :
         reports::PlanReplay(*first, first->replayed, stored, max_rows)) {
      FL_FUZZ_CHECK(step.begin == at && step.end > step.begin);
      FL_FUZZ_CHECK(step.first_seq <= step.last_seq);
      FL_FUZZ_CHECK(!step.in_store || (step.first_seq > 0 && step.last_seq <= stored));
      FL_FUZZ_CHECK(step.in_store || step.first_seq > stored || step.first_seq == 0);
      FL_FUZZ_CHECK(step.in_store || step.end - step.begin <= max_rows ||
                    step.first_seq == step.last_seq);
      at = step.end;
    }
    FL_FUZZ_CHECK(at == first->rows.size());
  }
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
