// Escaping of text from the results database for the report formats. Every string that comes
// from the database (scenario names, messages, tags, fingerprints, fault targets) goes through
// one of these before it is written into a page or file.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace fl::reports::render {

// Text for HTML element content or a double- or single-quoted attribute value: & < > " '.
std::string HtmlEscape(std::string_view text);

// Text for XML 1.0 content or attribute values (JUnit): & < > " ' escaped; tab, newline and
// CR written as character references (so attribute values keep them); the other control
// characters (not allowed in XML 1.0) and invalid UTF-8 replaced by U+FFFD.
std::string XmlEscape(std::string_view text);

// A JSON string literal, quotes included, safe inside an HTML <script> element: '<', '>' and
// '&' are written as \u003c, \u003e, \u0026 so that "</script>" or "<!--" in the text cannot
// end or change the script; U+2028/U+2029 are escaped too; invalid UTF-8 becomes U+FFFD.
std::string JsonString(std::string_view text);

// Text for one cell of a Markdown (GitHub) table: '|' escaped, line breaks become spaces,
// Markdown punctuation ( \ ` * _ [ ] # ! ) backslash-escaped, and '<' / '&' written as
// entities where they could open an HTML tag or an entity, so a message cannot add links,
// images or HTML to a CI comment ("<= 100 ms" stays as it is).
std::string MarkdownEscape(std::string_view text);

// Replaces invalid UTF-8 sequences by U+FFFD (the database may hold anything).
std::string ValidUtf8(std::string_view text);

}  // namespace fl::reports::render
