// The ssh-template driver's placeholders and regular expressions (internal.h).
#include <exception>

#include "injectors/switch/ssh_template/internal.h"

namespace fl::injectors::ssh_template {
namespace {

std::string RegexEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

unsigned BitOf(std::string_view name) {
  if (name == "port") return kPort;
  if (name == "rule") return kRule;
  if (name == "stage") return kStage;
  if (name == "bps" || name == "kbps" || name == "mbps") return kRate;
  return 0;
}

}  // namespace

namespace {

// Counts in a pattern ({n,m} and back-references) above this are refused before libstdc++
// sees them: its compiler overflows a long on a count of 19 digits (found by
// fuzz_switch_preset), and expands a repetition into that many states.
constexpr long kMaxRegexCount = 1000;

Status CheckRegexCounts(const std::string& src) {
  bool in_class = false;
  for (size_t i = 0; i < src.size(); ++i) {
    const char c = src[i];
    const bool escaped = c == '\\' && i + 1 < src.size();
    if (escaped && !in_class && src[i + 1] >= '1' && src[i + 1] <= '9') {
      size_t j = i + 1;
      while (j < src.size() && src[j] >= '0' && src[j] <= '9') ++j;
      if (j - (i + 1) > 3)
        return InvalidArgumentError("bad regular expression /" + src + "/: back-reference \\" +
                                    src.substr(i + 1, j - (i + 1)) + " is out of range");
    }
    if (escaped) {
      ++i;
      continue;
    }
    if (c == '[') in_class = true;
    if (c == ']') in_class = false;
    if (c != '{' || in_class) continue;
    long n = 0;
    for (size_t j = i + 1; j < src.size() && src[j] != '}'; ++j) {
      if (src[j] == ',') {
        n = 0;
        continue;
      }
      if (src[j] < '0' || src[j] > '9') break;
      n = n * 10 + (src[j] - '0');
      if (n > kMaxRegexCount)
        return InvalidArgumentError("bad regular expression /" + src +
                                    "/: a repetition count above " +
                                    std::to_string(kMaxRegexCount));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::regex> CompileRegex(const std::string& src, bool multiline) {
  FL_RETURN_IF_ERROR(CheckRegexCounts(src));
  try {
    auto flags = std::regex::ECMAScript;
    if (multiline) flags |= std::regex::multiline;
    return std::regex(src, flags);
  } catch (const std::exception& e) {  // regex_error, or bad_alloc on a huge pattern
    return InvalidArgumentError("bad regular expression /" + src + "/: " + e.what());
  }
}

StatusOr<bool> Search(const std::string& text, size_t from, const std::regex& re, std::smatch& m) {
  try {
    return std::regex_search(text.begin() + static_cast<std::ptrdiff_t>(from), text.end(), m, re);
  } catch (const std::exception& e) {
    return InternalError(std::string("regular expression search failed: ") + e.what());
  }
}

unsigned VarsOf(SwitchOp op) {
  switch (op) {
    case SwitchOp::kDropAdd:
    case SwitchOp::kDropRemove:
    case SwitchOp::kRateRemove:  // a removal is not told the rate
      return kPort | kRule | kStage;
    case SwitchOp::kRateAdd:
      return kPort | kRule | kStage | kRate;
    default:
      return kPort;
  }
}

std::string CheckPlaceholders(std::string_view s, unsigned allowed, std::string_view op) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '{') continue;
    size_t j = i + 1;
    while (j < s.size() && s[j] >= 'a' && s[j] <= 'z') ++j;
    if (j == i + 1 || j >= s.size() || s[j] != '}') continue;
    std::string_view name = s.substr(i + 1, j - i - 1);
    unsigned bit = BitOf(name);
    if (bit == 0)
      return "unknown placeholder {" + std::string(name) +
             "} (known: {port} {rule} {stage} {bps} {kbps} {mbps})";
    if ((allowed & bit) == 0)
      return "placeholder {" + std::string(name) + "} has no value in " + std::string(op);
    i = j;
  }
  return {};
}

std::string Substitute(std::string_view s, const Vars& vars, bool regex) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '{') {
      size_t j = i + 1;
      while (j < s.size() && s[j] >= 'a' && s[j] <= 'z') ++j;
      if (j > i + 1 && j < s.size() && s[j] == '}') {
        auto it = vars.find(std::string(s.substr(i + 1, j - i - 1)));
        if (it != vars.end()) {
          out += regex ? RegexEscape(it->second) : it->second;
          i = j;
          continue;
        }
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace fl::injectors::ssh_template
