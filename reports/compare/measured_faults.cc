#include "reports/compare/measured_faults.h"

namespace fl::reports::compare {
namespace {

// outcome (docs/metrics.md): 0 survived, 1 failed, 2 hung.
constexpr double kOutcomeFailed = 1, kOutcomeHung = 2;

std::optional<double> Value(const RunMetricSet& run, const std::string& key) {
  auto it = run.values.find(key);
  if (it == run.values.end()) return std::nullopt;
  return it->second;
}

}  // namespace

StatusOr<std::vector<analysis::MeasuredFault>> LoadMeasuredFaults(
    RunReader& reader, const std::vector<RunMetricSet>& runs) {
  std::vector<analysis::MeasuredFault> out;
  for (const auto& run : runs) {
    FL_ASSIGN_OR_RETURN(std::vector<FaultRecord> faults, reader.store().LoadFaults(run.run.id));
    const size_t first = out.size();
    for (const auto& f : faults) {
      if (Value(run, f.fault_id + "/fault_applied") != 1.0) continue;
      analysis::MeasuredFault m;
      m.run_id = run.run.id;
      m.fault_id = f.fault_id;
      m.kind = f.kind;
      m.throughput_loss_s = Value(run, f.fault_id + "/throughput_loss_s");
      m.restart_cost_ms = Value(run, f.fault_id + "/restart_cost_ms");
      out.push_back(std::move(m));
    }
    const auto outcome = Value(run, "outcome");
    if (out.size() > first && (outcome == kOutcomeFailed || outcome == kOutcomeHung)) {
      analysis::MeasuredFault& last = out.back();
      last.ended_job = true;
      if (outcome == kOutcomeHung) {
        if (auto hang = Value(run, "hang_timeout_ms")) last.hang_s = *hang / 1e3;
      }
    }
  }
  return out;
}

}  // namespace fl::reports::compare
