// The characters names may hold (common/name_chars.h).
#include "common/name_chars.h"

#include <catch2/catch.hpp>

namespace fl {
namespace {

TEST_CASE("name chars: digits, letters of the asked case and the name's own punctuation",
          "[unit]") {
  struct Case {
    char c;
    std::string_view also;
    Letters letters;
    bool want;
  };
  const Case cases[] = {
      {'7', "", Letters::kAny, true},
      {'a', "", Letters::kAny, true},
      {'Z', "", Letters::kAny, true},
      {'_', "", Letters::kAny, false},
      {'_', "_-", Letters::kAny, true},
      {'.', "_-", Letters::kAny, false},
      {'q', "", Letters::kLower, true},
      {'Q', "", Letters::kLower, false},
      {'Q', "", Letters::kUpper, true},
      {'q', "", Letters::kUpper, false},
      {'5', "", Letters::kUpper, true},
      {'5', "", Letters::kLower, true},
      // Beyond ASCII: never a name character, whatever the locale says of it.
      {static_cast<char>(0xe9), "_", Letters::kAny, false},
      {'\0', "_", Letters::kAny, false},
  };
  for (const Case& k : cases) {
    INFO("'" << k.c << "' with '" << k.also << "'");
    CHECK(IsNameChar(k.c, k.also, k.letters) == k.want);
  }
}

TEST_CASE("name chars: IsNameOf bounds the length and refuses the empty name", "[unit]") {
  CHECK(IsNameOf("leaf1", 32, "-_", Letters::kLower));
  CHECK_FALSE(IsNameOf("Leaf1", 32, "-_", Letters::kLower));
  CHECK_FALSE(IsNameOf("", 32, "-_"));
  CHECK(IsNameOf("abcd", 4, ""));
  CHECK_FALSE(IsNameOf("abcde", 4, ""));
  CHECK(IsNameOf("h0.nic0", 64, "_.-"));
  CHECK_FALSE(IsNameOf("h0 nic0", 64, "_.-"));
  CHECK_FALSE(IsNameOf("h0/nic0", 64, "_.-"));
  CHECK(AllNameChars("", "_"));
  CHECK(AllNameChars("a=b,c", "=,"));
  CHECK_FALSE(AllNameChars("a=b;c", "=,"));
  static_assert(IsNameOf("PATH", 128, "_", Letters::kUpper));
}

}  // namespace
}  // namespace fl
