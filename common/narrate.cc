#include "common/narrate.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

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

}  // namespace fl
