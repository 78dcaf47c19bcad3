// The parts of a target's name (common/ids.h; run ids are tested in rng_test.cc).
#include "common/ids.h"

#include <catch2/catch.hpp>

namespace fl {
namespace {

TEST_CASE("ids: the parts of a target's name", "[unit]") {
  using P = std::vector<std::string_view>;
  CHECK(TargetParts("h1.nic0") == P{"h1", "nic0"});
  CHECK(TargetParts("leaf0:swp3") == P{"leaf0", "swp3"});
  CHECK(TargetParts("h1/nic0.rx") == P{"h1", "nic0", "rx"});
  CHECK(TargetParts("..h1//") == P{"h1"});
  CHECK(TargetParts("").empty());
}

}  // namespace
}  // namespace fl
