// The run selectors of store.h: "tag:k=v[,k=v]" and "date:YYYY-MM-DD[..YYYY-MM-DD]" parsed into
// a RunFilter (what `faultline compare`, `accept` and `serve` select runs with).
#include <ctime>
#include <optional>
#include <string>

#include "reports/store/store.h"

namespace fl::reports {

Status ParseDateSelector(std::string_view selector, RunFilter& filter) {
  constexpr std::string_view kPrefix = "date:";
  auto bad = [&] {
    return InvalidArgumentError("run selector '" + std::string(selector) +
                                "': want date:YYYY-MM-DD or date:YYYY-MM-DD..YYYY-MM-DD (UTC)");
  };
  if (selector.substr(0, kPrefix.size()) != kPrefix) return bad();
  std::string_view rest = selector.substr(kPrefix.size());
  const size_t dots = rest.find("..");
  const std::string_view from = rest.substr(0, dots);
  const std::string_view to = dots == std::string_view::npos ? from : rest.substr(dots + 2);
  auto day = [](std::string_view d) -> std::optional<Nanos> {
    if (d.size() != 10 || d[4] != '-' || d[7] != '-') return std::nullopt;
    for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
      if (d[i] < '0' || d[i] > '9') return std::nullopt;
    std::tm tm{};
    tm.tm_year = std::stoi(std::string(d.substr(0, 4))) - 1900;
    tm.tm_mon = std::stoi(std::string(d.substr(5, 2))) - 1;
    tm.tm_mday = std::stoi(std::string(d.substr(8, 2)));
    if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31) return std::nullopt;
    const int mday = tm.tm_mday, mon = tm.tm_mon;
    const std::time_t t = timegm(&tm);
    if (tm.tm_mday != mday || tm.tm_mon != mon) return std::nullopt;  // 2026-02-30
    return static_cast<Nanos>(t) * kNsPerSec;
  };
  auto a = day(from), b = day(to);
  if (!a || !b || *b < *a) return bad();
  filter.since = *a;
  filter.until = *b + 86400 * kNsPerSec;
  return OkStatus();
}

Status ParseTagSelector(std::string_view selector, RunFilter& filter) {
  constexpr std::string_view kPrefix = "tag:";
  if (selector.substr(0, kPrefix.size()) != kPrefix) {
    return InvalidArgumentError("run selector '" + std::string(selector) +
                                "': expected tag:KEY=VALUE[,KEY=VALUE...]");
  }
  std::string_view rest = selector.substr(kPrefix.size());
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgumentError("run selector '" + std::string(selector) + "': '" +
                                  std::string(item) + "' is not KEY=VALUE");
    }
    filter.tags[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (filter.tags.empty()) {
    return InvalidArgumentError("run selector '" + std::string(selector) + "' names no tag");
  }
  return OkStatus();
}

}  // namespace fl::reports
