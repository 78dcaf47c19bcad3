// One table per enum gives both directions: a value's name and a name's value. A table is an
// array of {value, name} pairs; the functions scan it (tables are a handful of entries).
//
//   constexpr NamedValue<Level> kLevels[] = {{Level::kInfo, "info"}, {Level::kWarn, "warn"}};
//   NameIn(kLevels, Level::kWarn)  -> "warn"        ValueIn(kLevels, "info") -> Level::kInfo
//
// Thread-safety: pure functions over constant tables.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace fl {

template <typename E>
struct NamedValue {
  E value;
  std::string_view name;
};

// The name of value, or `otherwise` when the table lacks it.
template <typename E, size_t N>
constexpr std::string_view NameIn(const NamedValue<E> (&table)[N], E value,
                                  std::string_view otherwise = "?") {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  return otherwise;
}

// The value named name (exactly), or nullopt.
template <typename E, size_t N>
constexpr std::optional<E> ValueIn(const NamedValue<E> (&table)[N], std::string_view name) {
  for (const auto& e : table)
    if (e.name == name) return e.value;
  return std::nullopt;
}

// "a, b, c": the names in table order, for error messages.
template <typename E, size_t N>
std::string NamesIn(const NamedValue<E> (&table)[N], std::string_view sep = ", ") {
  std::string out;
  for (const auto& e : table) {
    if (!out.empty()) out += sep;
    out += e.name;
  }
  return out;
}

}  // namespace fl
