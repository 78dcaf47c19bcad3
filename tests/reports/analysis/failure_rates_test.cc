// The failure rates file of `faultline project` (reports/analysis/failure_rates.h): what it
// accepts, and errors that say where.
#include "reports/analysis/failure_rates.h"

#include <catch2/catch.hpp>

#include <string>

namespace fl::reports::analysis {
namespace {

TEST_CASE("failure rates: the shipped example and a fixed cost", "[goodput]") {
  auto shipped =
      LoadFailureRates(std::string(FL_SOURCE_DIR) + "/configs/failure_rates/example.yaml");
  REQUIRE(shipped.ok());
  CHECK(shipped->classes.size() == 4);

  auto r = ParseFailureRates(
      "classes:\n"
      "  - name: nic\n"
      "    fault_kind: nic_port_flap\n"
      "    failures_per_day: 0.001\n"
      "  - name: gpu\n"
      "    cost: 2min\n"
      "    restart: true\n"
      "    gpus_per_component: 8\n"
      "    failures_per_day: 2e-4\n",
      "rates.yaml");
  REQUIRE(r.ok());
  REQUIRE(r->classes.size() == 2);
  CHECK(r->classes[0].name == "nic");
  CHECK(r->classes[0].fault_kind == "nic_port_flap");
  CHECK_FALSE(r->classes[0].cost_s);
  CHECK(r->classes[0].gpus_per_component == 1);  // the default
  CHECK(r->classes[0].failures_per_day == 0.001);
  CHECK(r->classes[0].where == "rates.yaml:2:5");
  CHECK(r->classes[1].cost_s == 120);
  CHECK(r->classes[1].restart);
  CHECK(r->classes[1].gpus_per_component == 8);
}

TEST_CASE("failure rates: bad files are refused with their place", "[goodput]") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"classes: []\n", "rates.yaml:1:10: classes must list 1 to 256 failure classes"},
      {"class:\n  - name: a\n", "rates.yaml:1:1: unknown key 'class'"},
      {"classes:\n  - name: a\n    fault_kind: k\n    failures_per_day: 1\n    mtbf: 3\n",
       "rates.yaml:5:5: unknown key 'mtbf'"},
      {"classes:\n  - name: a\n    failures_per_day: 1\n",
       "rates.yaml:2:5: class 'a' needs exactly one of fault_kind"},
      {"classes:\n  - name: a\n    fault_kind: k\n    cost: 1s\n    failures_per_day: 1\n",
       "needs exactly one of fault_kind"},
      {"classes:\n  - name: a\n    fault_kind: k\n    restart: true\n    failures_per_day: 1\n",
       "rates.yaml:4:14: restart goes with cost"},
      {"classes:\n  - name: a\n    fault_kind: k\n    failures_per_day: 101\n",
       "rates.yaml:4:23: failures_per_day must be between 0 and 100"},
      {"classes:\n  - name: a\n    fault_kind: k\n    failures_per_day: -1\n",
       "failures_per_day must be between"},
      {"classes:\n  - name: a\n    fault_kind: k\n", "missing required key 'failures_per_day'"},
      {"classes:\n  - name: a\n    fault_kind: k\n    gpus_per_component: 0\n"
       "    failures_per_day: 1\n",
       "gpus_per_component must be between 1 and"},
      {"classes:\n  - name: a\n    cost: soon\n    failures_per_day: 1\n", "rates.yaml:3:11"},
      {"classes:\n  - name: a b\n    cost: 1s\n    failures_per_day: 1\n", "class name is 1 to 64"},
      {"classes:\n  - name: a\n    cost: 1s\n    failures_per_day: 1\n"
       "  - name: a\n    cost: 2s\n    failures_per_day: 1\n",
       "rates.yaml:5:11: class 'a' is named twice"},
      {"classes: 3\n", "rates.yaml:1:10"},
      {"- a\n", "rates.yaml:1:1"},
  };
  for (const auto& c : cases) {
    auto r = ParseFailureRates(c.text, "rates.yaml");
    INFO(c.text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains(c.error));
  }
  auto endless = LoadFailureRates("/dev/zero");
  REQUIRE_FALSE(endless.ok());
  CHECK(endless.status().code() == Code::kInvalidArgument);
  CHECK_THAT(endless.status().message(), Catch::Contains("failure rates file"));
}

}  // namespace
}  // namespace fl::reports::analysis
