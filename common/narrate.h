// What `faultline run` tells the person at the terminal, apart from log lines: the phases
// ("[provision] ...", "[agents] ...", "[teardown] ..."), the fault lines and the progress line.
// -q (kQuiet) keeps them off (the summary and errors remain); -v (kVerbose) adds log lines at
// info. Process-wide; set once by the CLI before a run starts.
#pragma once

#include <string>

namespace fl {

enum class Verbosity { kQuiet = -1, kNormal = 0, kVerbose = 1 };

void SetVerbosity(Verbosity v);
Verbosity GetVerbosity();

// printf-style, one line (the newline is added) on stderr, unless quiet.
void Narrate(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Colour, only for a person at a terminal: on when stderr is a terminal, TERM is not "dumb"
// and NO_COLOR is unset or empty (no-color.org); FAULTLINE_COLOR=always or never overrides.
// Decided from the environment given (for tests) or the process's own.
bool ColourWanted(bool stderr_is_tty, const char* term, const char* no_color,
                  const char* faultline_color);
bool ColourOnStderr();

// What a line tells: a fault acting (yellow), things going well again (green), a failure
// (red), detail (dim).
enum class Tone { kPlain, kFault, kGood, kBad, kDim };

// The line's leading "[tag]" (the whole line when it has none, or for kBad) in the tone's
// colour when `colour` is set; else the line unchanged.
std::string Tint(const std::string& line, Tone tone, bool colour);

}  // namespace fl
