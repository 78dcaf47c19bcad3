// What this build is: faultline's version (the project version in CMakeLists.txt) and the git
// revision of the source tree it was built from (`git describe --always --dirty`, taken at
// every build by cmake/build_info.cmake; empty when the tree is not a git clone). Stored with
// every run (runs.git_revision) and printed by `faultline --version`.
//
// Thread-safety: constant data.
#pragma once

#include <string>
#include <string_view>

namespace fl {

std::string_view BuildVersion();      // "0.1.0"
std::string_view BuildGitRevision();  // "6267765a1b2c" or "6267765a1b2c-dirty"; "" unknown

// What `--version` prints: "PROGRAM 0.1.0 (git 6267765a1b2c)", "(git unknown)" outside a clone.
inline std::string VersionLine(std::string_view program) {
  const std::string_view rev = BuildGitRevision();
  return std::string(program) + " " + std::string(BuildVersion()) + " (git " +
         (rev.empty() ? std::string("unknown") : std::string(rev)) + ")";
}

}  // namespace fl
