// Planning a run: validation against the real lab topology, seeded draws, replay from the
// results database. Nothing here touches the kernel.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "common/file_util.h"
#include "harness/run/run_driver.h"
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

constexpr const char* kInventory = R"(name: rack7
coordinator: {listen: 10.10.0.254:7070, token_file: /etc/faultline/token}
hosts:
  - name: node01
    ranks: 2
    nics:
      - {name: nic0, ifname: ens1f0, address: 10.0.0.1}
  - name: node02
    ranks: 2
    nics:
      - {name: nic0, ifname: ens1f0, address: 10.0.0.2}
)";

TEST_CASE("run plan: --lab INVENTORY replaces the scenario's lab - class draws pick its names",
          "[unit]") {
  TempDir dir("fl_plan");
  const std::string inv = dir.path() + "/inv.yaml";
  REQUIRE(WriteFileAtomic(inv, kInventory).ok());
  RunOptions o;
  o.scenario_path = dir.path() + "/s.yaml";
  o.lab_file = inv;
  REQUIRE(WriteFileAtomic(o.scenario_path,
                          Scenario("  - kind: link_blackhole\n    target_class: nic\n    at: 1s\n"
                                   "  - kind: container_kill\n    target_class: rank\n"
                                   "    after_iteration: 10\n"))
              .ok());
  auto plan = DescribeRunPlan(o);
  REQUIRE(plan.ok());
  CHECK(plan->find("link_blackhole node0") != std::string::npos);  // an inventory NIC
  CHECK(plan->find("container_kill rank") != std::string::npos);

  // A named target the chosen lab does not have: at its place, before anything starts.
  REQUIRE(WriteFileAtomic(o.scenario_path,
                          Scenario("  - kind: link_blackhole\n    target: tor0.h1\n    at: 1s\n"))
              .ok());
  auto bad = DescribeRunPlan(o);
  REQUIRE(bad.status().code() == Code::kInvalidArgument);
  CHECK(bad.status().message().rfind(o.scenario_path + ":8:5: ", 0) == 0);
  // A kind that needs a switch.
  REQUIRE(WriteFileAtomic(o.scenario_path,
                          Scenario("  - kind: tor_port_down\n    target_class: nic\n    at: 1s\n"))
              .ok());
  bad = DescribeRunPlan(o);
  REQUIRE(bad.status().code() == Code::kInvalidArgument);
  CHECK(bad.status().message().rfind(o.scenario_path + ":", 0) == 0);
  // pfc_storm's stall mode needs a switch port; frames mode is a host's.
  REQUIRE(WriteFileAtomic(o.scenario_path,
                          Scenario("  - kind: pfc_storm\n    target: node01.nic0\n    at: 1s\n"))
              .ok());
  bad = DescribeRunPlan(o);
  REQUIRE(bad.status().code() == Code::kInvalidArgument);
  CHECK(bad.status().message().find("mode: frames") != std::string::npos);
  REQUIRE(WriteFileAtomic(o.scenario_path,
                          Scenario("  - kind: pfc_storm\n    target: node01.nic0\n    at: 1s\n"
                                   "    params: {mode: frames}\n"))
              .ok());
  CHECK(DescribeRunPlan(o).ok());
}

TEST_CASE("run plan: a replay runs on the stored lab text - not on today's file", "[unit]") {
  TempDir dir("fl_plan");
  const std::string inv = dir.path() + "/inv.yaml";
  REQUIRE(WriteFileAtomic(inv, kInventory).ok());
  const std::string text =
      Scenario("  - kind: nic_port_flap\n    target: node02.nic0\n    at: 1s\n");
  {
    auto store = reports::Store::Open(dir.path() + "/r.db");
    REQUIRE(store.ok());
    reports::RunRecord r;
    r.id = "r20261201-000000-abcdef";
    r.scenario_name = "drawn";
    r.scenario_text = text;
    r.lab_source = inv;
    r.lab_text = kInventory;
    r.seed = 1;
    r.start_wall_ns = 1;
    REQUIRE((*store)->CreateRun(r).ok());
    auto back = (*store)->GetRun(r.id);
    REQUIRE(back.ok());
    CHECK(back->lab_text == kInventory);
    CHECK(back->lab_hash.size() == 64);
  }
  // Today's file no longer has node02.
  std::string changed = kInventory;
  changed.replace(changed.find("node02"), 6, "node03");
  REQUIRE(WriteFileAtomic(inv, changed).ok());
  RunOptions replay;
  replay.replay_of = "r20261201-000000-abcdef";
  replay.scenario_path = "replay";
  replay.db_path = dir.path() + "/r.db";
  auto plan = DescribeRunPlan(replay);
  REQUIRE(plan.ok());
  CHECK(plan->find("node02.nic0") != std::string::npos);
  // With --lab, today's file: node02 is gone.
  replay.lab_file = inv;
  CHECK(DescribeRunPlan(replay).status().code() == Code::kInvalidArgument);
}

}  // namespace
}  // namespace fl::harness
