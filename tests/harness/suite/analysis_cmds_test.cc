// `faultline project` and `faultline score` end to end on a real SQLite store: runs written
// through the Store with the faults and metrics a run stores, then the command, as a user
// would run it: docs/goodput.md's worked example, and detectors' alerts against the faults.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "reports/store/store.h"
#include "tests/harness/run_testing.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using reports::MetricRecord;
using reports::RunStatus;
using testing::TempDir;

constexpr Nanos kT0 = 1'764'464'400 * kNsPerSec;

// A finished run of one applied fault of `kind`, with its throughput loss and the run's outcome
// (0 survived, 1 failed).
void AddRun(reports::Store& store, const std::string& id, const std::string& kind, double loss_s,
            int outcome, Nanos start, const std::string& target = "h0/nic0") {
  reports::RunRecord r;
  r.id = id;
  r.scenario_name = "projected";
  r.scenario_text = "name: projected\n";
  r.start_wall_ns = start;
  r.tags = {{"set", "a"}};
  REQUIRE(store.CreateRun(r).ok());
  reports::FaultRecord f;
  f.run_id = id;
  f.fault_id = "f0";
  f.kind = kind;
  f.target = target;
  f.effective_wall_ns = start + kNsPerSec;
  f.reverted_wall_ns = start + 5 * kNsPerSec;
  REQUIRE(store.PutFault(f).ok());
  std::vector<MetricRecord> m = {{id, std::nullopt, "outcome", double(outcome), "enum"},
                                 {id, "f0", "fault_applied", 1, "bool"},
                                 {id, "f0", "throughput_loss_s", loss_s, "s"}};
  REQUIRE(store.ReplaceMetrics(id, m).ok());
  REQUIRE(store
              .FinishRun(id, outcome == 0 ? RunStatus::kPassed : RunStatus::kFailed,
                         start + 10 * kNsPerSec, "")
              .ok());
}

struct Output {
  int code = -1;
  std::string out, err;
};

Output Command(const char* command, const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), command);
  testing::Faultline f(args, dir.path());
  auto code = f.Wait(Deadline::After(60 * kNsPerSec));
  return {code ? *code : -1, f.out(), f.err()};
}

TEST_CASE("faultline project: the worked example of docs/goodput.md from a real store",
          "[integration]") {
  TempDir dir("fl_project");
  const std::string db = dir.path() + "/r.db", rates = dir.path() + "/rates.yaml";
  {
    auto store = reports::Store::Open(db);
    REQUIRE(store.ok());
    AddRun(**store, "r1", "nic_port_flap", 20, 0, kT0);
    AddRun(**store, "r2", "nic_port_flap", 40, 0, kT0 + 20 * kNsPerSec);
    AddRun(**store, "r3", "container_kill", 5, 1, kT0 + 40 * kNsPerSec);  // the job died
  }
  REQUIRE(WriteFileAtomic(rates,
                          "classes:\n"
                          "  - name: nic\n"
                          "    fault_kind: nic_port_flap\n"
                          "    failures_per_day: 0.001\n"
                          "  - name: host\n"
                          "    fault_kind: container_kill\n"
                          "    gpus_per_component: 8\n"
                          "    failures_per_day: 0.002\n"
                          "  - name: gpu\n"
                          "    cost: 0s\n"
                          "    restart: true\n"
                          "    failures_per_day: 0.0005\n")
              .ok());
  const std::vector<std::string> base = {
      "--runs",     "tag:set=a", "--cluster-size", "1024", "--failure-rates", rates,
      "--job-days", "10",        "--db",           db};

  auto json_out = base;
  json_out.push_back("--json");
  Output j = Command("project", dir, json_out);
  INFO(j.err);
  REQUIRE(j.code == 0);
  CHECK_THAT(j.err, Catch::Contains("3 run(s), 3 applied fault(s)"));
  auto p = nlohmann::json::parse(j.out);
  CHECK(p["expected_ettr"].get<double>() == Approx(1 - 15667.2 / 864000.0));
  REQUIRE(p["classes"].size() == 3);
  CHECK(p["classes"][0]["name"] == "gpu");
  CHECK(p["classes"][1]["name"] == "host");
  CHECK(p["classes"][1]["samples"] == 1);
  CHECK(p["classes"][1]["restarts"] == 1);
  CHECK(p["classes"][1]["mean_cost_s"].get<double>() == Approx(2400));
  CHECK(p["classes"][2]["name"] == "nic");
  CHECK(p["classes"][2]["samples"] == 2);
  CHECK(p["classes"][2]["mean_cost_s"].get<double>() == Approx(30));
  CHECK(std::fabs(p["ettr"]["mean"].get<double>() - p["expected_ettr"].get<double>()) < 1e-3);

  Output text = Command("project", dir, base);
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("ETTR 0.9819"));
  CHECK_THAT(text.out, Catch::Contains("costliest: gpu"));

  // One run alone: the class of the kind it lacks is refused, saying where and what there is.
  auto one = base;
  one[1] = "r1";
  Output lacking = Command("project", dir, one);
  CHECK(lacking.code == 2);
  CHECK_THAT(lacking.err, Catch::Contains(rates + ":5:5: class 'host' stands for fault kind "
                                                  "container_kill"));
  CHECK_THAT(lacking.err, Catch::Contains("measured: nic_port_flap (1)"));

  auto none = base;
  none[1] = "tag:set=zzz";
  Output nothing = Command("project", dir, none);
  CHECK(nothing.code == 2);
  CHECK_THAT(nothing.err, Catch::Contains("tag:set=zzz: "));

  auto bad = base;
  bad.insert(bad.end(), {"--checkpoint-interval", "often"});
  Output bad_flag = Command("project", dir, bad);
  CHECK(bad_flag.code == 2);
  CHECK_THAT(bad_flag.err, Catch::Contains("--checkpoint-interval"));
}

TEST_CASE("faultline score: a loss rule, a rule that never fires and a noisy one",
          "[integration]") {
  TempDir dir("fl_score");
  const std::string db = dir.path() + "/r.db", alerts = dir.path() + "/alerts.jsonl",
                    rules = dir.path() + "/rules.yml";
  {
    auto store = reports::Store::Open(db);
    REQUIRE(store.ok());
    // Each run 10 s, its fault from 1 s to 5 s.
    AddRun(**store, "r1", "packet_loss", 1, 0, kT0, "h1.nic0");
    AddRun(**store, "r2", "packet_loss", 1, 0, kT0 + 20 * kNsPerSec, "h2.nic1");
    AddRun(**store, "r3", "nic_port_flap", 1, 0, kT0 + 40 * kNsPerSec, "h3.nic0");
  }
  // 2025-11-30T01:00:00Z is kT0. LossHigh fires 2 s into each loss fault (once through
  // Alertmanager, with a repeat); Noisy fires on h9 during r1 and r3.
  REQUIRE(
      WriteFileAtomic(
          alerts,
          R"({"detector": "LossHigh", "time": "2025-11-30T01:00:03Z", "target": "h1"})"
          "\n"
          R"({"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"LossHigh","host":"h2"},"startsAt":"2025-11-30T01:00:23Z","endsAt":"0001-01-01T00:00:00Z","fingerprint":"a"}]})"
          "\n"
          R"({"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"LossHigh","host":"h2"},"startsAt":"2025-11-30T01:00:23Z","endsAt":"0001-01-01T00:00:00Z","fingerprint":"a"}]})"
          "\n"
          R"({"detector": "Noisy", "time": "2025-11-30T01:00:04Z", "target": "h9"})"
          "\n"
          R"({"detector": "Noisy", "time": "2025-11-30T01:00:45Z", "target": "h9"})"
          "\n")
          .ok());
  REQUIRE(WriteFileAtomic(rules,
                          "groups:\n"
                          "  - name: g\n"
                          "    rules:\n"
                          "      - alert: LossHigh\n"
                          "        expr: loss > 0\n"
                          "      - alert: NeverFires\n"
                          "        expr: vector(0) > 1\n")
              .ok());
  const std::vector<std::string> base = {"tag:set=a", "--alerts", alerts, "--rules",
                                         rules,       "--db",     db};
  auto json_args = base;
  json_args.push_back("--json");
  Output j = Command("score", dir, json_args);
  INFO(j.err);
  REQUIRE(j.code == 0);
  CHECK_THAT(j.err, Catch::Contains("3 run(s); 5 alert(s) read, 4 distinct"));
  auto s = nlohmann::json::parse(j.out);
  CHECK(s["faults"] == 3);
  REQUIRE(s["detectors"].size() == 3);
  const auto& loss = s["detectors"][0];
  CHECK(loss["name"] == "LossHigh");
  CHECK(loss["precision"] == 1.0);
  CHECK(loss["detected"] == 2);
  for (const auto& k : loss["by_kind"])
    if (k["kind"] == "packet_loss") CHECK(k["detected"] == k["faults"]);
  CHECK(loss["latency_s"]["median"].get<double>() == Approx(2));
  const auto& never = s["detectors"][1];
  CHECK(never["name"] == "NeverFires");
  CHECK(never["recall"] == 0.0);
  CHECK(never["precision"].is_null());
  const auto& noisy = s["detectors"][2];
  CHECK(noisy["name"] == "Noisy");
  CHECK(noisy["false_alarms"] == 2);
  CHECK(noisy["false_alarms_per_hour"].get<double>() == Approx(2 / (30.0 / 3600)));

  Output text = Command("score", dir, base);
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("recall by kind: nic_port_flap 0/1, packet_loss 2/2"));

  auto bad = base;
  bad[2] = dir.path();  // a directory as the alerts file
  Output refused = Command("score", dir, bad);
  CHECK(refused.code == 2);
  CHECK_THAT(refused.err, Catch::Contains("a directory"));
  REQUIRE(WriteFileAtomic(dir.path() + "/bad.jsonl", "{\"detector\": \"x\"}\n").ok());
  bad[2] = dir.path() + "/bad.jsonl";
  Output bad_line = Command("score", dir, bad);
  CHECK(bad_line.code == 2);
  CHECK_THAT(bad_line.err, Catch::Contains("bad.jsonl:1: missing key 'time'"));
}

}  // namespace
}  // namespace fl::harness
