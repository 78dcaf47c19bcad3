#include "reports/render/escape.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace fl::reports::render {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence at text[i], or 0 when it is not valid (overlong forms,
// surrogates and code points above U+10FFFF are invalid).
size_t Utf8Length(std::string_view text, size_t i, uint32_t* code_point) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  unsigned char c = b(0);
  size_t n;
  uint32_t cp;
  if (c < 0x80) {
    *code_point = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  *code_point = cp;
  return n;
}

// Calls emit(code_point, bytes) for each character; invalid bytes come as U+FFFD.
template <typename Emit>
void ForEachChar(std::string_view text, Emit emit) {
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    size_t n = Utf8Length(text, i, &cp);
    if (n == 0) {
      emit(0xFFFD, kReplacement);
      ++i;
    } else {
      emit(cp, text.substr(i, n));
      i += n;
    }
  }
}

}  // namespace

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  ForEachChar(text, [&](uint32_t, std::string_view bytes) { out += bytes; });
  return out;
}

namespace {

enum class Markup { kHtml, kXml };

std::string EscapeMarkup(std::string_view text, Markup markup) {
  const bool xml = markup == Markup::kXml;
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  ForEachChar(text, [&](uint32_t cp, std::string_view bytes) {
    switch (cp) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += xml ? "&apos;" : "&#39;";
        break;
      case '\t':
      case '\n':
      case '\r':
        // As references, XML attribute values keep them (a literal one reads as a space).
        if (xml) {
          out += "&#" + std::to_string(cp) + ";";
        } else {
          out += bytes;
        }
        break;
      default:
        // XML 1.0 allows no other C0 control character, nor U+FFFE/U+FFFF; HTML no NUL.
        if (cp == 0 || (xml && (cp < 0x20 || cp == 0xFFFE || cp == 0xFFFF))) {
          out += kReplacement;
        } else {
          out += bytes;
        }
    }
  });
  return out;
}

}  // namespace

std::string HtmlEscape(std::string_view text) { return EscapeMarkup(text, Markup::kHtml); }

std::string XmlEscape(std::string_view text) { return EscapeMarkup(text, Markup::kXml); }

std::string JsonString(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  ForEachChar(text, [&](uint32_t cp, std::string_view bytes) {
    char buf[8];
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      case 0x2028:
        out += "\\u2028";
        break;
      case 0x2029:
        out += "\\u2029";
        break;
      default:
        if (cp < 0x20) {
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
          out += buf;
        } else {
          out += bytes;
        }
    }
  });
  out += '"';
  return out;
}

std::string MarkdownEscape(std::string_view text) {
  // Every character that matters here is ASCII, so the valid UTF-8 can be walked by bytes.
  const std::string in = ValidUtf8(text);
  std::string out;
  out.reserve(in.size() + in.size() / 8);
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    char next = i + 1 < in.size() ? in[i + 1] : '\0';
    bool next_alpha = std::isalpha(static_cast<unsigned char>(next)) != 0;
    switch (c) {
      case '|':
        out += "\\|";
        break;
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '#':
      case '!':
        out += '\\';
        out += c;
        break;
      // Only what could open an HTML tag or an entity: "<=" and "a & b" stay readable.
      case '<':
        out += next_alpha || next == '/' || next == '!' || next == '?' ? "&lt;" : "<";
        break;
      case '&':
        out += next_alpha || next == '#' ? "&amp;" : "&";
        break;
      case '\n':
      case '\r':
      case '\t':
        out += ' ';
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += kReplacement;
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace fl::reports::render
