// A small, strict XML reader for the tests: elements, attributes, text and the five
// predefined entities plus numeric character references; it rejects what is not well formed
// (mismatched tags, unquoted or duplicate attributes, a bare '&' or '<'), so a test that
// parses a JUnit file also checks that CI tools can read it.
#pragma once

#include <cctype>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fl::reports::testing {

struct XmlNode {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;
  std::vector<std::unique_ptr<XmlNode>> children;
  std::string text;

  const std::string* Attr(std::string_view key) const {
    for (const auto& [k, v] : attrs)
      if (k == key) return &v;
    return nullptr;
  }
  std::vector<const XmlNode*> Children(std::string_view child_name) const {
    std::vector<const XmlNode*> out;
    for (const auto& c : children)
      if (c->name == child_name) out.push_back(c.get());
    return out;
  }
};

class MiniXml {
 public:
  // The root element, or nullopt with error() set.
  static std::unique_ptr<XmlNode> Parse(std::string_view text, std::string* error) {
    MiniXml p(text);
    auto root = p.Document();
    if (!root) *error = p.error_ + " at byte " + std::to_string(p.pos_);
    return root;
  }

 private:
  explicit MiniXml(std::string_view text) : s_(text) {}

  bool Fail(std::string e) {
    if (error_.empty()) error_ = std::move(e);
    return false;
  }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }
  bool Starts(std::string_view p) const { return s_.substr(pos_, p.size()) == p; }
  static bool NameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
           c == ':';
  }
  std::string Name() {
    size_t b = pos_;
    while (pos_ < s_.size() && NameChar(s_[pos_])) ++pos_;
    return std::string(s_.substr(b, pos_ - b));
  }
  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  // Decodes character data up to (not including) `stop`.
  bool CharData(char stop, std::string& out) {
    while (pos_ < s_.size() && s_[pos_] != stop) {
      char c = s_[pos_];
      if (c == '<') return Fail("'<' in character data");
      if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\r' && c != '\t')
        return Fail("control character");
      if (c != '&') {
        out += c;
        ++pos_;
        continue;
      }
      size_t semi = s_.find(';', pos_);
      if (semi == std::string_view::npos || semi - pos_ > 10) return Fail("bare '&'");
      std::string_view ent = s_.substr(pos_ + 1, semi - pos_ - 1);
      if (ent == "amp")
        out += '&';
      else if (ent == "lt")
        out += '<';
      else if (ent == "gt")
        out += '>';
      else if (ent == "quot")
        out += '"';
      else if (ent == "apos")
        out += '\'';
      else if (ent.size() > 1 && ent[0] == '#') {
        uint32_t cp = ent[1] == 'x' ? std::stoul(std::string(ent.substr(2)), nullptr, 16)
                                    : std::stoul(std::string(ent.substr(1)));
        AppendUtf8(out, cp);
      } else {
        return Fail("unknown entity &" + std::string(ent) + ";");
      }
      pos_ = semi + 1;
    }
    return true;
  }
  std::unique_ptr<XmlNode> Element() {
    if (!Starts("<")) return Fail("expected '<'"), nullptr;
    ++pos_;
    auto node = std::make_unique<XmlNode>();
    node->name = Name();
    if (node->name.empty()) return Fail("empty element name"), nullptr;
    while (true) {
      SkipSpace();
      if (Starts("/>")) {
        pos_ += 2;
        return node;
      }
      if (Starts(">")) {
        ++pos_;
        break;
      }
      std::string key = Name();
      if (key.empty()) return Fail("bad attribute"), nullptr;
      if (node->Attr(key)) return Fail("duplicate attribute " + key), nullptr;
      SkipSpace();
      if (!Starts("=")) return Fail("expected '='"), nullptr;
      ++pos_;
      SkipSpace();
      if (!Starts("\"") && !Starts("'")) return Fail("unquoted attribute"), nullptr;
      char q = s_[pos_++];
      std::string value;
      if (!CharData(q, value)) return nullptr;
      if (pos_ >= s_.size()) return Fail("unterminated attribute"), nullptr;
      ++pos_;
      node->attrs.emplace_back(key, value);
    }
    while (true) {
      if (!CharData('<', node->text)) return nullptr;
      if (pos_ >= s_.size()) return Fail("unterminated element " + node->name), nullptr;
      if (Starts("</")) {
        pos_ += 2;
        if (Name() != node->name) return Fail("mismatched end tag for " + node->name), nullptr;
        SkipSpace();
        if (!Starts(">")) return Fail("expected '>'"), nullptr;
        ++pos_;
        return node;
      }
      auto child = Element();
      if (!child) return nullptr;
      node->children.push_back(std::move(child));
    }
  }
  std::unique_ptr<XmlNode> Document() {
    if (Starts("<?xml")) {
      size_t e = s_.find("?>", pos_);
      if (e == std::string_view::npos) return Fail("bad declaration"), nullptr;
      pos_ = e + 2;
    }
    SkipSpace();
    auto root = Element();
    if (!root) return nullptr;
    SkipSpace();
    if (pos_ != s_.size()) return Fail("content after the root element"), nullptr;
    return root;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace fl::reports::testing
