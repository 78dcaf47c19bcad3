// What `faultline run` tells the person at the terminal, apart from log lines: the phases
// ("[provision] ...", "[agents] ...", "[teardown] ..."), the fault lines and the progress line.
// -q (kQuiet) keeps them off (the summary and errors remain); -v (kVerbose) adds log lines at
// info. Process-wide; set once by the CLI before a run starts.
#pragma once

namespace fl {

enum class Verbosity { kQuiet = -1, kNormal = 0, kVerbose = 1 };

void SetVerbosity(Verbosity v);
Verbosity GetVerbosity();

// printf-style, one line (the newline is added) on stderr, unless quiet.
void Narrate(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace fl
