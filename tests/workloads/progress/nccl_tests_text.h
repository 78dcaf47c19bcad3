// A whole nccl-tests output through NcclTestsParser, line by line as the command runner feeds
// it: the units in order and the summary. Shared by the parser's tests and ftccl-perf's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "workloads/progress/progress.h"

namespace fl::workloads::progress::testing {

struct Parsed {
  std::vector<Progress> units;
  NcclTestsParser::Summary summary;
};

inline Parsed ParseNcclTestsText(const std::string& text) {
  NcclTestsParser p;
  Parsed out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    for (auto& u : p.Feed(std::string_view(text).substr(start, nl - start))) out.units.push_back(u);
    start = nl + 1;
  }
  out.summary = p.summary();
  return out;
}

}  // namespace fl::workloads::progress::testing
