// JSON input with errors that say where ("FILE:LINE:COL: ..."), and a typed getter.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "common/status.h"

namespace fl {

StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view name);
StatusOr<nlohmann::json> LoadJsonFile(const std::string& path);

// A required member of an object, converted to T; errors name the key and the source.
template <typename T>
StatusOr<T> JsonGet(const nlohmann::json& obj, std::string_view key, std::string_view source) {
  if (!obj.is_object())
    return InvalidArgumentError(std::string(source) + ": expected a JSON object");
  auto it = obj.find(std::string(key));
  if (it == obj.end())
    return InvalidArgumentError(std::string(source) + ": missing key '" + std::string(key) + "'");
  try {
    return it->template get<T>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string(source) + ": key '" + std::string(key) +
                                "': " + e.what());
  }
}

}  // namespace fl
