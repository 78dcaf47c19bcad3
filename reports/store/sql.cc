#include "reports/store/sql.h"

#include <utility>

namespace fl::reports::sql {

bool IsPostgresTarget(std::string_view target) {
  return target.starts_with("postgresql://") || target.starts_with("postgres://");
}

// ---- Stmt ----

Status Stmt::Run() {
  for (;;) {
    auto row = Step();
    if (!row.ok()) {
      Reset();
      return row.status();
    }
    if (!*row) break;
  }
  Reset();
  return OkStatus();
}

std::optional<int64_t> Stmt::OptInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int(col);
}
std::optional<double> Stmt::OptDouble(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Double(col);
}
std::optional<std::string> Stmt::OptText(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Text(col);
}

// ---- Db ----

StatusOr<int64_t> Db::QueryInt(std::string_view sql) {
  FL_ASSIGN_OR_RETURN(Stmt stmt, Prepare(sql));
  FL_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return NotFoundError("no row from: " + std::string(sql));
  int64_t v = stmt.Int(0);
  stmt.Reset();
  return v;
}

// ---- Transaction ----

StatusOr<Transaction> Transaction::Begin(Db& db) {
  if (db.txn_depth_ == 0) {
    FL_RETURN_IF_ERROR(db.BeginWrite());
    db.txn_failed_ = false;
  }
  ++db.txn_depth_;
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (db_ == nullptr) return;
  if (--db_->txn_depth_ > 0) {
    db_->txn_failed_ = true;
    return;
  }
  // A failed ROLLBACK leaves SQLite rolling back on its own when the connection closes.
  db_->Exec("ROLLBACK").IgnoreError();
}

Status Transaction::Commit() {
  Db* db = std::exchange(db_, nullptr);
  if (--db->txn_depth_ > 0) return OkStatus();
  if (db->txn_failed_) {
    db->txn_failed_ = false;
    // The failed step is the error to report; a failed ROLLBACK rolls back on close.
    db->Exec("ROLLBACK").IgnoreError();
    return FailedPreconditionError(db->path() +
                                   ": a step of the transaction failed; all of it rolled back");
  }
  Status s = db->Exec("COMMIT");
  // The COMMIT error is the one returned.
  if (!s.ok()) db->Exec("ROLLBACK").IgnoreError();
  return s;
}

}  // namespace fl::reports::sql
