// Fuzzes DecodeSampleBlock (reports/store/sample_block.h), which reads the sample_blocks blobs of a
// results file: a file can be damaged or written by another build, so any blob must decode to
// samples or DataLoss, never crash or read past its end. What decodes must survive a round
// trip: encoded again and decoded, the same samples.
// Seeds: tests/fuzz/corpus/sample_block/ (blobs as SampleBlockEncoder writes them).
#include <vector>

#include "reports/store/sample_block.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fl;
  std::vector<reports::SampleRecord> first;
  Status st = reports::DecodeSampleBlock({data, size}, "r", 3, first);
  if (!st.ok()) {
    FL_FUZZ_CHECK(st.code() == Code::kDataLoss);
    return 0;
  }
  reports::SampleBlockEncoder enc;
  for (const auto& s : first) {
    FL_FUZZ_CHECK(s.run_id == "r" && s.rank == 3);
    enc.Add(s);
  }
  FL_FUZZ_CHECK(enc.count() == first.size());
  std::vector<reports::SampleRecord> second;
  FL_FUZZ_CHECK(reports::DecodeSampleBlock(enc.Bytes(), "r", 3, second).ok());
  FL_FUZZ_CHECK(second == first);
  return 0;
}
