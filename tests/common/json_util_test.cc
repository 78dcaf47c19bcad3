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

TEST_CASE("json: typed getters check type and range and never throw", "[unit]") {
  auto j = ParseJson(
      R"({"code": "x", "big": 4294967296, "neg": -1, "f": 1.5, "ok": 7, "b": true,
          "m": {"a": "1", "b": 2}, "v": ["a", 3], "n": null})",
      "sock");
  REQUIRE(j.ok());
  auto code = JsonGet<int>(*j, "code", "sock");
  REQUIRE_FALSE(code.ok());
  CHECK(code.status().code() == Code::kInvalidArgument);
  CHECK(code.status().message() == "sock: key 'code': expected an integer, got string");
  CHECK_FALSE(JsonGet<int>(*j, "big", "sock").ok());
  CHECK(JsonGet<int64_t>(*j, "big", "sock").value() == 4294967296LL);
  CHECK_FALSE(JsonGet<uint32_t>(*j, "neg", "sock").ok());
  CHECK_FALSE(JsonGet<uint64_t>(*j, "neg", "sock").ok());
  CHECK_FALSE(JsonGet<int>(*j, "f", "sock").ok());  // a float is not an integer
  CHECK(JsonGet<double>(*j, "ok", "sock").value() == 7.0);
  CHECK_FALSE(JsonGet<bool>(*j, "ok", "sock").ok());
  CHECK(JsonGet<bool>(*j, "b", "sock").value());
  CHECK_FALSE(JsonGet<std::string>(*j, "ok", "sock").ok());
  CHECK_FALSE((JsonGet<std::map<std::string, std::string>>(*j, "m", "sock").ok()));
  CHECK_FALSE(JsonGet<std::vector<std::string>>(*j, "v", "sock").ok());
  // Optional: absent or null is the fallback; present and wrong is an error.
  CHECK(JsonGetOr<int>(*j, "absent", 5, "sock").value() == 5);
  CHECK(JsonGetOr<int>(*j, "n", 5, "sock").value() == 5);
  CHECK_FALSE(JsonGetOr<int>(*j, "code", 5, "sock").ok());
  CHECK(JsonGetInRange<int>(*j, "ok", 0, 10, "sock").value() == 7);
  auto range = JsonGetInRange<int>(*j, "ok", 0, 3, "sock");
  REQUIRE_FALSE(range.ok());
  CHECK(range.status().message() == "sock: key 'ok': 7 is outside 0..3");
  CHECK_FALSE(JsonGet<int>(nlohmann::json::array(), "x", "sock").ok());
}

TEST_CASE("json: nesting deeper than the limit is refused with its location", "[unit]") {
  std::string deep(kMaxJsonDepth + 1, '[');
  auto r = ParseJson(deep + std::string(kMaxJsonDepth + 1, ']'), "f");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().rfind("f:1:" + std::to_string(kMaxJsonDepth + 1) + ": nested", 0) ==
        0);
  std::string ok(kMaxJsonDepth, '[');
  CHECK(ParseJson(ok + std::string(kMaxJsonDepth, ']'), "f").ok());
  CHECK(ParseJson(
            R"({"s": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})", "f")
            .ok());  // brackets inside a string do not nest
}

}  // namespace
}  // namespace fl
