// How a command module (harness/cli/*_cmd.cc) ties a subcommand to the function that runs
// it, written once. A subcommand's options write into an Args at parse time and its callback
// reads them after; both hold the Args through a shared_ptr, so it lives as long as the
// CLI::App. Called while the CLI is built, on one thread; nothing here blocks.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"
#include "harness/cli/cli.h"

namespace fl::harness {

// A command's help as `--help` prints it, written as a raw string literal whose text starts on
// the line after its opening `R"(` (so that the source shows the lines as they print): the text
// without that first line break.
inline std::string HelpText(std::string_view raw) {
  if (!raw.empty() && raw.front() == '\n') raw.remove_prefix(1);
  return std::string(raw);
}

// A subcommand that only groups others (`faultline store replay`): one of them must be named.
inline CLI::App* AddCommandGroup(CLI::App& parent, const std::string& name,
                                 const std::string& help) {
  CLI::App* group = parent.add_subcommand(name, help);
  group->require_subcommand(1);
  return group;
}

// Once command's options are parsed into *args, the process exit code is run(*args), an int.
template <typename Args, typename Run>
void RunAfterParse(CLI::App* command, std::shared_ptr<Args> args, int* exit_code, Run run) {
  command->callback([args = std::move(args), exit_code, run] { *exit_code = run(*args); });
}

// The same for a run that returns a Status: library logs below warnings show only when
// FAULTLINE_LOG asks; exit 0 when the Status is OK, else ErrorExit(cmd, status) (2 bad input,
// 3 infrastructure), which says "faultline CMD: what is wrong" on stderr.
template <typename Args, typename Run>
void RunStatusAfterParse(CLI::App* command, std::shared_ptr<Args> args, int* exit_code,
                         const char* cmd, Run run) {
  RunAfterParse(command, std::move(args), exit_code, [cmd, run](Args& parsed) {
    QuietLogsUnlessAsked();
    const Status st = run(parsed);
    return st.ok() ? 0 : ErrorExit(cmd, st);
  });
}

}  // namespace fl::harness
