// `faultline lab ...`: bring a local lab up and down, look at it, run commands in its hosts,
// inject hand-made faults and recover faults left behind. See docs/lab.md.
#pragma once

namespace CLI {
class App;
}

namespace fl::harness {

// Adds the "lab" subcommand tree; callbacks store the process exit code in *exit_code.
void AddLabCommands(CLI::App& app, int* exit_code);

}  // namespace fl::harness
