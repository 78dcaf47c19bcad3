// A Plan is a scenario made concrete for one seed: every fault firing with its target drawn
// and its time jittered. The same scenario, catalog and seed always give the same Plan (the
// draws use fl::Rng, whose sequence is fixed by common/rng.h, with one forked stream per
// purpose, so adding a fault does not move the draws of the others). This is what makes a run
// replayable from (scenario file, seed).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario/scenario_loader.h"

namespace fl::harness {

struct PlannedFault {
  std::string id;         // "f0" or, for repeated firings, "f0.2"
  size_t spec_index = 0;  // index into Scenario::faults
  uint32_t firing = 0;    // 0 .. count-1
  std::string kind;
  std::string target;
  std::map<std::string, std::string> params;
  bool after_iteration_trigger = false;
  Nanos at_ns = 0;  // offset from the start of the steady state
  uint64_t after_iteration = 0;
  Nanos duration_ns = 0;  // 0: until the end of the job
  // Timed by an event of an earlier fault (after_event / during): the anchor's planned id,
  // the event (events::AnchorNames()), the delay after it; during: only while the anchor is in
  // effect.
  std::string anchor;
  std::string anchor_event;
  Nanos anchor_delay_ns = 0;
  bool during = false;

  bool time_triggered() const { return !after_iteration_trigger && anchor.empty(); }
};

struct Plan {
  uint64_t seed = 0;
  // time-triggered ones sorted by at_ns, then iteration-triggered ones by iteration, then the
  // event-timed ones in file order
  std::vector<PlannedFault> faults;
};

// REQUIRES: ValidateAgainstCatalog(scenario, catalog).ok()
StatusOr<Plan> MakePlan(const Scenario& scenario, const FaultCatalog& catalog, uint64_t seed);

// One line per fault: "f0 nic_port_flap h1/nic0 at=5s for=3s"; for logs and tests.
std::string DescribePlan(const Plan& plan);

}  // namespace fl::harness
