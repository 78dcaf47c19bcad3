// Text views of one run: a Markdown summary for CI comments (pull requests, merge requests:
// the run's status, the verdict table, the per-fault metrics table), and the short plain-text
// summary `faultline report RUN` prints when no output file is asked for.
// Every text from the database is escaped for its format (escape.h).
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "reports/store/records.h"

namespace fl::reports::render {

std::string RenderMarkdown(const RunData& run);
std::string RenderTextSummary(const RunData& run);

}  // namespace fl::reports::render
