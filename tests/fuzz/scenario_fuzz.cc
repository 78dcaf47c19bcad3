// Fuzzes the scenario loader (harness/scenario/scenario_loader.h): ParseScenario, then, for a
// scenario that parses, what `faultline run` does next without a lab: the kinds and targets
// checked against the rail4 lab's catalog, a plan drawn from it and described.
// Seeds: configs/scenarios/.
#include <memory>

#include "harness/lab/lab_catalog.h"
#include "harness/lab/topology.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario_loader.h"
#include "injectors/injector.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace fl;

// Errors name this file; relative paths in the input resolve beside it, as for a shipped one.
const std::string kName = FL_SOURCE_DIR "/configs/scenarios/fuzz-input.yaml";

const harness::FaultCatalog& Catalog() {
  static const std::unique_ptr<harness::FaultCatalog> catalog = [] {
    auto topology = lab::LoadTopology(FL_SOURCE_DIR "/configs/labs/rail4.yaml");
    FL_FUZZ_CHECK(topology.ok());
    injectors::InjectorRegistry registry("injector");
    FL_FUZZ_CHECK(injectors::RegisterBuiltinInjectors(registry).ok());
    lab::LabPlan plan = lab::PlanLab(*topology, "fuzz", 0);
    return std::make_unique<harness::LabFaultCatalog>(*topology, plan, registry.Names());
  }();
  return *catalog;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const harness::FaultCatalog& catalog = Catalog();
  auto scenario = harness::ParseScenario(fuzz::AsText(data, size), kName);
  if (!scenario.ok()) {
    fuzz::CheckLoaderError(scenario.status(), kName);
    return 0;
  }
  if (!harness::ValidateAgainstCatalog(*scenario, catalog).ok()) return 0;
  for (uint64_t seed : {uint64_t{1}, scenario->seed}) {
    auto plan = harness::MakePlan(*scenario, catalog, seed);
    if (!plan.ok()) continue;
    std::string text = harness::DescribePlan(*plan);
    (void)text;
  }
  return 0;
}
