// The faults table's one write: insert a fault's row, or update it (run_id, fault_id) as the
// fault goes from planned to injected to reverted. Shared by Store::PutFault and the
// BatchWriter, which carries the run's inject and revert records off the fault path, in the
// order they were pushed.
#pragma once

#include "common/status.h"
#include "reports/store/records.h"
#include "reports/store/sql.h"

namespace fl::reports {

[[nodiscard]] Status UpsertFault(sql::Db& db, const FaultRecord& fault);

}  // namespace fl::reports
