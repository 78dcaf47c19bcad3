// The detection ledger (docs/metrics.md, "Detection ledger"): for every applied fault, when
// each layer noticed it, from what a run stores:
//
//   injector  the injector's read-back found the fault in place (the agent for a host-side
//             fault, the switch for a switch-side one): effective minus requested time
//   kernel    the target NIC's counters show it (carrier changes, drops or errors, or its
//             traffic falling below a fifth of the rate before the fault): the first reading
//             that does (agents read every 100 ms, so within 100 ms of the kernel)
//   ccl       the CCL reported it (its first fault_detected event), for a CCL that reports
//             path health
//   progress  the job's progress stalled (FaultMetrics::stall_ms): what a watchdog sees
//
// A layer that applies to a fault and did not notice it gets a row with no time; one that
// does not apply (the kernel's counters for a killed process, the CCL's health for a CCL that
// reports none) gets no row.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/metrics/metrics.h"
#include "reports/store/records.h"

namespace fl::reports {

inline constexpr std::string_view kLayerInjector = "injector";
inline constexpr std::string_view kLayerKernel = "kernel";
inline constexpr std::string_view kLayerCcl = "ccl";
inline constexpr std::string_view kLayerProgress = "progress";
// The layers in the order the ledger lists them.
inline constexpr std::string_view kLedgerLayers[] = {kLayerInjector, kLayerKernel, kLayerCcl,
                                                     kLayerProgress};

// What the ledger needs to know about a fault's kind (from its injector's registry entry).
struct FaultTraits {
  bool switch_side = false;    // the injector's read-back is the switch's
  bool instantaneous = false;  // nothing held (a kill): no counters to watch
};

struct LedgerInput {
  std::vector<FaultRecord> faults;
  std::vector<EventRecord> events;
  std::vector<NicSampleRecord> nics;
  // The job's CCL reports path health (fault_detected events): ftccl does, Gloo does not.
  bool ccl_reports_health = false;
  std::function<FaultTraits(std::string_view kind)> traits;  // null: all defaults
  double gap_factor = 3.0;  // AnalysisOptions::gap_factor, for the progress row's evidence
};

// Rows in the order of metrics.faults, each fault's layers in kLedgerLayers order.
std::vector<DetectionRecord> ComputeLedger(const LedgerInput& in, const RunMetrics& metrics);

// The NICs a target names among the sampled ones: "h1.nic0" the NIC itself; "tor0.h1" (a
// switch port facing a host) every NIC of h1. Each as "host.nic".
std::vector<std::string> LedgerNicsOf(std::string_view target,
                                      const std::vector<NicSampleRecord>& nics);

}  // namespace fl::reports
