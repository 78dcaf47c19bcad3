// JSON input with errors that say where ("FILE:LINE:COL: ..."), and typed getters that never
// throw.
//
// Everything here is for data from outside the process (a socket, a file, the database, a
// peer): a wrong type, a number out of range or a missing key is an InvalidArgument status
// naming the source and the key, never an exception. Use these rather than nlohmann's
// get<T>() / at() / value(), which throw on a type mismatch.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/status.h"

namespace fl {

enum class InputKind;  // common/input_file.h

// Nesting deeper than this is refused before nlohmann sees it (its dump and comparisons
// recurse, so a hostile "[[[[..." must not reach them).
inline constexpr int kMaxJsonDepth = 64;

// Never throws. Bad text (or nesting deeper than kMaxJsonDepth) is InvalidArgument
// "NAME:LINE:COL: ...".
StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view name);
StatusOr<nlohmann::json> LoadJsonFile(const std::string& path, InputKind kind);

namespace json_internal {
std::string KeyError(std::string_view source, std::string_view key, std::string_view what);
std::string_view TypeName(const nlohmann::json& v);
}  // namespace json_internal

// v converted to T with an explicit type check (and a range check for integers); `what`
// names the value in the error ("msg.json: key 'rank'"). Supported T: bool, integral types
// (a JSON integer that fits; a float or a string is refused), float/double (any number),
// std::string, nlohmann::json (anything), std::map<std::string, std::string> (an object of
// strings), std::vector<std::string> (an array of strings).
template <typename T>
StatusOr<T> JsonAs(const nlohmann::json& v, std::string_view what) {
  auto bad = [&](std::string_view want) {
    return InvalidArgumentError(std::string(what) + ": expected " + std::string(want) + ", got " +
                                std::string(json_internal::TypeName(v)));
  };
  if constexpr (std::is_same_v<T, nlohmann::json>) {
    return v;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return bad("true or false");
    return v.get_ref<const nlohmann::json::boolean_t&>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) return bad("an integer");
    const std::string range = " (" + std::to_string(std::numeric_limits<T>::min()) + ".." +
                              std::to_string(std::numeric_limits<T>::max()) + ")";
    if (v.is_number_unsigned()) {
      uint64_t u = v.get_ref<const nlohmann::json::number_unsigned_t&>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max()))
        return InvalidArgumentError(std::string(what) + ": " + std::to_string(u) +
                                    " is out of range" + range);
      return static_cast<T>(u);
    }
    int64_t i = v.get_ref<const nlohmann::json::number_integer_t&>();
    bool fits = std::is_signed_v<T>
                    ? (i >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                       i <= static_cast<int64_t>(std::numeric_limits<T>::max()))
                    : (i >= 0 && static_cast<uint64_t>(i) <=
                                     static_cast<uint64_t>(std::numeric_limits<T>::max()));
    if (!fits)
      return InvalidArgumentError(std::string(what) + ": " + std::to_string(i) +
                                  " is out of range" + range);
    return static_cast<T>(i);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) return bad("a number");
    if (v.is_number_float())
      return static_cast<T>(v.get_ref<const nlohmann::json::number_float_t&>());
    if (v.is_number_unsigned())
      return static_cast<T>(v.get_ref<const nlohmann::json::number_unsigned_t&>());
    return static_cast<T>(v.get_ref<const nlohmann::json::number_integer_t&>());
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return bad("a string");
    return v.get_ref<const nlohmann::json::string_t&>();
  } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
    if (!v.is_object()) return bad("an object of strings");
    T out;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it->is_string())
        return InvalidArgumentError(std::string(what) + ": member '" + it.key() +
                                    "': expected a string, got " +
                                    std::string(json_internal::TypeName(*it)));
      out.emplace(it.key(), it->template get_ref<const nlohmann::json::string_t&>());
    }
    return out;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    if (!v.is_array()) return bad("an array of strings");
    T out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string())
        return InvalidArgumentError(std::string(what) + ": element " + std::to_string(i) +
                                    ": expected a string, got " +
                                    std::string(json_internal::TypeName(v[i])));
      out.push_back(v[i].template get_ref<const nlohmann::json::string_t&>());
    }
    return out;
  } else {
    static_assert(sizeof(T) == 0, "JsonAs: unsupported type");
  }
}

// A required member of an object, converted to T; errors name the key and the source.
template <typename T>
StatusOr<T> JsonGet(const nlohmann::json& obj, std::string_view key, std::string_view source) {
  if (!obj.is_object())
    return InvalidArgumentError(std::string(source) + ": expected a JSON object");
  auto it = obj.find(key);
  if (it == obj.end())
    return InvalidArgumentError(std::string(source) + ": missing key '" + std::string(key) + "'");
  return JsonAs<T>(*it, json_internal::KeyError(source, key, ""));
}

// An optional member: absent (or null) gives fallback; present with the wrong type or out of
// range is an error, not the fallback (a corrupt value is not silently replaced).
template <typename T>
StatusOr<T> JsonGetOr(const nlohmann::json& obj, std::string_view key, T fallback,
                      std::string_view source) {
  if (!obj.is_object())
    return InvalidArgumentError(std::string(source) + ": expected a JSON object");
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  return JsonAs<T>(*it, json_internal::KeyError(source, key, ""));
}

// A required integer member within [lo, hi].
template <typename T>
StatusOr<T> JsonGetInRange(const nlohmann::json& obj, std::string_view key, T lo, T hi,
                           std::string_view source) {
  static_assert(std::is_arithmetic_v<T>);
  FL_ASSIGN_OR_RETURN(T v, JsonGet<T>(obj, key, source));
  if (v < lo || v > hi)
    return InvalidArgumentError(json_internal::KeyError(source, key, "") + ": " +
                                std::to_string(v) + " is outside " + std::to_string(lo) + ".." +
                                std::to_string(hi));
  return v;
}

}  // namespace fl
