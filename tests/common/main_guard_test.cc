#include "common/main_guard.h"

#include <catch2/catch.hpp>
#include <stdexcept>

namespace fl {
namespace {

TEST_CASE("main guard: an escaping exception is exit 3 after the body's locals are gone",
          "[unit]") {
  bool cleaned = false;
  struct Cleanup {
    bool* flag;
    ~Cleanup() { *flag = true; }
  };
  int rc = GuardedMain("test", [&]() -> int {
    Cleanup c{&cleaned};
    throw std::runtime_error("boom");
  });
  CHECK(rc == kExitInternalError);
  CHECK(rc == 3);
  CHECK(cleaned);  // RAII cleanup (an agent reverting its faults) ran before the exit code
  CHECK(GuardedMain("test", [] { return 7; }) == 7);
  CHECK(GuardedMain("test", []() -> int { throw 5; }) == 3);
}

}  // namespace
}  // namespace fl
