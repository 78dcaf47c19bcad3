// A thin layer over the SQLite C API: the only place in faultline that calls sqlite3_*.
//
// Db owns one connection; Stmt owns one prepared statement. Every SQLite error becomes an
// fl::Status: SQLITE_BUSY/LOCKED after the busy timeout -> kDeadlineExceeded, CONSTRAINT ->
// kInvalidArgument, CORRUPT/NOTADB -> kDataLoss, CANTOPEN -> kNotFound or kFailedPrecondition,
// the rest kInternal. Messages carry SQLite's own text and the SQL that failed.
//
// Thread-safety: a Db and its Stmts are used by one thread at a time (the caller serialises;
// the connection is opened in SQLite's multi-thread mode). Different Db objects on the same
// file may be used from different threads or processes; WAL mode lets readers proceed while
// one writer commits.
// Ownership: a Stmt must not outlive the Db that prepared it.
// Blocking: every call may block on file I/O; a call that meets a lock held by another
// connection waits at most the busy timeout given to Open, then fails with kDeadlineExceeded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace fl::reports::sql {

class Db;

class Stmt {
 public:
  Stmt() = default;
  ~Stmt();
  Stmt(Stmt&& other) noexcept;
  Stmt& operator=(Stmt&& other) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Parameters are 1-based, as in SQL ("?1").
  Stmt& Bind(int index, int64_t value);
  Stmt& Bind(int index, int value) { return Bind(index, static_cast<int64_t>(value)); }
  Stmt& Bind(int index, double value);
  Stmt& Bind(int index, std::string_view value);
  Stmt& Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  Stmt& Bind(int index, const std::string& value) { return Bind(index, std::string_view(value)); }
  // Binds text without copying it. REQUIRES: value outlives the next Step()/Run()/Reset().
  Stmt& BindStatic(int index, std::string_view value);
  Stmt& BindNull(int index);
  // Binds a blob without copying it. REQUIRES: data outlives the next Step()/Run()/Reset().
  Stmt& BindBlobStatic(int index, std::span<const uint8_t> data);
  template <typename T>
  Stmt& Bind(int index, const std::optional<T>& value) {
    return value ? Bind(index, *value) : BindNull(index);
  }

  // Runs one step. Returns true when a row is available, false when done.
  [[nodiscard]] StatusOr<bool> Step();
  // Steps to completion, ignoring any rows (INSERT/UPDATE), then resets for reuse.
  [[nodiscard]] Status Run();
  // Resets the statement and clears bindings so it can be reused.
  void Reset();

  // Columns are 0-based, as in the SQLite API. REQUIRES: the last Step() returned true.
  bool IsNull(int col) const;
  int64_t Int(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  // The column as bytes (a blob, or text's bytes). Valid until the next Step()/Reset().
  std::span<const uint8_t> Blob(int col) const;
  std::optional<int64_t> OptInt(int col) const;
  std::optional<double> OptDouble(int col) const;
  std::optional<std::string> OptText(int col) const;

 private:
  friend class Db;
  Stmt(Db* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Status BindError(int rc);

  Db* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  int bind_rc_ = 0;  // first failed bind, reported by Step()
};

class Db {
 public:
  struct Options {
    bool create = true;  // create the file when missing
    bool read_only = false;
    Nanos busy_timeout = 5 * kNsPerSec;
  };

  [[nodiscard]] static StatusOr<std::unique_ptr<Db>> Open(const std::string& path,
                                                          const Options& options);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Runs one or more statements without results.
  [[nodiscard]] Status Exec(std::string_view sql);
  [[nodiscard]] StatusOr<Stmt> Prepare(std::string_view sql);
  // The first column of the first row of a query, as an integer (NotFound when no row).
  [[nodiscard]] StatusOr<int64_t> QueryInt(std::string_view sql);

  int64_t Changes() const;
  const std::string& path() const { return path_; }

  // Maps a SQLite result code (and this connection's message) onto a Status.
  Status Error(int rc, std::string_view context) const;

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// A transaction that rolls back unless committed. BEGIN IMMEDIATE takes the write lock up
// front, so a busy database fails at Begin (after the busy timeout), not half-way through.
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
