// Small text helpers shared by the progress parsers (internal to workloads/progress).
// Pure functions; never throw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fl::workloads::progress::internal {

// Without leading/trailing spaces, tabs, CR and LF.
std::string_view Trim(std::string_view s);
// Whitespace-separated tokens (spaces and tabs), views into `s`.
std::vector<std::string_view> Tokens(std::string_view s);
// A decimal unsigned integer, all of `s` (no sign, no spaces); nullopt on overflow or junk.
std::optional<uint64_t> ParseU64(std::string_view s);
// A finite decimal floating-point number, all of `s`; nullopt on junk, overflow, inf, nan.
std::optional<double> ParseDouble(std::string_view s);
// `s` cut to at most `max` bytes, not inside a UTF-8 sequence.
std::string Clip(std::string_view s, size_t max);
inline bool StartsWith(std::string_view s, std::string_view p) { return s.starts_with(p); }
inline bool Contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

}  // namespace fl::workloads::progress::internal
