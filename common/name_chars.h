// The characters that names may hold, said once: ASCII digits, letters (of either case, lower
// case only or upper case only) and a name's own punctuation. Host names, run ids, event kinds,
// counter names, environment keys and shell words are each checked with these, so every check
// reads as the set it allows:
//
//   IsNameOf(host, 64, "_.-")                   [A-Za-z0-9_.-]{1,64}
//   IsNameOf(sw, 32, "-_", Letters::kLower)      [a-z0-9-_]{1,32}
//
// ASCII only, whatever the locale (std::isalnum follows the locale). Thread-safety: pure.
#pragma once

#include <cstddef>
#include <string_view>

namespace fl {

enum class Letters { kAny, kLower, kUpper };

// True when c is an ASCII digit, an ASCII letter of `letters`, or one of `also`.
constexpr bool IsNameChar(char c, std::string_view also, Letters letters = Letters::kAny) {
  if (c >= '0' && c <= '9') return true;
  if (c >= 'a' && c <= 'z') return letters != Letters::kUpper;
  if (c >= 'A' && c <= 'Z') return letters != Letters::kLower;
  return also.find(c) != std::string_view::npos;
}

// True when every character of s is IsNameChar(c, also, letters): true for "" too.
constexpr bool AllNameChars(std::string_view s, std::string_view also,
                            Letters letters = Letters::kAny) {
  for (char c : s)
    if (!IsNameChar(c, also, letters)) return false;
  return true;
}

// True when s is 1..max_len characters, each IsNameChar(c, also, letters).
constexpr bool IsNameOf(std::string_view s, size_t max_len, std::string_view also,
                        Letters letters = Letters::kAny) {
  return !s.empty() && s.size() <= max_len && AllNameChars(s, also, letters);
}

}  // namespace fl
