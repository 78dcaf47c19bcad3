// The faultline command line: parses arguments and calls into the harness libraries.
// main() only forwards here, so the CLI can be driven from tests.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace CLI {
class App;
}

namespace fl::harness {

// Returns the process exit code: 0 pass, 1 an expectation failed, 2 bad input,
// 3 infrastructure error.
int RunCli(int argc, char** argv);

// Shared by the command modules (harness/cli/*_cmd.cc):
// Parses repeated key=value arguments of `flag` into out; false (after saying what is wrong on
// stderr, "faultline CMD: FLAG wants key=value, got '...'") for one without a key or '='.
bool ParseKeyValues(const char* cmd, const char* flag, const std::vector<std::string>& in,
                    std::map<std::string, std::string>* out);
// The results database every command uses unless --db says otherwise: $FAULTLINE_DB when
// set, else results.db (a SQLite file in the working directory).
std::string DefaultDb();
// Adds --db to a command, defaulting *db to DefaultDb().
void AddDbOption(CLI::App* command, std::string* db);
// Says "faultline CMD: what is wrong" on stderr and returns the exit code of a store or
// selection error: 2 (bad input) when the user named something that is not there or is
// malformed, 3 (infrastructure) otherwise.
int ErrorExit(const char* cmd, const Status& st);
// A duration flag's value ("1h", "250ms"); InvalidArgument naming the flag.
StatusOr<Nanos> ParseDurationFlag(const char* flag, const std::string& text);
// An optional flag's value: unset when empty.
std::optional<std::string> OptionalFlag(const std::string& value);
// Commands that print their own progress show library logs below warnings only when
// FAULTLINE_LOG asks for them.
void QuietLogsUnlessAsked();

}  // namespace fl::harness
