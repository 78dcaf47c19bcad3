// The faultline command line: parses arguments and calls into the harness libraries.
// main() only forwards here, so the CLI can be driven from tests.
#pragma once

namespace fl::harness {

// Returns the process exit code: 0 pass, 1 an expectation failed, 2 bad input,
// 3 infrastructure error.
int RunCli(int argc, char** argv);

}  // namespace fl::harness
