// Directions, tolerances and verdicts of reports/compare, on synthetic run sets.
#include "reports/compare/compare.h"

#include <catch2/catch.hpp>

#include <set>

#include "reports/compare/metric_policy.h"

namespace fl::reports::compare {
namespace {

using V = std::vector<double>;

TEST_CASE("each metric knows which direction is worse", "[unit]") {
  CHECK(DefaultPolicy("detection_latency_ms").direction == Direction::kLowerIsBetter);
  CHECK(DefaultPolicy("recovery_ms").direction == Direction::kLowerIsBetter);
  CHECK(DefaultPolicy("throughput_loss_s").direction == Direction::kLowerIsBetter);
  CHECK(DefaultPolicy("mismatches").direction == Direction::kLowerIsBetter);
  CHECK(DefaultPolicy("baseline_algbw").direction == Direction::kHigherIsBetter);
  CHECK(DefaultPolicy("degraded_ratio").direction == Direction::kHigherIsBetter);
  CHECK(DefaultPolicy("detected").direction == Direction::kHigherIsBetter);
  CHECK(DefaultPolicy("ranks").direction == Direction::kNeutral);
  CHECK(DefaultPolicy("complete_iterations").direction == Direction::kNeutral);
  CHECK(DefaultPolicy("no_such_metric").direction == Direction::kNeutral);
}

TEST_CASE("a tolerance allows the larger of its absolute and relative parts", "[unit]") {
  Tolerance t{0.2, 50};
  CHECK(t.Allowed(100) == 50);
  CHECK(t.Allowed(1000) == Approx(200));
  CHECK(t.Allowed(-1000) == Approx(200));
  CHECK(Tolerance{0.1, std::nullopt}.Allowed(300) == Approx(30));
  CHECK(Tolerance{}.Allowed(300) == 0);
  CHECK(t.ToString() == "20% or 50");
}

TEST_CASE("tolerance text: relative - absolute - both - bad ones refused", "[unit]") {
  auto r = ParseTolerance("20%");
  REQUIRE(r.ok());
  CHECK(*r == Tolerance{0.2, std::nullopt});
  r = ParseTolerance("50");
  REQUIRE(r.ok());
  CHECK(*r == Tolerance{std::nullopt, 50});
  r = ParseTolerance("12.5%,0.3");
  REQUIRE(r.ok());
  CHECK(*r->relative == Approx(0.125));
  CHECK(*r->absolute == Approx(0.3));
  for (const char* bad : {"", "-5", "abc", "20%,30%", "5,6", "20%,", "%"})
    CHECK_FALSE(ParseTolerance(bad).ok());
  PolicyTable table;
  REQUIRE(ParseToleranceFlag("recovery_ms=10%", table).ok());
  CHECK(table.Get("recovery_ms").tolerance == Tolerance{0.1, std::nullopt});
  CHECK(table.Get("recovery_ms").direction == Direction::kLowerIsBetter);
  CHECK(table.Get("failover_ms").tolerance == DefaultPolicy("failover_ms").tolerance);
  CHECK_FALSE(ParseToleranceFlag("recovery_ms", table).ok());
  CHECK_FALSE(ParseToleranceFlag("=5", table).ok());
}

MetricComparison Judge(const char* name, V a, V b) {
  return CompareMetric("g", std::string("f0/") + name, "ms", std::move(a), std::move(b),
                       DefaultPolicy(name), {});
}

TEST_CASE("verdicts: worse beyond tolerance regresses - better improves - small is changed",
          "[unit]") {
  V base{300, 310, 295, 305, 302};
  // lower is better; tolerance 25% or 50 ms -> 75 ms here
  auto m = Judge("detection_latency_ms", base, V{900, 910, 880, 905, 899});
  CHECK(m.verdict == Verdict::kRegressed);
  CHECK(m.median_a == 302);
  CHECK(m.median_b == 900);
  CHECK(m.diff == 598);
  CHECK(m.allowed == Approx(75.5));
  CHECK(m.ci.lo > 0);
  m = Judge("detection_latency_ms", V{900, 910, 880, 905, 899}, base);
  CHECK(m.verdict == Verdict::kImproved);
  // a real but small shift (+30 ms, all above): the interval excludes 0, within tolerance
  m = Judge("detection_latency_ms", base, V{330, 340, 325, 335, 332});
  CHECK_FALSE(m.ci.Contains(0));
  CHECK(m.verdict == Verdict::kChanged);
  // overlapping noise: same, however large the median difference looks
  m = Judge("detection_latency_ms", V{100, 900, 120, 880, 300}, V{110, 905, 700, 890, 95});
  CHECK(m.ci.Contains(0));
  CHECK(m.verdict == Verdict::kSame);
}

TEST_CASE("verdicts: higher-is-better metrics regress downwards - neutral ones never", "[unit]") {
  V fast{1.00e8, 1.02e8, 0.99e8, 1.01e8, 1.00e8};
  V slow{0.70e8, 0.72e8, 0.69e8, 0.71e8, 0.70e8};
  CHECK(Judge("baseline_algbw", fast, slow).verdict == Verdict::kRegressed);
  CHECK(Judge("baseline_algbw", slow, fast).verdict == Verdict::kImproved);
  CHECK(Judge("degraded_ratio", V{0.5, 0.5, 0.52}, V{0.2, 0.21, 0.2}).verdict ==
        Verdict::kRegressed);
  CHECK(Judge("complete_iterations", V{100, 100}, V{10, 11}).verdict == Verdict::kInfo);
  // a bool that went from always to never
  CHECK(Judge("detected", V{1, 1, 1, 1, 1}, V{0, 0, 0, 0, 0}).verdict == Verdict::kRegressed);
  // a count that must stay 0
  CHECK(Judge("mismatches", V{0, 0, 0}, V{2, 3, 2}).verdict == Verdict::kRegressed);
}

RunMetricSet Run(const std::string& id, Nanos start, const std::string& scenario,
                 std::map<std::string, double> values) {
  RunMetricSet s;
  s.run.id = id;
  s.run.scenario_name = scenario;
  s.run.start_wall_ns = start;
  s.run.status = RunStatus::kPassed;
  s.group = scenario;
  s.values = std::move(values);
  for (const auto& [k, v] : s.values) s.units[k] = "u";
  return s;
}

// Five runs per side; B has a slower detection (and so a slower first progress) and the same
// throughput within noise.
std::pair<std::vector<RunMetricSet>, std::vector<RunMetricSet>> AbSets() {
  std::vector<RunMetricSet> a, b;
  V det_a{310, 305, 320, 300, 315}, det_b{1510, 1490, 1530, 1500, 1520};
  V bw_a{1.00e8, 1.03e8, 0.98e8, 1.01e8, 0.99e8}, bw_b{0.99e8, 1.02e8, 1.00e8, 0.97e8, 1.01e8};
  for (int i = 0; i < 5; ++i) {
    a.push_back(Run("a" + std::to_string(i), i, "blackhole",
                    {{"baseline_algbw", bw_a[i]},
                     {"ranks", 4},
                     {"f0/detection_latency_ms", det_a[i]},
                     {"f0/time_to_first_progress_ms", det_a[i] + 200 + i},
                     {"f0/degraded_ratio", 0.5 + 0.01 * i}}));
    b.push_back(Run("b" + std::to_string(i), 100 + i, "blackhole",
                    {{"baseline_algbw", bw_b[i]},
                     {"ranks", 4},
                     {"f0/detection_latency_ms", det_b[i]},
                     {"f0/time_to_first_progress_ms", det_b[i] + 210 - i},
                     {"f0/degraded_ratio", 0.51 - 0.01 * i}}));
  }
  return {a, b};
}

std::set<std::string> Flagged(const Comparison& c) {
  std::set<std::string> out;
  for (const auto* r : c.Regressions()) out.insert(r->key);
  return out;
}

TEST_CASE("compare flags exactly the metrics that got worse", "[unit]") {
  auto [a, b] = AbSets();
  Comparison c = Compare(a, b, {}, "tag:fw=1", "tag:fw=2");
  CHECK(Flagged(c) ==
        std::set<std::string>{"f0/detection_latency_ms", "f0/time_to_first_progress_ms"});
  CHECK(c.runs_a.size() == 5);
  CHECK(c.runs_b.size() == 5);
  CHECK(c.rows.size() == 5);
  for (const auto& r : c.rows) {
    if (r.key == "ranks") CHECK(r.verdict == Verdict::kInfo);
    if (r.key == "baseline_algbw") CHECK(r.verdict == Verdict::kSame);
  }
  // the reverse comparison: the same metrics improved, nothing regressed
  Comparison rev = Compare(b, a, {});
  CHECK(Flagged(rev).empty());
  CHECK(rev.Count(Verdict::kImproved) == 2);
  // deterministic
  Comparison again = Compare(a, b, {}, "tag:fw=1", "tag:fw=2");
  REQUIRE(again.rows.size() == c.rows.size());
  for (size_t i = 0; i < c.rows.size(); ++i) {
    CHECK(again.rows[i].ci.lo == c.rows[i].ci.lo);
    CHECK(again.rows[i].ci.hi == c.rows[i].ci.hi);
  }
}

TEST_CASE("compare: tolerances and metric selection change what is flagged", "[unit]") {
  auto [a, b] = AbSets();
  CompareOptions o;
  o.policies.SetTolerance("detection_latency_ms", {std::nullopt, 5000});
  CHECK(Flagged(Compare(a, b, o)) == std::set<std::string>{"f0/time_to_first_progress_ms"});
  CompareOptions only;
  only.metrics = {"detection_latency_ms", "baseline_algbw"};
  Comparison c = Compare(a, b, only);
  CHECK(c.rows.size() == 2);
  CHECK(Flagged(c) == std::set<std::string>{"f0/detection_latency_ms"});
  CompareOptions by_key;
  by_key.metrics = {"f0/time_to_first_progress_ms"};
  CHECK(Compare(a, b, by_key).rows.size() == 1);
}

TEST_CASE("compare: groups and metrics present on one side only are reported - not judged",
          "[unit]") {
  auto [a, b] = AbSets();
  a.push_back(Run("x", 50, "nic_flap", {{"f0/detection_latency_ms", 5}}));
  b[0].values.erase("f0/degraded_ratio");  // four of five still have it
  for (auto& r : b) r.values["f0/failover_ms"] = 400;
  Comparison c = Compare(a, b, {});
  REQUIRE(c.notes.size() == 1);
  CHECK(c.notes[0].find("nic_flap") != std::string::npos);
  bool saw_missing = false;
  for (const auto& r : c.rows) {
    if (r.key == "f0/failover_ms") {
      CHECK(r.verdict == Verdict::kMissing);
      saw_missing = true;
    }
    if (r.key == "f0/degraded_ratio") CHECK(r.b.size() == 4);
  }
  CHECK(saw_missing);
  CHECK(Flagged(c).count("f0/failover_ms") == 0);
}

TEST_CASE("renderings carry the verdicts", "[unit]") {
  auto [a, b] = AbSets();
  Comparison c = Compare(a, b, {}, "tag:fw=22.39", "tag:fw=22.41");
  std::string text = RenderText(c);
  CHECK(text.find("REGRESSED blackhole f0/detection_latency_ms") != std::string::npos);
  CHECK(text.find("2 regressed") != std::string::npos);
  std::string md = RenderMarkdown(c);
  CHECK(md.find("| group | metric |") != std::string::npos);
  CHECK(md.find("**2 metric(s) regressed.**") != std::string::npos);
  CHECK(md.find("**REGRESSED**") != std::string::npos);
  Comparison esc = c;
  esc.rows[0].group = "<script>";
  std::string html = RenderHtml(esc);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("<tr class=\"REGRESSED\">") != std::string::npos);
  CHECK(html.find("&lt;script&gt;") != std::string::npos);
  CHECK(html.find("<script>") == std::string::npos);
  CHECK(html.find("</html>") != std::string::npos);
}

}  // namespace
}  // namespace fl::reports::compare
