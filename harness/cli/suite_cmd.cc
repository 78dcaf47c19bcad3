// `faultline suite`, `faultline compare`, `faultline history` (harness/suite, reports/compare).
#include <CLI/CLI.hpp>

namespace fl::harness {

void AddSuiteCommands(CLI::App& app, int* exit_code) {
  (void)app;
  (void)exit_code;
}

}  // namespace fl::harness
