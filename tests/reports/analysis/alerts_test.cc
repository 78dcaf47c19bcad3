// Alerts files of `faultline score` (reports/analysis/alerts.h): a detector's own lines and
// Alertmanager's webhook notifications, repeats folded into one alert, errors that say where.
#include "reports/analysis/alerts.h"

#include <catch2/catch.hpp>

#include <string>

namespace fl::reports::analysis {
namespace {

constexpr Nanos kT = 1'796'582'998 * kNsPerSec;  // 2026-12-06T18:49:58Z

TEST_CASE("alerts: own lines and Alertmanager notifications, repeats folded", "[unit]") {
  auto set = ParseAlerts(
      "# a comment, then a blank line\n"
      "\n"
      R"({"detector": "carrier", "time_ns": 1796583003000000000, "target": "h1.nic0"})"
      "\n"
      R"({"detector": "stall", "time": "2026-12-06T18:49:59.5Z", "end": "2026-12-06T18:50:00Z"})"
      "\n"
      // firing, the same firing again (a repeat), then resolved
      R"({"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"LossHigh","host":"h2","job":"node"},"startsAt":"2026-12-06T19:50:01.25+01:00","endsAt":"0001-01-01T00:00:00Z","fingerprint":"f1"}]})"
      "\n"
      R"({"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"LossHigh","host":"h2","job":"node"},"startsAt":"2026-12-06T18:50:01.25Z","endsAt":"2026-12-06T18:55:00Z","fingerprint":"f1"}]})"
      "\n"
      R"({"version":"4","status":"resolved","alerts":[{"status":"resolved","labels":{"alertname":"LossHigh","host":"h2","job":"node"},"startsAt":"2026-12-06T18:50:01.25Z","endsAt":"2026-12-06T18:50:09Z","fingerprint":"f1"},{"status":"firing","labels":{"alertname":"LossHigh","faultline_target":"leaf0:swp3","host":"h9"},"startsAt":"2026-12-06T18:50:02Z"}]})"
      "\n",
      "a.jsonl");
  REQUIRE(set.ok());
  CHECK(set->copies == 6);
  REQUIRE(set->alerts.size() == 4);
  const auto& stall = set->alerts[0];
  CHECK(stall.detector == "stall");
  CHECK(stall.start_ns == kT + 1500 * kNsPerMs);
  CHECK(stall.end_ns == kT + 2 * kNsPerSec);
  CHECK(stall.target.empty());
  CHECK(stall.where == "a.jsonl:4");
  const auto& loss = set->alerts[1];
  CHECK(loss.detector == "LossHigh");
  CHECK(loss.start_ns == kT + 3250 * kNsPerMs);
  // Only the resolved copy's end is an end (a firing one's endsAt is an expiry).
  CHECK(loss.end_ns == kT + 11 * kNsPerSec);
  CHECK(loss.target == "h2");
  CHECK(loss.where == "a.jsonl:5");
  CHECK(set->alerts[2].target == "leaf0:swp3");  // faultline_target wins over host
  CHECK_FALSE(set->alerts[2].end_ns);
  CHECK(set->alerts[3].detector == "carrier");
  CHECK(set->alerts[3].start_ns == kT + 5 * kNsPerSec);
}

TEST_CASE("alerts: bad lines say where and what", "[unit]") {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"{\"detector\": \"x\"}\n", "a.jsonl:1: missing key 'time'"},
      {"\n{\"detector\": \"x\", \"time\": \"yesterday\"}\n", "a.jsonl:2: 'time'"},
      {"{\"detector\": \"x\", \"time_ns\": -4}\n", "'time_ns' is negative"},
      {"{\"detector\": \"x\", \"time_ns\": 1, \"time\": \"2026-12-06T18:49:58Z\"}\n", "not both"},
      {"{\"detector\": \"x\", \"time_ns\": 1, \"severity\": 3}\n", "unknown key 'severity'"},
      {"{\"detector\": \"\", \"time_ns\": 1}\n", "'detector' must be 1 to 256"},
      {"[1, 2]\n", "a.jsonl:1: expected a JSON object"},
      {"{\"alerts\": 3}\n", "'alerts' must be an array"},
      {"{\"alerts\": [{\"labels\": {\"job\": \"x\"}, \"startsAt\": \"2026-12-06T18:49:58Z\"}]}\n",
       "alerts[0]: labels without 'alertname'"},
      {"{\"alerts\": [{\"labels\": {\"alertname\": \"x\"}}]}\n", "missing key 'startsAt'"},
      {"{\"alerts\": [{\"labels\": {\"alertname\": \"x\"}, \"startsAt\": "
       "\"0001-01-01T00:00:00Z\"}]}\n",
       "before 1970"},
      {"{\"detector\": \"x\", \"time_ns\": 1\n", "a.jsonl:1"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto set = ParseAlerts(c.text, "a.jsonl");
    REQUIRE_FALSE(set.ok());
    CHECK(set.status().code() == Code::kInvalidArgument);
    CHECK_THAT(set.status().message(), Catch::Contains(c.says));
  }
  auto empty = ParseAlerts("", "a.jsonl");
  REQUIRE(empty.ok());
  CHECK(empty->alerts.empty());
}

TEST_CASE("alerts: the alerting rules of a Prometheus rules file", "[unit]") {
  auto names = ParseAlertRuleNames(
      "groups:\n"
      "  - name: fabric\n"
      "    rules:\n"
      "      - record: job:loss:rate1m\n"
      "        expr: rate(x[1m])\n"
      "      - alert: LossHigh\n"
      "        expr: job:loss:rate1m > 0.01\n"
      "        for: 5s\n"
      "      - alert: NeverFires\n"
      "        expr: vector(0) > 1\n"
      "  - name: other\n"
      "    rules:\n"
      "      - alert: LossHigh\n"
      "        expr: y > 1\n",
      "rules.yml");
  REQUIRE(names.ok());
  CHECK(*names == std::vector<std::string>{"LossHigh", "NeverFires"});
  auto none = ParseAlertRuleNames("groups: []\n", "rules.yml");
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.status().message(), Catch::Contains("rules.yml:1:1: no alerting rule"));
  auto wrong = ParseAlertRuleNames("scrape_configs: []\n", "prometheus.yml");
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(wrong.status().message(), Catch::Contains("not a Prometheus rules file"));
}

}  // namespace
}  // namespace fl::reports::analysis
