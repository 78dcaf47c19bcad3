#include "common/json_util.h"
#include "common/input_file.h"

#include "common/file_util.h"

namespace fl {

namespace {

// The offset of the first bracket that opens nesting level kMaxJsonDepth + 1, or npos. Strings
// are skipped (brackets inside them do not nest); malformed text is left to the parser.
size_t TooDeepAt(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

std::string At(std::string_view name, std::string_view text, size_t offset) {
  auto [line, col] = LineColOf(text, offset);
  return std::string(name) + ":" + std::to_string(line) + ":" + std::to_string(col) + ": ";
}

}  // namespace

StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view name) {
  if (size_t deep = TooDeepAt(text); deep != std::string_view::npos)
    return InvalidArgumentError(At(name, text, deep) + "nested deeper than " +
                                std::to_string(kMaxJsonDepth) + " levels");
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based: the position of the character that broke the parse.
    std::string what = e.what();
    if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
    return InvalidArgumentError(At(name, text, e.byte > 0 ? e.byte - 1 : 0) + what);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string(name) + ": " + e.what());
  }
}

StatusOr<nlohmann::json> LoadJsonFile(const std::string& path, InputKind kind) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, kind));
  return ParseJson(text, path);
}

namespace json_internal {

std::string KeyError(std::string_view source, std::string_view key, std::string_view what) {
  std::string s = std::string(source) + ": key '" + std::string(key) + "'";
  if (!what.empty()) s += ": " + std::string(what);
  return s;
}

std::string_view TypeName(const nlohmann::json& v) {
  if (v.is_number_float()) return "a float";
  if (v.is_number_integer()) return "an integer";
  return v.type_name();
}

}  // namespace json_internal

}  // namespace fl
