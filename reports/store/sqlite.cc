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

}  // namespace

// ---- Stmt ----

Stmt::~Stmt() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Stmt::Stmt(Stmt&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)), bind_rc_(other.bind_rc_) {}

Stmt& Stmt::operator=(Stmt&& other) noexcept {
  if (this != &other) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_rc_ = other.bind_rc_;
  }
  return *this;
}

Stmt& Stmt::Bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::Bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::Bind(int index, std::string_view value) {
  int rc =
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::BindStatic(int index, std::string_view value) {
  int rc =
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_STATIC, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::BindBlobStatic(int index, std::span<const uint8_t> data) {
  // A non-null pointer even for an empty blob: a zero-length blob, not NULL.
  static const uint8_t kEmpty = 0;
  int rc = sqlite3_bind_blob64(stmt_, index, data.empty() ? &kEmpty : data.data(), data.size(),
                               SQLITE_STATIC);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::BindNull(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

StatusOr<bool> Stmt::Step() {
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

void Stmt::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_rc_ = SQLITE_OK;
}

bool Stmt::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
int64_t Stmt::Int(int col) const { return sqlite3_column_int64(stmt_, col); }
double Stmt::Double(int col) const { return sqlite3_column_double(stmt_, col); }
std::string Stmt::Text(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  if (p == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}
std::span<const uint8_t> Stmt::Blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  if (p == nullptr) return {};
  return {static_cast<const uint8_t*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col))};
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

StatusOr<std::unique_ptr<Db>> Db::Open(const std::string& path, const Options& options) {
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
  return std::unique_ptr<Db>(new Db(raw, path));
}

Db::~Db() { sqlite3_close_v2(db_); }

Status Db::Error(int rc, std::string_view context) const {
  std::string msg = path_ + ": " + sqlite3_errmsg(db_);
  if (!context.empty()) msg += " in: " + std::string(context);
  return MapCode(rc, std::move(msg));
}

Status Db::Exec(std::string_view sql) {
  std::string text(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return OkStatus();
  std::string msg = path_ + ": " + (err != nullptr ? err : sqlite3_errstr(rc)) + " in: " + text;
  sqlite3_free(err);
  return MapCode(rc, std::move(msg));
}

StatusOr<Stmt> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return Error(rc, sql);
  return Stmt(this, stmt);
}

StatusOr<int64_t> Db::QueryInt(std::string_view sql) {
  FL_ASSIGN_OR_RETURN(Stmt stmt, Prepare(sql));
  FL_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return NotFoundError("no row from: " + std::string(sql));
  return stmt.Int(0);
}

int64_t Db::Changes() const { return sqlite3_changes64(db_); }

// ---- Transaction ----

StatusOr<Transaction> Transaction::Begin(Db& db) {
  FL_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (db_ != nullptr) db_->Exec("ROLLBACK").IgnoreError();
}

Status Transaction::Commit() {
  Db* db = std::exchange(db_, nullptr);
  Status s = db->Exec("COMMIT");
  if (!s.ok()) db->Exec("ROLLBACK").IgnoreError();
  return s;
}

}  // namespace fl::reports::sql
