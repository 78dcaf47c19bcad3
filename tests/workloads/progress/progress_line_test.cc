// ParseProgressLine: the progress line protocol (docs/scenarios.md, "Progress protocol").
#include <catch2/catch.hpp>

#include "workloads/progress/progress.h"

namespace fl::workloads::progress {
namespace {

TEST_CASE("progress line: the fields", "[unit]") {
  auto p = ParseProgressLine("it=12 bytes=4194304 ok=1 t=1764547200123456789 dur=2500000");
  REQUIRE(p.ok());
  CHECK(p->iteration == 12);
  CHECK(p->bytes == 4194304);
  CHECK(p->verified_ok == std::optional<bool>(true));
  CHECK(p->wall_ns == 1764547200123456789);
  CHECK(p->duration_ns == 2500000);

  auto minimal = ParseProgressLine("bytes=0 it=0\n");
  REQUIRE(minimal.ok());
  CHECK_FALSE(minimal->verified_ok.has_value());
  CHECK(minimal->wall_ns == 0);
  CHECK(minimal->duration_ns == 0);

  auto wrong = ParseProgressLine("  it=3\tbytes=8 ok=0  ");
  REQUIRE(wrong.ok());
  CHECK(wrong->verified_ok == std::optional<bool>(false));
}

TEST_CASE("progress line: unknown keys are ignored", "[unit]") {
  auto p = ParseProgressLine("it=1 bytes=2 loss=0.25 epoch=3 loss=0.5 rank=7");
  REQUIRE(p.ok());
  CHECK(p->iteration == 1);
  CHECK(p->bytes == 2);
}

TEST_CASE("progress line: bad lines name the field", "[unit]") {
  struct Case {
    const char* line;
    const char* names;
  };
  const Case cases[] = {
      {"", "empty"},
      {"bytes=8", "it="},
      {"it=1", "bytes="},
      {"it=1 it=2 bytes=3", "repeated field it"},
      {"it=1 bytes=3 ok=1 ok=1", "repeated field ok"},
      {"it=x bytes=3", "it"},
      {"it=-1 bytes=3", "it"},
      {"it=1 bytes=3.5", "bytes"},
      {"it=1 bytes=", "bytes"},
      {"it=1 bytes=99999999999999999999999", "bytes"},
      {"it=1 bytes=2 ok=yes", "ok must be 0 or 1"},
      {"it=1 bytes=2 ok=2", "ok must be 0 or 1"},
      {"it=1 bytes=2 t=0", "t out of range"},
      {"it=1 bytes=2 t=18446744073709551615", "t out of range"},
      {"it=1 bytes=2 t=1.5", "t"},
      {"it=1 bytes=2 dur=9223372036854775808", "dur out of range"},
      {"it=1 bytes=2 garbage", "key=value"},
      {"it=1 bytes=2 =5", "key=value"},
  };
  for (const Case& c : cases) {
    INFO(c.line);
    auto p = ParseProgressLine(c.line);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == Code::kInvalidArgument);
    CHECK(p.status().message().find(c.names) != std::string::npos);
  }
}

}  // namespace
}  // namespace fl::workloads::progress
