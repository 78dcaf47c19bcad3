#include "harness/agent/telemetry_line.h"

#include <catch2/catch.hpp>

namespace fl::harness {
namespace {

TEST_CASE("telemetry line: what the workers write is read back", "[unit]") {
  auto s = ParseTelemetryLine(
      R"({"t":"sample","rank":3,"it":17,"start":100,"end":250,"bytes":4096,"verified":true,)"
      R"("mismatch":false})"
      "\n");
  REQUIRE(s.ok());
  const auto* smp = std::get_if<TelemetrySample>(&*s);
  REQUIRE(smp);
  CHECK(smp->rank == 3);
  CHECK(smp->iteration == 17);
  CHECK(smp->end_wall_ns == 250);
  CHECK(smp->bytes == 4096);
  CHECK(smp->verified);

  auto w = ParseTelemetryLine(
      R"({"t":"worker","rank":1,"wall":5,"kind":"worker_exit","detail":{"code":0}})");
  REQUIRE(w.ok());
  const auto* ev = std::get_if<TelemetryEvent>(&*w);
  REQUIRE(ev);
  CHECK(ev->kind == "worker_exit");
  CHECK(ev->rank == 1);
  CHECK(ev->detail_json == R"({"code":0})");

  auto c = ParseTelemetryLine(R"({"t":"ccl","rank":2,"e":{"type":"fault_detected","wall_ns":9}})");
  REQUIRE(c.ok());
  ev = std::get_if<TelemetryEvent>(&*c);
  REQUIRE(ev);
  CHECK(ev->kind == "fault_detected");
  CHECK(ev->rank == 2);  // the line's rank when the event has none
  CHECK(ev->wall_ns == 9);
}

TEST_CASE("telemetry line: bad lines are errors that say why, never exceptions", "[unit]") {
  // The line that once ended the coordinator: an agent-only kind with a string exit code.
  auto forged =
      ParseTelemetryLine(R"({"t":"worker","rank":0,"kind":"rank_exit","detail":{"code":"x"}})");
  REQUIRE_FALSE(forged.ok());
  CHECK(forged.status().code() == Code::kInvalidArgument);
  CHECK(forged.status().message().find("rank_exit") != std::string::npos);

  const char* bad[] = {
      "",
      "not json",
      "[1,2]",
      R"({"t":5})",
      R"({"t":"nope"})",
      R"({"rank":0})",
      R"({"t":"sample","rank":"0","it":1,"start":1,"end":2})",
      R"({"t":"sample","rank":-1,"it":1,"start":1,"end":2})",
      R"({"t":"sample","rank":99999999,"it":1,"start":1,"end":2})",
      R"({"t":"sample","rank":0,"it":-1,"start":1,"end":2})",
      R"({"t":"sample","rank":0,"it":1.5,"start":1,"end":2})",
      R"({"t":"sample","rank":0,"it":1,"start":1})",
      R"({"t":"sample","rank":0,"it":1,"start":1,"end":2,"verified":1})",
      R"({"t":"sample","rank":0,"it":18446744073709551615,"start":1,"end":2})",
      R"({"t":"worker","rank":0,"kind":"a b"})",
      R"({"t":"worker","rank":0,"kind":""})",
      R"({"t":"worker","rank":0,"kind":"x","detail":[1]})",
      R"({"t":"worker","rank":0,"kind":"x","wall":"now"})",
      R"({"t":"worker","rank":0,"kind":"telemetry_dropped"})",
      R"({"t":"ccl","rank":0})",
      R"({"t":"ccl","rank":0,"e":"x"})",
      R"({"t":"ccl","rank":0,"e":{"type":7}})",
      R"({"t":"ccl","rank":0,"e":{"type":"rank_exit"}})",
      R"({"t":"ccl","rank":0,"e":{"type":"x","rank":-5}})",
  };
  for (const char* line : bad) {
    INFO(line);
    auto r = ParseTelemetryLine(line);
    CHECK_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
  }
  std::string huge = R"({"t":"worker","rank":0,"kind":"x","detail":{"s":")" +
                     std::string(kMaxTelemetryLineBytes, 'a') + "\"}}";
  CHECK_FALSE(ParseTelemetryLine(huge).ok());
  CHECK_FALSE(ParseTelemetryLine(std::string(1000, '[')).ok());
  CHECK_FALSE(ParseTelemetryLine("{\"t\":\"worker\",\"kind\":\"\xff\"}").ok());
}

TEST_CASE("telemetry: rank_exit detail is read with type and range checks", "[unit]") {
  CHECK(ParseRankExitDetail(R"({"code":0,"container":"c"})").value() == 0);
  CHECK(ParseRankExitDetail(R"({"code":3})").value() == 3);
  CHECK(ParseRankExitDetail(R"({"signal":9})").value() == -9);
  CHECK(ParseRankExitDetail(R"({})").value() == -9);
  for (const char* d : {R"({"code":"x"})", R"({"code":-1})", R"({"code":256})",
                        R"({"signal":"KILL"})", R"({"signal":0})", "[]", "x", ""}) {
    INFO(d);
    CHECK_FALSE(ParseRankExitDetail(d).ok());
  }
}

}  // namespace
}  // namespace fl::harness
