// `faultline project` end to end on a real SQLite store: runs written through the Store with
// the faults and metrics a run stores, then the command, as a user would run it, on docs/
// goodput.md's worked example.
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
            int outcome, Nanos start) {
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
  f.target = "h0/nic0";
  f.effective_wall_ns = start + kNsPerSec;
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

Output Project(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), "project");
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
  Output j = Project(dir, json_out);
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

  Output text = Project(dir, base);
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("ETTR 0.9819"));
  CHECK_THAT(text.out, Catch::Contains("costliest: gpu"));

  // One run alone: the class of the kind it lacks is refused, saying where and what there is.
  auto one = base;
  one[1] = "r1";
  Output lacking = Project(dir, one);
  CHECK(lacking.code == 2);
  CHECK_THAT(lacking.err, Catch::Contains(rates + ":5:5: class 'host' stands for fault kind "
                                                  "container_kill"));
  CHECK_THAT(lacking.err, Catch::Contains("measured: nic_port_flap (1)"));

  auto none = base;
  none[1] = "tag:set=zzz";
  Output nothing = Project(dir, none);
  CHECK(nothing.code == 2);
  CHECK_THAT(nothing.err, Catch::Contains("--runs tag:set=zzz"));

  auto bad = base;
  bad.insert(bad.end(), {"--checkpoint-interval", "often"});
  Output bad_flag = Project(dir, bad);
  CHECK(bad_flag.code == 2);
  CHECK_THAT(bad_flag.err, Catch::Contains("--checkpoint-interval"));
}

}  // namespace
}  // namespace fl::harness
