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

// "0.1.0 (git 6267765a1b2c)", "(git unknown)" outside a clone: what an agent says in its Hello.
inline std::string VersionAndRevision() {
  const std::string_view rev = BuildGitRevision();
  return std::string(BuildVersion()) + " (git " +
         (rev.empty() ? std::string("unknown") : std::string(rev)) + ")";
}

// What `--version` prints: "PROGRAM 0.1.0 (git 6267765a1b2c)".
inline std::string VersionLine(std::string_view program) {
  return std::string(program) + " " + VersionAndRevision();
}

}  // namespace fl
