// Detectors scored against injected faults (reports/analysis/detector_score.h): a case worked
// by hand, target matching, windows, and the figures a rule that never fires or a noisy one
// gets.
#include "reports/analysis/detector_score.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

namespace fl::reports::analysis {
namespace {

constexpr Nanos kS = kNsPerSec;
constexpr Nanos kT = 1'796'582'998 * kS;

Alert At(const std::string& detector, Nanos t, const std::string& target = "") {
  Alert a;
  a.detector = detector;
  a.start_ns = kT + t;
  a.target = target;
  return a;
}

// Two runs of an hour each: run 1 a loss fault on h1.nic0 (100 s to 160 s) and a flap on
// h2.nic1 (1000 s to 1004 s); run 2, an hour later, a loss fault on h3.nic0 (100 s to 130 s).
std::vector<TruthRun> Truth() {
  TruthRun a{"r1", kT, kT + 3600 * kS, {}};
  a.faults.push_back({"f0", "packet_loss", "h1.nic0", kT + 100 * kS, kT + 160 * kS});
  a.faults.push_back({"f1", "nic_port_flap", "h2.nic1", kT + 1000 * kS, kT + 1004 * kS});
  TruthRun b{"r2", kT + 7200 * kS, kT + 10800 * kS, {}};
  b.faults.push_back({"f0", "packet_loss", "h3.nic0", kT + 7300 * kS, kT + 7330 * kS});
  return {a, b};
}

const DetectorScore& Of(const ScoreReport& r, const std::string& name) {
  for (const auto& d : r.detectors)
    if (d.name == name) return d;
  FAIL("no detector " << name);
  return r.detectors.front();
}

TEST_CASE("detector scores: a case worked by hand", "[unit]") {
  std::vector<Alert> alerts = {
      // LossHigh: both loss faults, 12 s and 20 s late (the second on the host alone), and a
      // repeat of the first 30 s later; never the flap.
      At("LossHigh", 112 * kS, "h1/nic0"), At("LossHigh", 142 * kS, "h1.nic0"),
      At("LossHigh", 7320 * kS, "h3"),
      // Noisy: one alert during the flap on the wrong host, two far from any fault, one at the
      // flap's host inside its grace (a hit), and one between the runs (outside: not scored).
      At("Noisy", 1002 * kS, "h7"), At("Noisy", 2000 * kS), At("Noisy", 9000 * kS, "h1"),
      At("Noisy", 1030 * kS, "h2"), At("Noisy", 5400 * kS)};
  ScoreReport r = ScoreDetectors(Truth(), alerts, {"NeverFires"}, ScoreOptions{});
  CHECK(r.runs == 2);
  CHECK(r.faults == 3);
  CHECK(r.observed_hours == Approx(2));
  CHECK(r.outside == 1);
  REQUIRE(r.detectors.size() == 3);

  const DetectorScore& loss = Of(r, "LossHigh");
  CHECK(loss.alerts == 3);
  CHECK(loss.true_alerts == 3);
  CHECK(loss.false_alarms == 0);
  CHECK(loss.precision == Approx(1));
  CHECK(loss.detected == 2);
  CHECK(loss.recall == Approx(2.0 / 3));
  CHECK(loss.f1 == Approx(0.8));  // 2 x 1 x 2/3 / (1 + 2/3)
  CHECK(loss.latencies_s == std::vector<double>{12, 20});
  CHECK(loss.latency_median_s == Approx(16));
  CHECK(loss.latency_max_s == Approx(20));
  REQUIRE(loss.by_kind.size() == 2);
  CHECK(loss.by_kind[0].kind == "nic_port_flap");
  CHECK(loss.by_kind[0].detected == 0);
  CHECK(loss.by_kind[1].kind == "packet_loss");
  CHECK(loss.by_kind[1].faults == 2);
  CHECK(loss.by_kind[1].detected == 2);

  const DetectorScore& noisy = Of(r, "Noisy");
  CHECK(noisy.alerts == 4);
  CHECK(noisy.true_alerts == 1);
  CHECK(noisy.false_alarms == 3);
  CHECK(noisy.precision == Approx(0.25));
  CHECK(noisy.recall == Approx(1.0 / 3));
  CHECK(noisy.f1 == Approx(2 * 0.25 / 3 / (0.25 + 1.0 / 3)));
  CHECK(noisy.latencies_s == std::vector<double>{30});
  CHECK(noisy.false_alarms_per_hour == Approx(1.5));

  const DetectorScore& never = Of(r, "NeverFires");
  CHECK(never.alerts == 0);
  CHECK_FALSE(never.precision);
  CHECK(never.recall == 0);
  CHECK(never.f1 == 0);
  CHECK(never.latencies_s.empty());

  const std::string text = RenderScoreText(r);
  CHECK_THAT(text, Catch::Contains("2 run(s), 3 fault(s), 2.00 h observed"));
  CHECK_THAT(text, Catch::Contains("recall by kind: nic_port_flap 0/1, packet_loss 2/2"));
  CHECK_THAT(text, Catch::Contains("1 alert(s) fell in no selected run's window"));
  auto j = nlohmann::json::parse(ScoreJson(r));
  CHECK(j["detectors"].size() == 3);
  CHECK(j["detectors"][1]["name"] == "NeverFires");
  CHECK(j["detectors"][1]["precision"].is_null());
  CHECK(j["detectors"][0]["latency_s"]["median"] == 16.0);
}

TEST_CASE("detector scores: windows, skew and grace", "[unit]") {
  ScoreOptions o;
  o.grace_ns = 10 * kS;
  o.skew_ns = 2 * kS;
  std::vector<Alert> alerts = {At("early", 99 * kS, "h1"),  // within the skew: a hit, -1 s
                               At("too_early", 97 * kS, "h1"),
                               At("late", 169 * kS, "h1"),  // 9 s after the revert
                               At("too_late", 171 * kS, "h1")};
  ScoreReport r = ScoreDetectors(Truth(), alerts, {}, o);
  CHECK(Of(r, "early").detected == 1);
  CHECK(Of(r, "early").latencies_s == std::vector<double>{-1});
  CHECK(Of(r, "too_early").false_alarms == 1);
  CHECK(Of(r, "late").detected == 1);
  CHECK(Of(r, "too_late").false_alarms == 1);
}

TEST_CASE("detector scores: what a target names", "[unit]") {
  CHECK(TargetsMatch("", "h1.nic0"));
  CHECK(TargetsMatch("h1", "h1.nic0"));
  CHECK(TargetsMatch("h1/nic0", "h1.nic0"));
  CHECK(TargetsMatch("h1.nic0.rx", "h1.nic0"));
  CHECK(TargetsMatch("leaf0:swp3", "leaf0:swp3"));
  CHECK_FALSE(TargetsMatch("h1.nic1", "h1.nic0"));
  CHECK_FALSE(TargetsMatch("h10", "h1.nic0"));
  CHECK_FALSE(TargetsMatch("h1", ""));
  CHECK_FALSE(TargetsMatch("leaf1", "leaf0:swp3"));
}

TEST_CASE("detector scores: no runs, no alerts", "[unit]") {
  ScoreReport r = ScoreDetectors({}, {At("x", 0)}, {}, ScoreOptions{});
  CHECK(r.outside == 1);
  REQUIRE(r.detectors.size() == 1);
  CHECK(r.detectors[0].alerts == 0);
  CHECK(r.detectors[0].false_alarms_per_hour == 0);
  CHECK_THAT(RenderScoreText(ScoreDetectors({}, {}, {}, ScoreOptions{})),
             Catch::Contains("no detector"));
}

}  // namespace
}  // namespace fl::reports::analysis
