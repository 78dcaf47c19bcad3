#include "reports/compare/truth.h"

#include <algorithm>

namespace fl::reports::compare {

StatusOr<std::vector<analysis::TruthRun>> LoadTruth(RunReader& reader,
                                                    const std::vector<RunMetricSet>& runs) {
  std::vector<analysis::TruthRun> out;
  for (const auto& r : runs) {
    FL_ASSIGN_OR_RETURN(std::vector<FaultRecord> faults, reader.store().LoadFaults(r.run.id));
    analysis::TruthRun t;
    t.run_id = r.run.id;
    t.start_ns = r.run.start_wall_ns;
    Nanos last = t.start_ns;
    for (const auto& f : faults) {
      if (!f.effective_wall_ns) continue;
      t.faults.push_back({f.fault_id, f.kind, f.target, *f.effective_wall_ns, f.reverted_wall_ns});
      last = std::max(last, f.reverted_wall_ns.value_or(*f.effective_wall_ns));
    }
    t.end_ns = r.run.end_wall_ns.value_or(last);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace fl::reports::compare
