#include "harness/suite/junit.h"

#include <cstdio>

#include "reports/compare/compare.h"

namespace fl::harness::suite {
namespace {

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
  void Add(const JUnitWriter::Case& c) {
    ++tests;
    failures += c.failure.has_value();
    errors += c.error.has_value();
    skipped += c.skipped.has_value();
    seconds += c.seconds;
  }
  std::string Attrs() const {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  " tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\"", tests,
                  failures, errors, skipped, seconds);
    return buf;
  }
};

}  // namespace

std::string JUnitWriter::Escape(const std::string& s) {
  std::string clean = s;
  for (char& c : clean)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') c = '?';
  return reports::compare::HtmlEscape(clean);  // & < > " ' : what XML needs too
}

std::string JUnitWriter::Xml() const {
  Counts total;
  std::string body;
  for (const Suite& s : suites_) {
    Counts counts;
    for (const Case& c : s.cases) counts.Add(c), total.Add(c);
    body += "  <testsuite name=\"" + Escape(s.name) + "\"" + counts.Attrs() + ">\n";
    if (!s.properties.empty()) {
      body += "    <properties>\n";
      for (const auto& [k, v] : s.properties)
        body += "      <property name=\"" + Escape(k) + "\" value=\"" + Escape(v) + "\"/>\n";
      body += "    </properties>\n";
    }
    for (const Case& c : s.cases) {
      char t[32];
      std::snprintf(t, sizeof t, "%.3f", c.seconds);
      body += "    <testcase classname=\"" + Escape(c.classname) + "\" name=\"" + Escape(c.name) +
              "\" time=\"" + t + "\"";
      if (!c.failure && !c.error && !c.skipped && c.system_out.empty()) {
        body += "/>\n";
        continue;
      }
      body += ">\n";
      auto first_line = [](const std::string& m) { return m.substr(0, m.find('\n')); };
      if (c.failure)
        body += "      <failure message=\"" + Escape(first_line(*c.failure)) + "\">" +
                Escape(*c.failure) + "</failure>\n";
      if (c.error)
        body += "      <error message=\"" + Escape(first_line(*c.error)) + "\">" +
                Escape(*c.error) + "</error>\n";
      if (c.skipped) body += "      <skipped message=\"" + Escape(*c.skipped) + "\"/>\n";
      if (!c.system_out.empty())
        body += "      <system-out>" + Escape(c.system_out) + "</system-out>\n";
      body += "    </testcase>\n";
    }
    body += "  </testsuite>\n";
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" + Escape(name_) + "\"" +
         total.Attrs() + ">\n" + body + "</testsuites>\n";
}

}  // namespace fl::harness::suite
