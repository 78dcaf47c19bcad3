// `faultline report`: HTML, JUnit and Markdown views of a stored run (reports/render).
#include <CLI/CLI.hpp>

namespace fl::harness {

void AddReportCommands(CLI::App& app, int* exit_code) {
  (void)app;
  (void)exit_code;
}

}  // namespace fl::harness
