// Fuzzes the suite file loader (harness/suite/suite_file.h): ParseSuite, with the input named
// as a file in configs/suites/ so that scenario paths resolve as a shipped suite's do (the
// scenarios it names are loaded and checked too).
// Seeds: configs/suites/.
#include "harness/suite/suite_file.h"
#include "tests/fuzz/fuzz_util.h"

using namespace fl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string kName = FL_SOURCE_DIR "/configs/suites/fuzz-input.yaml";
  auto suite = harness::suite::ParseSuite(fuzz::AsText(data, size), kName);
  if (!suite.ok()) {
    fuzz::CheckLoaderError(suite.status(), kName);
    return 0;
  }
  FL_FUZZ_CHECK(suite->repeat >= 1);
  return 0;
}
