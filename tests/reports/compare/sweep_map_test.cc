// Sweep maps: a run's map values, the medians per point, the worst region, the cliffs and the
// renderings (reports/compare/sweep_map.h).
#include "reports/compare/sweep_map.h"

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

namespace fl::reports::compare {
namespace {

TEST_CASE("sweep map: a run's values from its metrics", "[unit]") {
  RunMetricSet run;
  run.values = {{"outcome", 0},
                {"mismatches", 0},
                {"f0/fault_applied", 1},
                {"f0/recovery_ms", 80},
                {"f0/throughput_loss_s", 0.25},
                {"f0/failover_ms", 0.1},
                {"f0/failed_back", 1},
                {"f0.1/fault_applied", 1},
                {"f0.1/recovery_ms", 120},
                {"f0.1/throughput_loss_s", 0.5},
                {"f0.1/failed_back", 0}};
  auto v = SweepRunValues(run);
  CHECK(v.at("recovery_ms") == 120);                 // the longest
  CHECK(v.at("throughput_loss_s") == Approx(0.75));  // the sum
  CHECK(v.at("failovers") == 1);
  CHECK(v.at("failbacks") == 1);
  CHECK(v.at("mismatches") == 0);
  CHECK(v.at("hung") == 0);
  CHECK(v.at("not_survived") == 0);
  CHECK_FALSE(v.count("restart_cost_ms"));
  run.values = {{"outcome", 2}, {"f0/fault_applied", 1}, {"f0/restart_cost_ms", 600}};
  v = SweepRunValues(run);
  CHECK(v.at("hung") == 1);
  CHECK(v.at("not_survived") == 1);
  CHECK(v.at("failovers") == 0);  // a fault applied, none failed over
  CHECK(v.at("restart_cost_ms") == 600);
}

// 3 periods x 2 down times on two CCLs; recovery jumps at the long down time of period 1s.
SweepMapInput Input() {
  SweepMapInput in;
  in.name = "flaps <x>";
  in.sweep_id = "s1";
  in.axes = {{"every", "faults[0].every", {"100ms", "1s", "10s"}, true},
             {"duration", "faults[0].duration", {"20ms", "500ms"}, false}};
  in.panels = {"ftccl", "gloo"};
  auto cell = [&](size_t point, const std::string& panel, std::vector<double> recovery) {
    SweepMapCell c;
    c.point = point;
    c.panel = panel;
    for (size_t i = 0; i < recovery.size(); ++i) {
      c.run_ids.push_back(panel + std::to_string(point) + "r" + std::to_string(i));
      c.runs.push_back({{"recovery_ms", recovery[i]}, {"hung", i == 0 && point == 3 ? 1.0 : 0.0}});
    }
    in.cells.push_back(c);
  };
  cell(0, "ftccl", {10, 12, 11});
  SweepMapCell na;
  na.point = 1;
  na.panel = "ftccl";
  na.invalid = "duration must be shorter than every";
  in.cells.push_back(na);
  cell(2, "ftccl", {10, 10, 14});
  cell(3, "ftccl", {900, 1000, 1100});
  cell(4, "ftccl", {9, 9, 9});
  cell(5, "ftccl", {850, 950, 2000});
  cell(0, "gloo", {5, 5, 5});
  RepeatSummary r;
  r.verdicts = {{"survives", "", 1, 3}, {"exact_correctness", "", 3, 3}};
  in.cells[3].repeats = r;  // point 3 of ftccl
  return in;
}

TEST_CASE("sweep map: medians, the worst point and its region, the cliffs", "[unit]") {
  SweepMaps maps = BuildSweepMaps(Input());
  const MetricMap* rec = nullptr;
  const MetricMap* hung = nullptr;
  for (const auto& m : maps.metrics) {
    if (m.def.key == "recovery_ms") rec = &m;
    if (m.def.key == "hung") hung = &m;
  }
  REQUIRE(rec);
  REQUIRE(hung);
  CHECK(maps.metrics.size() == 2);  // only metrics some run has
  REQUIRE(rec->panels.size() == 2);
  const PanelMap& ft = rec->panels[0];
  CHECK(ft.values[0].median == 11);
  CHECK(ft.values[0].lo == 10);
  CHECK(ft.values[0].hi == 12);
  CHECK(ft.values[0].n == 3);
  CHECK_FALSE(ft.values[1].has);  // n/a
  CHECK(ft.values[3].median == 1000);
  CHECK(ft.worst == 3);
  CHECK(ft.region == std::vector<size_t>{3, 5});  // 950 is within 20% of 1000
  // Cliffs: along duration at every=1s (10 -> 1000 ms) and at every=10s (9 -> 950 ms); none
  // between 1 s and 10 s at 500 ms (1000 -> 950) or at 20 ms (10 -> 9).
  REQUIRE(ft.cliffs.size() == 2);
  CHECK(ft.cliffs[0].axis == 1);
  CHECK(ft.cliffs[0].from == 2);
  CHECK(ft.cliffs[0].to == 3);
  CHECK(ft.cliffs[1].from == 4);
  CHECK(ft.cliffs[1].to == 5);
  // The share metric is the fraction of repeats.
  CHECK(hung->panels[0].values[3].median == Approx(1.0 / 3));
  // A panel with one value: no cliff, that point the worst.
  CHECK(rec->panels[1].worst == 0);
  CHECK(rec->panels[1].cliffs.empty());

  const std::string text = RenderSweepText(maps);
  CHECK(text.find("recovery time [ftccl]") != std::string::npos);
  CHECK(text.find("n/a") != std::string::npos);
  CHECK(text.find("worst: every=1s duration=500ms (1 s)") != std::string::npos);
  CHECK(text.find("within 20% of it: 2 points, every 1s..10s, duration 500ms") !=
        std::string::npos);
  CHECK(text.find("cliff along duration at every=1s: 20ms -> 500ms, recovery time 10 ms -> 1 s") !=
        std::string::npos);

  CHECK(text.find("expectations not met by every repeat\n  every=1s duration=500ms [ftccl]: "
                  "1/3 met survives\n") != std::string::npos);
  CHECK(text.find("met exact_correctness") == std::string::npos);

  const std::string html = RenderSweepHtml(maps);
  CHECK(html.find("expectations: 1/3 met survives") != std::string::npos);
  CHECK(html.find("flaps &lt;x&gt;") != std::string::npos);
  CHECK(html.find("<x>") == std::string::npos);
  CHECK(html.find("class=\"worst region\"") != std::string::npos);
  CHECK(html.find("ftccl3r0 ftccl3r1 ftccl3r2") != std::string::npos);
  CHECK(html.find("duration must be shorter than every") != std::string::npos);

  auto j = nlohmann::json::parse(SweepMapsJson(maps));
  CHECK(j["metrics"][0]["key"] == "recovery_ms");
  CHECK(j["metrics"][0]["panels"][0]["worst"] == "every=1s duration=500ms");
  CHECK(j["metrics"][0]["panels"][0]["values"][1].is_null());
  CHECK(j["cells"].size() == 7);
  CHECK(j["cells"][3]["repeats"]["verdicts"][0]["met"] == 1);
}

}  // namespace
}  // namespace fl::reports::compare
