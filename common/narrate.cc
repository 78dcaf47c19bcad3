#include "common/narrate.h"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fl {
namespace {
std::atomic<int> g_verbosity{0};
}  // namespace

void SetVerbosity(Verbosity v) { g_verbosity = static_cast<int>(v); }
Verbosity GetVerbosity() { return static_cast<Verbosity>(g_verbosity.load()); }

void Narrate(const char* format, ...) {
  if (GetVerbosity() == Verbosity::kQuiet) return;
  char line[1024];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(line, sizeof line, format, ap);
  va_end(ap);
  std::fprintf(stderr, "%s\n", line);
}

bool ColourWanted(bool stderr_is_tty, const char* term, const char* no_color,
                  const char* faultline_color) {
  if (faultline_color && std::strcmp(faultline_color, "always") == 0) return true;
  if (faultline_color && std::strcmp(faultline_color, "never") == 0) return false;
  if (no_color && *no_color) return false;
  if (term && std::strcmp(term, "dumb") == 0) return false;
  return stderr_is_tty;
}

bool ColourOnStderr() {
  return ColourWanted(isatty(2) == 1, std::getenv("TERM"), std::getenv("NO_COLOR"),
                      std::getenv("FAULTLINE_COLOR"));
}

std::string Tint(const std::string& line, Tone tone, bool colour) {
  if (!colour || tone == Tone::kPlain) return line;
  const char* sgr = tone == Tone::kFault  ? "\033[33m"
                    : tone == Tone::kGood ? "\033[32m"
                    : tone == Tone::kBad  ? "\033[31m"
                                          : "\033[2m";
  size_t end = line.size();
  if (tone != Tone::kBad && !line.empty() && line[0] == '[') {
    size_t close = line.find(']');
    if (close != std::string::npos) end = close + 1;
  }
  return sgr + line.substr(0, end) + "\033[0m" + line.substr(end);
}

}  // namespace fl
