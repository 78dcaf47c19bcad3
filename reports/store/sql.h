// The SQL layer under the results store: one connection (Db) and its prepared statements
// (Stmt), with two drivers behind them, SQLite (reports/store/sqlite.h, the embedded default:
// a file) and PostgreSQL (reports/store/postgres.h, a server shared by many coordinators).
// Db::Open picks the driver from the target: "postgresql://..." or "postgres://..." (a libpq
// connection URI) is PostgreSQL, anything else is a SQLite file path.
//
// The store writes one SQL for both: SQLite's types in DDL (INTEGER, REAL, TEXT, BLOB; the
// PostgreSQL driver's schema migration maps them, schema.cc), numbered parameters ?1, ?2
// (PostgreSQL's $1, $2 after translation), `INSERT ... ON CONFLICT (...) DO UPDATE` instead of
// `INSERT OR REPLACE`, `WHERE TRUE` instead of `WHERE 1`, and `rowid` for insertion order
// (every PostgreSQL table gets an identity column of that name).
//
// Every driver error becomes an fl::Status: a lock or busy wait past the timeout ->
// kDeadlineExceeded, a constraint -> kInvalidArgument, a corrupt file -> kDataLoss, a missing
// file -> kNotFound, a server that cannot be reached -> kUnavailable, the rest kInternal.
// Messages carry the driver's own text, the database (path, or the URI without its password)
// and the SQL that failed.
//
// Thread-safety: a Db and its Stmts are used by one thread at a time (the caller serialises).
// Different Db objects on one database may be used from different threads or processes.
// Ownership: a Stmt must not outlive the Db that prepared it.
// Blocking: every call may block on file or network I/O; a call that meets a lock held by
// another connection waits at most the busy timeout given to Open, then fails with
// kDeadlineExceeded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace fl::reports::sql {

enum class Dialect { kSqlite, kPostgres };

// Whether target names a PostgreSQL database (a postgresql:// or postgres:// URI).
bool IsPostgresTarget(std::string_view target);

// What a driver implements for one prepared statement (see Stmt for the contract).
class StmtImpl {
 public:
  virtual ~StmtImpl() = default;
  virtual void BindInt(int index, int64_t value) = 0;
  virtual void BindDouble(int index, double value) = 0;
  // copy: false when the caller keeps value alive until the next Step()/Reset().
  virtual void BindText(int index, std::string_view value, bool copy) = 0;
  virtual void BindBlob(int index, std::span<const uint8_t> data, bool copy) = 0;
  virtual void BindNull(int index) = 0;
  virtual StatusOr<bool> Step() = 0;
  virtual void Reset() = 0;
  virtual bool IsNull(int col) const = 0;
  virtual int64_t Int(int col) const = 0;
  virtual double Double(int col) const = 0;
  virtual std::string Text(int col) const = 0;
  virtual std::span<const uint8_t> Blob(int col) const = 0;
};

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::unique_ptr<StmtImpl> impl) : impl_(std::move(impl)) {}

  // Parameters are 1-based, as in SQL ("?1").
  Stmt& Bind(int index, int64_t value) {
    impl_->BindInt(index, value);
    return *this;
  }
  Stmt& Bind(int index, int value) { return Bind(index, static_cast<int64_t>(value)); }
  Stmt& Bind(int index, double value) {
    impl_->BindDouble(index, value);
    return *this;
  }
  Stmt& Bind(int index, std::string_view value) {
    impl_->BindText(index, value, true);
    return *this;
  }
  Stmt& Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  Stmt& Bind(int index, const std::string& value) { return Bind(index, std::string_view(value)); }
  // Binds text without copying it. REQUIRES: value outlives the next Step()/Run()/Reset().
  Stmt& BindStatic(int index, std::string_view value) {
    impl_->BindText(index, value, false);
    return *this;
  }
  Stmt& BindNull(int index) {
    impl_->BindNull(index);
    return *this;
  }
  // Binds a blob without copying it. REQUIRES: data outlives the next Step()/Run()/Reset().
  Stmt& BindBlobStatic(int index, std::span<const uint8_t> data) {
    impl_->BindBlob(index, data, false);
    return *this;
  }
  template <typename T>
  Stmt& Bind(int index, const std::optional<T>& value) {
    return value ? Bind(index, *value) : BindNull(index);
  }

  // Runs one step. Returns true when a row is available, false when done.
  [[nodiscard]] StatusOr<bool> Step() { return impl_->Step(); }
  // Steps to completion, ignoring any rows (INSERT/UPDATE), then resets for reuse.
  [[nodiscard]] Status Run();
  // Resets the statement and clears bindings so it can be reused.
  void Reset() { impl_->Reset(); }

  // Columns are 0-based. REQUIRES: the last Step() returned true.
  bool IsNull(int col) const { return impl_->IsNull(col); }
  int64_t Int(int col) const { return impl_->Int(col); }
  double Double(int col) const { return impl_->Double(col); }
  std::string Text(int col) const { return impl_->Text(col); }
  // The column as bytes (a blob, or text's bytes). Valid until the next Step()/Reset().
  std::span<const uint8_t> Blob(int col) const { return impl_->Blob(col); }
  std::optional<int64_t> OptInt(int col) const;
  std::optional<double> OptDouble(int col) const;
  std::optional<std::string> OptText(int col) const;

 private:
  std::unique_ptr<StmtImpl> impl_;
};

class Db {
 public:
  struct Options {
    bool create =
        true;  // SQLite: create the file when missing (PostgreSQL: the database must exist)
    bool read_only = false;
    Nanos busy_timeout = 5 * kNsPerSec;
  };

  // A SQLite file path, or a postgresql:// URI (IsPostgresTarget). Defined in open_db.cc, the
  // one file that knows both drivers.
  [[nodiscard]] static StatusOr<std::unique_ptr<Db>> Open(const std::string& target,
                                                          const Options& options);
  virtual ~Db() = default;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Runs one or more statements without results.
  [[nodiscard]] virtual Status Exec(std::string_view sql) = 0;
  [[nodiscard]] virtual StatusOr<Stmt> Prepare(std::string_view sql) = 0;
  // The first column of the first row of a query, as an integer (NotFound when no row).
  [[nodiscard]] StatusOr<int64_t> QueryInt(std::string_view sql);
  // Rows changed by the last INSERT/UPDATE/DELETE.
  virtual int64_t Changes() const = 0;
  virtual Dialect dialect() const = 0;
  // Whether a table of this name exists, and how many tables there are (in the connection's
  // schema): what tells an empty database from a foreign one.
  [[nodiscard]] virtual StatusOr<bool> HasTable(std::string_view name) = 0;
  [[nodiscard]] virtual StatusOr<int64_t> CountTables() = 0;
  // Starts a write transaction that holds the write lock from the start (SQLite: BEGIN
  // IMMEDIATE; PostgreSQL: BEGIN).
  [[nodiscard]] virtual Status BeginWrite() = 0;
  // Starts a read transaction (a consistent snapshot); ended with COMMIT.
  [[nodiscard]] virtual Status BeginRead() { return Exec("BEGIN"); }
  // Inside a write transaction: waits until no other connection is migrating the schema
  // (PostgreSQL: a transaction-scoped advisory lock; SQLite: BEGIN IMMEDIATE already did).
  [[nodiscard]] virtual Status LockSchema() = 0;
  // The database for messages: the file path, or the URI without its password.
  const std::string& path() const { return path_; }

 protected:
  explicit Db(std::string path) : path_(std::move(path)) {}
  // Whether a Transaction is open on this connection (a driver may reconnect only outside one).
  bool in_transaction() const { return txn_depth_ > 0; }

 private:
  friend class Transaction;
  std::string path_;
  int txn_depth_ = 0;        // open Transactions on this connection
  bool txn_failed_ = false;  // an inner one ended without Commit
};

// A transaction that rolls back unless committed. It takes the write lock up front
// (Db::BeginWrite), so a busy database fails at Begin (after the busy timeout), not half-way.
// Transactions nest: one begun while another is open on the same Db is part of it (its
// Commit only ends it; ending it without Commit makes the outer Commit roll everything back
// and fail with kFailedPrecondition), so a step that is one transaction alone can also be one part
// of a bigger one (Store::ImportRun).
class Transaction {
 public:
  [[nodiscard]] static StatusOr<Transaction> Begin(Db& db);
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  [[nodiscard]] Status Commit();

 private:
  explicit Transaction(Db* db) : db_(db) {}
  Db* db_;
};

}  // namespace fl::reports::sql
