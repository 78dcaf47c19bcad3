#include "reports/store/records.h"

#include <array>
#include <string>

namespace fl::reports {

namespace {
constexpr std::array<std::string_view, 5> kRunStatusNames = {"running", "passed", "failed",
                                                             "aborted", "error"};
}  // namespace

std::string_view RunStatusName(RunStatus status) {
  return kRunStatusNames[static_cast<size_t>(status)];
}

StatusOr<RunStatus> ParseRunStatus(std::string_view name) {
  for (size_t i = 0; i < kRunStatusNames.size(); ++i) {
    if (kRunStatusNames[i] == name) return static_cast<RunStatus>(i);
  }
  return InvalidArgumentError("unknown run status '" + std::string(name) +
                              "' (expected running, passed, failed, aborted or error)");
}

}  // namespace fl::reports
