#include "reports/store/sqlite.h"

#include <sqlite3.h>

#include <utility>

namespace fl::reports::sql {

namespace {

Status MapCode(int rc, std::string message) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return DeadlineExceededError(std::move(message));
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
    case SQLITE_TOOBIG:
      return InvalidArgumentError(std::move(message));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return DataLossError(std::move(message));
    case SQLITE_CANTOPEN:
      return NotFoundError(std::move(message));
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_FULL:
      return FailedPreconditionError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

class SqliteDb;

class SqliteStmt final : public StmtImpl {
 public:
  SqliteStmt(SqliteDb* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~SqliteStmt() override { sqlite3_finalize(stmt_); }

  void BindInt(int index, int64_t value) override { Note(sqlite3_bind_int64(stmt_, index, value)); }
  void BindDouble(int index, double value) override {
    Note(sqlite3_bind_double(stmt_, index, value));
  }
  void BindText(int index, std::string_view value, bool copy) override {
    Note(sqlite3_bind_text64(stmt_, index, value.data(), value.size(),
                             copy ? SQLITE_TRANSIENT : SQLITE_STATIC, SQLITE_UTF8));
  }
  void BindBlob(int index, std::span<const uint8_t> data, bool copy) override {
    // A non-null pointer even for an empty blob: a zero-length blob, not NULL.
    static const uint8_t kEmpty = 0;
    Note(sqlite3_bind_blob64(stmt_, index, data.empty() ? &kEmpty : data.data(), data.size(),
                             copy ? SQLITE_TRANSIENT : SQLITE_STATIC));
  }
  void BindNull(int index) override { Note(sqlite3_bind_null(stmt_, index)); }

  StatusOr<bool> Step() override;
  void Reset() override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    bind_rc_ = SQLITE_OK;
  }

  bool IsNull(int col) const override { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t Int(int col) const override { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const override { return sqlite3_column_double(stmt_, col); }
  std::string Text(int col) const override {
    const auto* p = sqlite3_column_text(stmt_, col);
    if (p == nullptr) return {};
    return std::string(reinterpret_cast<const char*>(p),
                       static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }
  std::span<const uint8_t> Blob(int col) const override {
    const void* p = sqlite3_column_blob(stmt_, col);
    if (p == nullptr) return {};
    return {static_cast<const uint8_t*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col))};
  }

 private:
  void Note(int rc) {
    if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  }

  SqliteDb* db_;
  sqlite3_stmt* stmt_;
  int bind_rc_ = SQLITE_OK;  // first failed bind, reported by Step()
};

class SqliteDb final : public Db {
 public:
  SqliteDb(sqlite3* db, std::string path) : Db(std::move(path)), db_(db) {}
  ~SqliteDb() override { sqlite3_close_v2(db_); }

  Status Error(int rc, std::string_view context) const {
    std::string msg = path() + ": " + sqlite3_errmsg(db_);
    if (!context.empty()) msg += " in: " + std::string(context);
    return MapCode(rc, std::move(msg));
  }

  Status Exec(std::string_view sql) override {
    std::string text(sql);
    char* err = nullptr;
    int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
    if (rc == SQLITE_OK) return OkStatus();
    std::string msg = path() + ": " + (err != nullptr ? err : sqlite3_errstr(rc)) + " in: " + text;
    sqlite3_free(err);
    return MapCode(rc, std::move(msg));
  }

  StatusOr<Stmt> Prepare(std::string_view sql) override {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return Error(rc, sql);
    return Stmt(std::make_unique<SqliteStmt>(this, stmt));
  }

  int64_t Changes() const override { return sqlite3_changes64(db_); }
  Dialect dialect() const override { return Dialect::kSqlite; }

  StatusOr<bool> HasTable(std::string_view name) override {
    FL_ASSIGN_OR_RETURN(auto st,
                        Prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                                "name = ?1"));
    st.Bind(1, name);
    FL_ASSIGN_OR_RETURN(bool row, st.Step());
    return row && st.Int(0) > 0;
  }
  StatusOr<int64_t> CountTables() override {
    return QueryInt("SELECT count(*) FROM sqlite_master WHERE type = 'table'");
  }
  Status BeginWrite() override { return Exec("BEGIN IMMEDIATE"); }
  Status LockSchema() override { return OkStatus(); }

 private:
  sqlite3* db_;
};

StatusOr<bool> SqliteStmt::Step() {
  if (bind_rc_ != SQLITE_OK) {
    int rc = std::exchange(bind_rc_, SQLITE_OK);
    return MapCode(rc, std::string("binding a parameter: ") + sqlite3_errstr(rc) +
                           " in: " + sqlite3_sql(stmt_));
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Status s = db_->Error(rc, sqlite3_sql(stmt_));
  sqlite3_reset(stmt_);
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<Db>> OpenSqlite(const std::string& path, const Db::Options& options) {
  int flags = SQLITE_OPEN_NOMUTEX;
  if (options.read_only) {
    flags |= SQLITE_OPEN_READONLY;
  } else {
    flags |= SQLITE_OPEN_READWRITE;
    if (options.create) flags |= SQLITE_OPEN_CREATE;
  }
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg =
        "opening " + path + ": " + (raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc));
    sqlite3_close(raw);
    return MapCode(rc, std::move(msg));
  }
  sqlite3_extended_result_codes(raw, 1);
  Nanos ms = options.busy_timeout / kNsPerMs;
  sqlite3_busy_timeout(raw, static_cast<int>(ms > INT32_MAX ? INT32_MAX : ms));
  return std::unique_ptr<Db>(new SqliteDb(raw, path));
}

}  // namespace fl::reports::sql
