#include "reports/store/fault_rows.h"

#include <optional>

namespace fl::reports {

Status UpsertFault(sql::Db& db, const FaultRecord& f) {
  FL_ASSIGN_OR_RETURN(
      auto st,
      db.Prepare("INSERT INTO faults (run_id, fault_id, kind, target, params_json, "
                 "scheduled_wall_ns, requested_wall_ns, effective_wall_ns, reverted_wall_ns, "
                 "revert_verified, anchor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                 "?11) ON CONFLICT (run_id, fault_id) DO UPDATE SET kind = excluded.kind, "
                 "target = excluded.target, params_json = excluded.params_json, "
                 "scheduled_wall_ns = excluded.scheduled_wall_ns, requested_wall_ns = "
                 "excluded.requested_wall_ns, effective_wall_ns = excluded.effective_wall_ns, "
                 "reverted_wall_ns = excluded.reverted_wall_ns, revert_verified = "
                 "excluded.revert_verified, anchor = excluded.anchor"));
  std::optional<int64_t> verified;
  if (f.revert_verified) verified = *f.revert_verified ? 1 : 0;
  st.Bind(1, f.run_id)
      .Bind(2, f.fault_id)
      .Bind(3, f.kind)
      .Bind(4, f.target)
      .Bind(5, f.params_json)
      .Bind(6, f.scheduled_wall_ns)
      .Bind(7, f.requested_wall_ns)
      .Bind(8, f.effective_wall_ns)
      .Bind(9, f.reverted_wall_ns)
      .Bind(10, verified)
      .Bind(11, f.anchor);
  return st.Run();
}

Status UpdateRunEnd(sql::Db& db, const RunEndRecord& end, bool* changed) {
  FL_ASSIGN_OR_RETURN(auto st, db.Prepare("UPDATE runs SET status = ?2, end_wall_ns = ?3, "
                                          "message = ?4 WHERE id = ?1"));
  st.Bind(1, end.run_id)
      .Bind(2, RunStatusName(end.status))
      .Bind(3, end.end_wall_ns)
      .Bind(4, end.message);
  FL_RETURN_IF_ERROR(st.Run());
  if (changed != nullptr) *changed = db.Changes() > 0;
  return OkStatus();
}

}  // namespace fl::reports
