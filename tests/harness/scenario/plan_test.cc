#include "harness/scenario/plan.h"

#include <catch2/catch.hpp>
#include <set>

namespace fl::harness {
namespace {

constexpr const char* kScenario = R"(name: random_flaps
lab: {topology: /labs/rail.yaml}
job: {iterations: 100}
faults:
  - kind: nic_port_flap
    target_class: nic
    every: 10s
    count: 4
    jitter: 2s
    duration: 1s
  - kind: container_kill
    target_class: container
    after_iteration: 50
  - kind: nic_port_flap
    target: h0/nic1
    at: 3s
)";

StaticFaultCatalog Catalog() {
  StaticFaultCatalog c;
  c.AddKind("nic_port_flap", {"nic"});
  c.AddKind("container_kill", {"container"});
  std::vector<std::string> nics, containers;
  for (int h = 0; h < 8; ++h) {
    for (int n = 0; n < 4; ++n)
      nics.push_back("h" + std::to_string(h) + "/nic" + std::to_string(n));
    containers.push_back("h" + std::to_string(h) + "/c0");
  }
  c.AddTargets("nic", nics);
  c.AddTargets("container", containers);
  return c;
}

Plan MustPlan(uint64_t seed) {
  auto s = ParseScenario(kScenario, "random_flaps.yaml");
  REQUIRE(s.ok());
  REQUIRE(ValidateAgainstCatalog(*s, Catalog()).ok());
  auto p = MakePlan(*s, Catalog(), seed);
  REQUIRE(p.ok());
  return *p;
}

TEST_CASE("plan: the same seed chooses the same targets and times", "[unit]") {
  Plan a = MustPlan(1234), b = MustPlan(1234);
  CHECK(DescribePlan(a) == DescribePlan(b));
  REQUIRE(a.faults.size() == 6);
  // time-triggered firings first, in time order; the iteration-triggered one last
  for (size_t i = 1; i + 1 < a.faults.size(); ++i)
    CHECK(a.faults[i - 1].at_ns <= a.faults[i].at_ns);
  CHECK(a.faults.back().after_iteration_trigger);
  CHECK(a.faults.back().after_iteration == 50);
}

TEST_CASE("plan: a count beyond the bound is refused before any firing is allocated", "[unit]") {
  // A Scenario not made by the loader (which refuses it at its line) gets the same bound here.
  auto s = ParseScenario(kScenario, "random_flaps.yaml");
  REQUIRE(s.ok());
  s->faults[0].timing.count = 4000000000u;
  auto p = MakePlan(*s, Catalog(), 1);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == Code::kInvalidArgument);
  CHECK(p.status().message().find("count must be between 1 and 10000, not 4000000000") !=
        std::string::npos);
  CHECK(p.status().message().rfind(s->faults[0].where, 0) == 0);
}

TEST_CASE("plan: jitter stays in bounds and all firings share the drawn target", "[unit]") {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    Plan p = MustPlan(seed);
    std::set<std::string> targets;
    for (const auto& f : p.faults) {
      if (f.spec_index != 0) continue;
      targets.insert(f.target);
      Nanos nominal = 10 * kNsPerSec * (f.firing + 1);
      CHECK(f.at_ns >= nominal - 2 * kNsPerSec);
      CHECK(f.at_ns <= nominal + 2 * kNsPerSec);
      CHECK(f.duration_ns == kNsPerSec);
    }
    CHECK(targets.size() == 1);
  }
}

TEST_CASE("plan: different seeds spread over the targets", "[unit]") {
  std::set<std::string> drawn;
  std::set<Nanos> times;
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    Plan p = MustPlan(seed);
    for (const auto& f : p.faults) {
      if (f.kind == "container_kill") drawn.insert(f.target);
      if (f.id == "f0.0") times.insert(f.at_ns);
    }
  }
  CHECK(drawn.size() >= 6);   // 8 containers, 64 draws
  CHECK(times.size() >= 32);  // jitter really varies
  // the explicit target is never replaced
  for (const auto& f : MustPlan(99).faults)
    if (f.spec_index == 2) CHECK((f.target == "h0/nic1" && f.at_ns == 3 * kNsPerSec));
}

}  // namespace
}  // namespace fl::harness
