// A small JUnit XML writer (the schema Jenkins, GitLab and GitHub test reporters read):
// <testsuites> of <testsuite> of <testcase>, each case passed, failed (<failure>), errored
// (<error>) or skipped (<skipped>). Counts are computed from the cases.
//
// The suite runner's own writer: when reports/render grows a shared one, this can move there.
// Thread-safety: a value; build it from one thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fl::harness::suite {

class JUnitWriter {
 public:
  struct Case {
    Case(std::string cls, std::string n, double s)
        : classname(std::move(cls)), name(std::move(n)), seconds(s) {}
    std::string classname;
    std::string name;
    double seconds = 0;
    std::optional<std::string> failure;  // message
    std::optional<std::string> error;
    std::optional<std::string> skipped;
    std::string system_out;
  };
  struct Suite {
    std::string name;
    std::map<std::string, std::string> properties;
    std::vector<Case> cases;
  };

  explicit JUnitWriter(std::string name) : name_(std::move(name)) {}
  Suite& AddSuite(std::string name) {
    suites_.push_back(Suite{std::move(name), {}, {}});
    return suites_.back();
  }
  std::string Xml() const;

  // XML-escapes text for an attribute or element (control characters other than tab and
  // newline, which XML 1.0 does not allow, become '?').
  static std::string Escape(const std::string& s);

 private:
  std::string name_;
  std::vector<Suite> suites_;
};

}  // namespace fl::harness::suite
