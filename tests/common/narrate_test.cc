// Colour for a person at a terminal only (common/narrate.h).
#include "common/narrate.h"

#include <catch2/catch.hpp>

namespace fl {
namespace {

TEST_CASE("colour: on a terminal only, off with NO_COLOR or TERM=dumb, FAULTLINE_COLOR decides",
          "[unit]") {
  CHECK(ColourWanted(true, "xterm-256color", nullptr, nullptr));
  CHECK_FALSE(ColourWanted(false, "xterm-256color", nullptr, nullptr));  // a pipe, a CI log
  CHECK_FALSE(ColourWanted(true, "dumb", nullptr, nullptr));
  CHECK_FALSE(ColourWanted(true, "xterm", "1", nullptr));
  CHECK(ColourWanted(true, "xterm", "", nullptr));  // NO_COLOR set but empty: no effect
  CHECK(ColourWanted(false, nullptr, "1", "always"));
  CHECK_FALSE(ColourWanted(true, "xterm", nullptr, "never"));
  CHECK(ColourWanted(true, nullptr, nullptr, "auto"));
}

TEST_CASE("tint: the [tag] in the tone's colour, a failure's whole line, nothing without colour",
          "[unit]") {
  CHECK(Tint("[fault] f0 injected", Tone::kFault, true) == "\033[33m[fault]\033[0m f0 injected");
  CHECK(Tint("[fault] f0 reverted", Tone::kGood, true) == "\033[32m[fault]\033[0m f0 reverted");
  CHECK(Tint("[rank] rank 1 exited with code 3", Tone::kBad, true) ==
        "\033[31m[rank] rank 1 exited with code 3\033[0m");
  CHECK(Tint("  | last line", Tone::kDim, true) == "\033[2m  | last line\033[0m");
  CHECK(Tint("[fault] f0 injected", Tone::kFault, false) == "[fault] f0 injected");
  CHECK(Tint("[fault] f0", Tone::kPlain, true) == "[fault] f0");
}

}  // namespace
}  // namespace fl
