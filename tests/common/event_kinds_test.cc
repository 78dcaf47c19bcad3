#include "common/event_kinds.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

namespace fl::events {
namespace {

TEST_CASE("event kinds: one table, each name once, anchors in the order of a fault", "[unit]") {
  std::set<std::string_view> seen;
  for (const auto& k : AllKinds()) {
    INFO(std::string(k.name));
    CHECK(seen.insert(k.name).second);
    CHECK_FALSE(k.meaning.empty());
    CHECK(Find(k.name) == &k);
  }
  CHECK(Find("no_such_event") == nullptr);
  CHECK(AnchorNames() == std::vector<std::string_view>{kInjected, kFaultDetected, kFailoverDone,
                                                       kReverted, kPathRestored});
  CHECK(IsRecovery(kFaultDetected));
  CHECK(IsRecovery(kPathRestored));
  CHECK_FALSE(IsRecovery(kInjected));
  CHECK_FALSE(IsRecovery("no_such_event"));
  // Recovery steps are the CCL's own.
  for (const auto& k : AllKinds())
    if (k.recovery) CHECK(k.source == Source::kCcl);
}

}  // namespace
}  // namespace fl::events
