// Helpers shared by the libFuzzer targets in this folder (see CMakeLists.txt and
// docs/performance.md "Fuzzing (safety issue)").
//
// A target returns normally for every input, valid or not; what counts as a finding is a
// crash, a sanitizer report, an exception escaping a loader (std::terminate), a broken
// invariant checked with FL_FUZZ_CHECK, or an input that runs past libFuzzer's -timeout.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "common/status.h"

// Aborts (a finding) when `cond` is false.
#define FL_FUZZ_CHECK(cond)                                                                  \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)

namespace fl::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Loaders promise InvalidArgument with a "NAME:LINE:COL: " location for bad input (and
// NotFound for a missing referenced file); anything else from pure parsing is a bug.
inline void CheckLoaderError(const Status& st, std::string_view name) {
  if (st.ok()) return;
  FL_FUZZ_CHECK(st.code() == Code::kInvalidArgument || st.code() == Code::kNotFound);
  FL_FUZZ_CHECK(!st.message().empty());
  (void)name;
}

}  // namespace fl::fuzz
