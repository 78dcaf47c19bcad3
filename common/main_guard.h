// The top-level handler of every faultline binary: nothing that escapes main()'s body ends
// the process with an abort.
//
//   int main(int argc, char** argv) {
//     return fl::GuardedMain("faultline-agent", [&] { return AgentMain(argc, argv); });
//   }
//
// An exception that escapes body is caught here, after the body's locals were destroyed (so
// RAII cleanup, e.g. an agent runtime reverting its faults, has run), reported as
// "PROGRAM: internal error: WHAT" on stderr, and the process exits kExitInternalError.
// Exceptions on other threads are not seen here: each thread that handles outside data
// catches its own (see docs/architecture.md, safety).
#pragma once

#include <cstdio>
#include <exception>
#include <string_view>

namespace fl {

inline constexpr int kExitInternalError = 3;

template <typename Body>
int GuardedMain(std::string_view program, Body&& body) noexcept {
  const char* what = "unknown exception";
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%.*s: internal error: %s\n", static_cast<int>(program.size()),
                 program.data(), e.what());
    return kExitInternalError;
  } catch (...) {
  }
  std::fprintf(stderr, "%.*s: internal error: %s\n", static_cast<int>(program.size()),
               program.data(), what);
  return kExitInternalError;
}

}  // namespace fl
