// The shapes that the store's calls share, written once: a write that is one transaction
// (InTransaction), a run's rows of one table replaced by others (ReplaceRunRows: delete, then
// insert, in one transaction), and the rows of a query read one by one (ForEachRow) or into a
// vector (SelectRunRows).
//
// Thread-safety, ownership, blocking: as sql.h (the caller serialises the use of a Db; every
// call may wait up to the busy timeout). Errors: the first one ends the call; a transaction
// ended by an error rolls back (sql::Transaction).
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/status.h"
#include "reports/store/sql.h"

namespace fl::reports {

namespace replace_rows_internal {
// fn(args...) as a Status: OkStatus() when fn returns nothing.
template <typename Fn, typename... Args>
Status AsStatus(Fn& fn, Args&... args) {
  if constexpr (std::is_void_v<std::invoke_result_t<Fn&, Args&...>>) {
    fn(args...);
    return OkStatus();
  } else {
    return fn(args...);
  }
}
}  // namespace replace_rows_internal

// Runs body() (returning Status) inside one write transaction: committed when body succeeds,
// rolled back otherwise. Nests inside an open transaction (sql::Transaction).
template <typename Body>
[[nodiscard]] Status InTransaction(sql::Db& db, Body&& body) {
  FL_ASSIGN_OR_RETURN(auto txn, sql::Transaction::Begin(db));
  FL_RETURN_IF_ERROR(body());
  return txn.Commit();
}

// In one transaction: deletes the rows of `table` whose run_id is run_id, then runs insert_sql
// once per row of rows after bind(stmt, row) set its parameters (bind returns void, or a Status
// that stops it: a row that does not belong there).
template <typename Rows, typename Bind>
[[nodiscard]] Status ReplaceRunRows(sql::Db& db, std::string_view table, const std::string& run_id,
                                    std::string_view insert_sql, const Rows& rows, Bind&& bind) {
  return InTransaction(db, [&]() -> Status {
    FL_ASSIGN_OR_RETURN(auto del,
                        db.Prepare("DELETE FROM " + std::string(table) + " WHERE run_id = ?1"));
    del.Bind(1, run_id);
    FL_RETURN_IF_ERROR(del.Run());
    FL_ASSIGN_OR_RETURN(auto st, db.Prepare(insert_sql));
    for (const auto& row : rows) {
      FL_RETURN_IF_ERROR(replace_rows_internal::AsStatus(bind, st, row));
      FL_RETURN_IF_ERROR(st.Run());
    }
    return OkStatus();
  });
}

// Steps st to its end, calling row(st) for each row (row returns void, or a Status that stops
// it). Leaves st as the last Step left it: a caller that reuses it Resets it.
template <typename RowFn>
[[nodiscard]] Status ForEachRow(sql::Stmt& st, RowFn&& row) {
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool more, st.Step());
    if (!more) return OkStatus();
    FL_RETURN_IF_ERROR(replace_rows_internal::AsStatus(row, st));
  }
}

// The rows of `query` (whose ?1 is the run id) as read(stmt) makes each, in the query's order.
template <typename Read>
[[nodiscard]] auto SelectRunRows(sql::Db& db, std::string_view query, const std::string& run_id,
                                 Read&& read)
    -> StatusOr<std::vector<std::invoke_result_t<Read&, const sql::Stmt&>>> {
  FL_ASSIGN_OR_RETURN(auto st, db.Prepare(query));
  st.Bind(1, run_id);
  std::vector<std::invoke_result_t<Read&, const sql::Stmt&>> out;
  FL_RETURN_IF_ERROR(ForEachRow(st, [&](const sql::Stmt& s) { out.push_back(read(s)); }));
  return out;
}

}  // namespace fl::reports
