// The faults table's one write: insert a fault's row, or update it (run_id, fault_id) as the
// fault goes from planned to injected to reverted. Shared by Store::PutFault and the
// BatchWriter, which carries the run's inject and revert records off the fault path, in the
// order they were pushed. And the runs table's last write, a run's final status (shared by
// Store::FinishRun and the writer, which replays it from its spool after an outage).
#pragma once

#include "common/status.h"
#include "reports/store/records.h"
#include "reports/store/spool.h"
#include "reports/store/sql.h"

namespace fl::reports {

[[nodiscard]] Status UpsertFault(sql::Db& db, const FaultRecord& fault);
// Sets the run's status, end time and message; *changed (when given) says whether a run of
// that id was there.
[[nodiscard]] Status UpdateRunEnd(sql::Db& db, const RunEndRecord& end, bool* changed = nullptr);

}  // namespace fl::reports
