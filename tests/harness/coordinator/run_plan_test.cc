// Planning a run: validation against the real lab topology, seeded draws, replay from the
// results database. Nothing here touches the kernel.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "common/file_util.h"
#include "harness/coordinator/run_driver.h"
#include "reports/store/store.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using testing::TempDir;

std::string Scenario(const std::string& fault_lines) {
  return "name: drawn\nseed: 11\nlab:\n  topology: " + std::string(FL_SOURCE_DIR) +
         "/configs/labs/rail4.yaml\njob:\n  iterations: 50\nfaults:\n" + fault_lines;
}

constexpr const char* kDrawn = R"(  - kind: nic_port_flap
    target_class: nic
    every: 5s
    count: 3
    jitter: 1s
    duration: 2s
  - kind: container_kill
    target_class: rank
    after_iteration: 30
)";

TEST_CASE("run plan: the same seed gives the same plan, another seed another one", "[unit]") {
  TempDir dir("fl_plan");
  REQUIRE(WriteFileAtomic(dir.path() + "/s.yaml", Scenario(kDrawn)).ok());
  RunOptions o;
  o.scenario_path = dir.path() + "/s.yaml";
  auto a = DescribeRunPlan(o);
  REQUIRE(a.ok());
  auto b = DescribeRunPlan(o);
  REQUIRE(b.ok());
  CHECK(*a == *b);
  CHECK(a->find("nic_port_flap h") != std::string::npos);  // a real NIC name of rail4
  o.seed = 12345;
  auto c = DescribeRunPlan(o);
  REQUIRE(c.ok());
  CHECK(*c != *a);
}

TEST_CASE("run plan: a replay of a stored run draws the same targets and times", "[unit]") {
  TempDir dir("fl_plan");
  std::string text = Scenario(kDrawn);
  REQUIRE(WriteFileAtomic(dir.path() + "/s.yaml", text).ok());
  RunOptions original;
  original.scenario_path = dir.path() + "/s.yaml";
  original.seed = 424242;
  auto plan = DescribeRunPlan(original);
  REQUIRE(plan.ok());
  {
    auto store = reports::Store::Open(dir.path() + "/r.db");
    REQUIRE(store.ok());
    reports::RunRecord r;
    r.id = "r20261130-000000-abcdef";
    r.scenario_name = "drawn";
    r.scenario_text = text;
    r.seed = 424242;
    r.start_wall_ns = 1;
    REQUIRE((*store)->CreateRun(r).ok());
  }
  // The scenario file may have changed or gone since: the replay uses the stored text.
  REQUIRE(WriteFileAtomic(dir.path() + "/s.yaml",
                          Scenario("  - kind: tor_port_down\n    target: tor0.h0\n    at: 1s\n"))
              .ok());
  RunOptions replay;
  replay.replay_of = "r20261130-000000-abcdef";
  replay.scenario_path = "replay";
  replay.db_path = dir.path() + "/r.db";
  auto again = DescribeRunPlan(replay);
  REQUIRE(again.ok());
  CHECK(*again == *plan);
  replay.replay_of = "r-unknown";
  CHECK(DescribeRunPlan(replay).status().code() == Code::kNotFound);
}

TEST_CASE("run plan: bad targets and parameters are reported at their place in the file",
          "[unit]") {
  TempDir dir("fl_plan");
  RunOptions o;
  o.scenario_path = dir.path() + "/bad.yaml";
  REQUIRE(WriteFileAtomic(o.scenario_path,
                          Scenario("  - kind: nic_port_flap\n    target: h9.nic0\n    at: 1s\n"))
              .ok());
  auto s = DescribeRunPlan(o);
  REQUIRE(s.status().code() == Code::kInvalidArgument);
  CHECK(s.status().message().rfind(o.scenario_path + ":8:5: target 'h9.nic0' is not in the lab",
                                   0) == 0);
  REQUIRE(
      WriteFileAtomic(o.scenario_path,
                      Scenario("  - kind: bandwidth_throttle\n    target: h0.nic0\n    at: 1s\n"))
          .ok());
  s = DescribeRunPlan(o);
  REQUIRE(s.status().code() == Code::kInvalidArgument);
  CHECK(s.status().message().rfind(o.scenario_path + ":8:5: ", 0) == 0);
  CHECK(s.status().message().find("rate") != std::string::npos);
}

}  // namespace
}  // namespace fl::harness
