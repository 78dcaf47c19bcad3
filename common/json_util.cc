#include "common/json_util.h"

#include "common/file_util.h"

namespace fl {

StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view name) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based: the position of the character that broke the parse.
    auto [line, col] = LineColOf(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string what = e.what();
    if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
    return InvalidArgumentError(std::string(name) + ":" + std::to_string(line) + ":" +
                                std::to_string(col) + ": " + what);
  }
}

StatusOr<nlohmann::json> LoadJsonFile(const std::string& path) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseJson(text, path);
}

}  // namespace fl
