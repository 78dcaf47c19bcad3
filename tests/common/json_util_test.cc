#include "common/json_util.h"

#include <catch2/catch.hpp>

namespace fl {
namespace {

TEST_CASE("json: parse errors carry line and column", "[unit]") {
  auto ok = ParseJson(R"({"a": 1, "b": [1,2]})", "x.json");
  REQUIRE(ok.ok());
  CHECK((*ok)["b"][1] == 2);
  auto bad = ParseJson("{\n  \"a\": 1,\n  \"b\": ]\n}", "y.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == Code::kInvalidArgument);
  CHECK(bad.status().message().rfind("y.json:3:8: parse error", 0) == 0);
}

TEST_CASE("json: typed getter names the key", "[unit]") {
  auto j = ParseJson(R"({"rank": 3, "host": "h0"})", "msg");
  REQUIRE(j.ok());
  CHECK(*JsonGet<int>(*j, "rank", "msg") == 3);
  auto wrong = JsonGet<int>(*j, "host", "msg");
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message().find("key 'host'") != std::string::npos);
  CHECK(JsonGet<int>(*j, "nic", "msg").status().message() == "msg: missing key 'nic'");
}

}  // namespace
}  // namespace fl
