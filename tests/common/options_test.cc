#include "common/options.h"

#include <catch2/catch.hpp>

namespace fl {
namespace {

OptionSchema TestSchema() {
  using T = OptionType;
  return OptionSchema("demo", {
                                  {"count", T::kInt, 1, 64, {}, "1", "how many"},
                                  {"size", T::kBytes, 1024, 1ll << 30, {}, "4096", "how big"},
                                  {"wait_ms", T::kDurationMs, 1, 60000, {}, "300", "how long"},
                                  {"fast", T::kBool, 0, 0, {}, "false", "go fast"},
                                  {"mode", T::kEnum, 0, 0, {"a", "b"}, "a", "which"},
                                  {"label", T::kString, 0, 0, {}, "", "free text"},
                              });
}

TEST_CASE("options: typed values from text", "[unit]") {
  auto v = TestSchema().Parse({{"count", "8"},
                               {"size", "1MiB"},
                               {"wait_ms", "1.5s"},
                               {"fast", "true"},
                               {"mode", "b"},
                               {"label", "x y"}});
  REQUIRE(v.ok());
  CHECK(v->Int("count") == 8);
  CHECK(v->Bytes("size") == (1u << 20));
  CHECK(v->Duration("wait_ms") == 1500 * kNsPerMs);
  CHECK(v->Bool("fast") == true);
  CHECK(v->Text("mode") == "b");
  CHECK(v->Text("label") == "x y");
  CHECK(v->texts().at("size") == "1MiB");  // as given, for storing
  // A bare number is milliseconds; options not given are absent (the plug-in's default).
  auto bare = TestSchema().Parse({{"wait_ms", "900"}});
  REQUIRE(bare.ok());
  CHECK(bare->Duration("wait_ms") == 900 * kNsPerMs);
  CHECK_FALSE(bare->Has("count"));
  CHECK_FALSE(bare->Int("count").has_value());
  CHECK_FALSE(bare->Int("wait_ms").has_value());  // wrong getter for the type
}

TEST_CASE("options: WithDefaults completes the given values from the schema's defaults", "[unit]") {
  auto given = TestSchema().Parse({{"count", "8"}});
  REQUIRE(given.ok());
  auto all = TestSchema().WithDefaults(*given);
  REQUIRE(all.ok());
  CHECK(all->Int("count") == 8);  // given wins
  CHECK(all->Bytes("size") == 4096u);
  CHECK(all->Duration("wait_ms") == 300 * kNsPerMs);
  CHECK(all->Bool("fast") == false);
  CHECK(all->Text("mode") == "a");
  CHECK_FALSE(all->Has("label"));  // no default: still absent
  // Values parsed against another schema are checked again against this one.
  auto other = OptionSchema("other", {{"count", OptionType::kInt, 0, 1000, {}, "", "n"}})
                   .Parse({{"count", "500"}});
  REQUIRE(other.ok());
  auto bad = TestSchema().WithDefaults(*other);
  REQUIRE(bad.status().code() == Code::kInvalidArgument);
  CHECK(bad.status().message() == "demo option count must be within 1..64, not 500");
}

TEST_CASE("options: unknown and out-of-range values are InvalidArgument naming them", "[unit]") {
  const OptionSchema s = TestSchema();
  auto unknown = s.Parse({{"cnt", "3"}});
  REQUIRE(unknown.status().code() == Code::kInvalidArgument);
  CHECK(unknown.status().message() ==
        "unknown demo option 'cnt' (known: count, size, wait_ms, fast, mode, label)");
  CHECK(s.Check("count", "0") == "demo option count must be within 1..64, not 0");
  CHECK(s.Check("count", "65") == "demo option count must be within 1..64, not 65");
  CHECK(s.Check("count", "3x") == "demo option count wants an integer, got '3x'");
  CHECK(s.Check("size", "512") != "");
  CHECK(s.Check("size", "lots") == "demo option size wants a size, got 'lots'");
  CHECK(s.Check("wait_ms", "2m") != "");  // 120000 ms > 60000
  CHECK(s.Check("wait_ms", "0.5ms") == "demo option wait_ms wants whole milliseconds, got '0.5ms'");
  CHECK(s.Check("fast", "yes") == "demo option fast wants true or false, got 'yes'");
  CHECK(s.Check("mode", "c") == "demo option mode wants a, b, got 'c'");
  CHECK(s.Check("label", "") == "");
  CHECK(OptionSchema("none", {}).Check("x", "1") == "none takes no options (got 'x')");
}

TEST_CASE("options: ranges and types print for listings", "[unit]") {
  const OptionSchema s = TestSchema();
  CHECK(s.Find("count")->RangeText() == "1..64");
  CHECK(s.Find("mode")->RangeText() == "a|b");
  CHECK(s.Find("fast")->RangeText() == "true|false");
  CHECK(OptionTypeName(s.Find("wait_ms")->type) == "duration-ms");
  CHECK(s.Find("label")->RangeText().empty());
}

TEST_CASE("options: from the environment over defaults, checked", "[unit]") {
  const OptionSchema s = TestSchema();
  std::map<std::string, std::string> env = {{"DEMO_COUNT", "5"}};
  auto getenv = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto v = s.FromEnvironment("DEMO_", {{"count", "2"}, {"wait_ms", "7"}, {"other", "1"}}, getenv);
  REQUIRE(v.ok());
  CHECK(v->Int("count") == 5);  // the environment wins over the tool's default
  CHECK(v->Duration("wait_ms") == 7 * kNsPerMs);
  CHECK_FALSE(v->Has("other"));
  env.insert_or_assign("DEMO_COUNT", std::string(1, '0'));
  auto bad = s.FromEnvironment("DEMO_", {}, getenv);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("count must be within 1..64") != std::string::npos);
}

TEST_CASE("options: key=value", "[unit]") {
  auto kv = SplitKeyValue("a=b=c");
  REQUIRE(kv.ok());
  CHECK(kv->first == "a");
  CHECK(kv->second == "b=c");
  CHECK_FALSE(SplitKeyValue("novalue").ok());
  CHECK_FALSE(SplitKeyValue("=x").ok());
}

}  // namespace
}  // namespace fl
