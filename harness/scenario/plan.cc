#include "harness/scenario/plan.h"

#include <algorithm>

#include "common/rng.h"
#include "common/units.h"
#include "common/yaml_util.h"

namespace fl::harness {

StatusOr<Plan> MakePlan(const Scenario& scenario, const FaultCatalog& catalog, uint64_t seed) {
  Plan plan;
  plan.seed = seed;
  // The loader bounds each count; a Scenario built another way gets the same limit here, before
  // anything is allocated for its firings.
  size_t firings = 0;
  for (const FaultSpec& spec : scenario.faults) {
    if (spec.timing.count > limits::kMaxFiringsPerFault)
      return InvalidArgumentError(
          spec.where + ": " +
          BoundsProblem<uint32_t>("count", spec.timing.count, 1, limits::kMaxFiringsPerFault));
    firings += spec.timing.count;
  }
  if (firings > limits::kMaxPlannedFirings)
    return InvalidArgumentError(scenario.path + ": " +
                                BoundsProblem<size_t>("the number of fault firings", firings, 0,
                                                      limits::kMaxPlannedFirings));
  plan.faults.reserve(firings);
  const Rng root(seed);
  for (size_t i = 0; i < scenario.faults.size(); ++i) {
    const FaultSpec& spec = scenario.faults[i];
    std::string target = spec.target;
    if (target.empty()) {
      std::vector<std::string> candidates = catalog.Targets(spec.target_class);
      if (candidates.empty())
        return InvalidArgumentError(spec.where + ": no targets of class '" + spec.target_class +
                                    "'");
      Rng pick = root.Fork("fault/" + std::to_string(i) + "/target");
      target = candidates[pick.Below(candidates.size())];
    }
    for (uint32_t k = 0; k < spec.timing.count; ++k) {
      PlannedFault pf;
      pf.id = "f" + std::to_string(i) + (spec.timing.count > 1 ? "." + std::to_string(k) : "");
      pf.spec_index = i;
      pf.firing = k;
      pf.kind = spec.kind;
      pf.target = target;
      pf.params = spec.params;
      pf.duration_ns = spec.duration_ns;
      if (spec.timing.kind == FaultTiming::Kind::kAfterEvent) {
        pf.anchor = spec.timing.anchor;
        pf.anchor_event = spec.timing.anchor_event;
        pf.anchor_delay_ns = spec.timing.anchor_delay_ns;
        pf.during = spec.timing.during;
      } else if (spec.timing.kind == FaultTiming::Kind::kAfterIteration) {
        pf.after_iteration_trigger = true;
        pf.after_iteration = spec.timing.after_iteration;
      } else {
        Nanos at = spec.timing.at_ns + static_cast<Nanos>(k) * spec.timing.every_ns;
        if (spec.timing.jitter_ns > 0) {
          Rng jitter =
              root.Fork("fault/" + std::to_string(i) + "/firing/" + std::to_string(k) + "/jitter");
          at += jitter.Between(-spec.timing.jitter_ns, spec.timing.jitter_ns);
        }
        pf.at_ns = std::max<Nanos>(at, 0);
      }
      plan.faults.push_back(std::move(pf));
    }
  }
  std::stable_sort(plan.faults.begin(), plan.faults.end(),
                   [](const PlannedFault& a, const PlannedFault& b) {
                     auto order = [](const PlannedFault& f) {
                       return f.time_triggered() ? 0 : f.after_iteration_trigger ? 1 : 2;
                     };
                     if (order(a) != order(b)) return order(a) < order(b);
                     if (a.after_iteration_trigger) return a.after_iteration < b.after_iteration;
                     return a.time_triggered() && a.at_ns < b.at_ns;
                   });
  return plan;
}

std::string DescribePlan(const Plan& plan) {
  std::string s;
  for (const PlannedFault& f : plan.faults) {
    s += f.id + " " + f.kind + " " + f.target;
    if (!f.anchor.empty())
      s += std::string(f.during ? " during=" : " after_event=") + f.anchor +
           (f.during ? "" : ":" + f.anchor_event) +
           (f.anchor_delay_ns ? "+" + FormatDuration(f.anchor_delay_ns) : "");
    else if (f.after_iteration_trigger)
      s += " after_iteration=" + std::to_string(f.after_iteration);
    else
      s += " at=" + FormatDuration(f.at_ns);
    s += f.duration_ns ? " for=" + FormatDuration(f.duration_ns) : " for=rest";
    for (const auto& [k, v] : f.params) s += " " + k + "=" + v;
    s += "\n";
  }
  return s;
}

}  // namespace fl::harness
