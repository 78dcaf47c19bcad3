#include "reports/store/postgres.h"

#include <libpq-fe.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>
#include <vector>

#include "common/name_chars.h"

namespace fl::reports::sql {

namespace {

constexpr Oid kByteaOid = 17;
// pg_advisory_xact_lock key of schema migrations: "flsc" as an integer.
constexpr int64_t kSchemaLockKey = 0x666c7363;

bool IsWordChar(char c) { return IsNameChar(c, "_"); }

// Calls emit(piece, is_code) for the pieces of sql: quoted strings, quoted identifiers and
// comments (is_code false) and the code between them (is_code true).
template <typename F>
void SplitCode(std::string_view sql, F&& emit) {
  size_t i = 0, code = 0;
  while (i < sql.size()) {
    char c = sql[i];
    size_t end = i;
    if (c == '\'' || c == '"') {
      end = i + 1;
      while (end < sql.size()) {
        if (sql[end] == c) {
          if (end + 1 < sql.size() && sql[end + 1] == c) {
            end += 2;  // '' or "" inside
            continue;
          }
          ++end;
          break;
        }
        ++end;
      }
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      end = sql.find('\n', i);
      if (end == std::string_view::npos) end = sql.size();
    } else {
      ++i;
      continue;
    }
    if (i > code) emit(sql.substr(code, i - code), true);
    emit(sql.substr(i, end - i), false);
    i = code = end;
  }
  if (code < sql.size()) emit(sql.substr(code), true);
}

Status MapSqlState(std::string_view state, std::string message) {
  auto cls = state.substr(0, 2);
  if (cls == "23" || cls == "22") return InvalidArgumentError(std::move(message));
  if (state == "55P03" || state == "57014" || state == "40001" || state == "40P01") {
    return DeadlineExceededError(std::move(message));
  }
  if (cls == "08" || state == "57P01" || state == "57P03") {
    return UnavailableError(std::move(message));
  }
  if (state == "3D000") return NotFoundError(std::move(message));
  if (cls == "28" || state == "42501" || cls == "53") {
    return FailedPreconditionError(std::move(message));
  }
  return InternalError(std::move(message));
}

std::string Trimmed(const char* text) {
  std::string s = text != nullptr ? text : "";
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class PgDb;

class PgStmt final : public StmtImpl {
 public:
  PgStmt(PgDb* db, std::string sql) : db_(db), sql_(std::move(sql)) {}
  ~PgStmt() override { PQclear(res_); }

  void BindInt(int index, int64_t value) override { Set(index, std::to_string(value), 0); }
  void BindDouble(int index, double value) override {
    char buf[40];
    if (std::isnan(value)) {
      Set(index, "NaN", 0);
    } else if (std::isinf(value)) {
      Set(index, value > 0 ? "Infinity" : "-Infinity", 0);
    } else {
      std::snprintf(buf, sizeof buf, "%.17g", value);
      Set(index, buf, 0);
    }
  }
  void BindText(int index, std::string_view value, bool) override {
    Set(index, std::string(value), 0);
  }
  void BindBlob(int index, std::span<const uint8_t> data, bool) override {
    Set(index, std::string(reinterpret_cast<const char*>(data.data()), data.size()), 1);
  }
  void BindNull(int index) override {
    Slot(index);
    params_[static_cast<size_t>(index - 1)].reset();
  }

  StatusOr<bool> Step() override;
  void Reset() override {
    PQclear(res_);
    res_ = nullptr;
    executed_ = false;
    row_ = rows_ = 0;
    params_.clear();
    formats_.clear();
    blobs_.clear();
  }

  bool IsNull(int col) const override { return PQgetisnull(res_, row_, col) != 0; }
  int64_t Int(int col) const override {
    const char* v = PQgetvalue(res_, row_, col);
    if (v[0] == 't' && v[1] == '\0') return 1;  // a boolean
    if (v[0] == 'f' && v[1] == '\0') return 0;
    // A numeric (sum() of BIGINT) may come with a fraction: its integer part.
    return std::strtoll(v, nullptr, 10);
  }
  double Double(int col) const override {
    return std::strtod(PQgetvalue(res_, row_, col), nullptr);
  }
  std::string Text(int col) const override {
    return std::string(PQgetvalue(res_, row_, col),
                       static_cast<size_t>(PQgetlength(res_, row_, col)));
  }
  std::span<const uint8_t> Blob(int col) const override;

 private:
  void Slot(int index) {
    if (index < 1) return;
    if (params_.size() < static_cast<size_t>(index)) {
      params_.resize(static_cast<size_t>(index));
      formats_.resize(static_cast<size_t>(index), 0);
    }
  }
  void Set(int index, std::string value, int format) {
    if (index < 1) return;
    Slot(index);
    params_[static_cast<size_t>(index - 1)] = std::move(value);
    formats_[static_cast<size_t>(index - 1)] = format;
  }

  PgDb* db_;
  std::string sql_;
  std::vector<std::optional<std::string>> params_;  // nullopt: NULL (and unbound)
  std::vector<int> formats_;                        // 0 text, 1 binary
  PGresult* res_ = nullptr;
  bool executed_ = false;
  int row_ = 0;
  int rows_ = 0;
  mutable std::map<int, std::vector<uint8_t>> blobs_;  // decoded bytea of the current row
};

class PgDb final : public Db {
 public:
  PgDb(PGconn* conn, std::string shown) : Db(std::move(shown)), conn_(conn) {}
  ~PgDb() override { PQfinish(conn_); }

  // The error of a failed result (or of the connection when there is none), as a Status.
  Status ResultError(const PGresult* res, std::string_view sql) const {
    const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    std::string text = Trimmed(res != nullptr ? PQresultErrorMessage(res) : PQerrorMessage(conn_));
    if (text.empty()) text = Trimmed(PQerrorMessage(conn_));
    std::string msg = path() + ": " + text;
    if (!sql.empty()) msg += " in: " + std::string(sql);
    if (state == nullptr || PQstatus(conn_) != CONNECTION_OK) {
      return UnavailableError(std::move(msg));
    }
    return MapSqlState(state, std::move(msg));
  }

  Status Exec(std::string_view sql) override {
    std::string text(sql);
    PGresult* res = PQexec(conn_, text.c_str());
    ExecStatusType st = PQresultStatus(res);
    Status s =
        (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) ? OkStatus() : ResultError(res, sql);
    PQclear(res);
    return s;
  }

  StatusOr<Stmt> Prepare(std::string_view sql) override {
    return Stmt(std::make_unique<PgStmt>(this, PostgresSql(sql)));
  }

  int64_t Changes() const override { return changes_; }
  Dialect dialect() const override { return Dialect::kPostgres; }

  StatusOr<bool> HasTable(std::string_view name) override {
    FL_ASSIGN_OR_RETURN(auto st, Prepare("SELECT count(*) FROM information_schema.tables WHERE "
                                         "table_schema = current_schema() AND table_name = ?1"));
    st.Bind(1, name);
    FL_ASSIGN_OR_RETURN(bool row, st.Step());
    return row && st.Int(0) > 0;
  }
  StatusOr<int64_t> CountTables() override {
    return QueryInt(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()");
  }
  // A transaction starts on a live connection: one that broke (a server restarted) is reset
  // first, and BEGIN is tried once more if the connection broke under it. Nothing of a
  // transaction can be lost this way: no statement of it has run yet.
  Status BeginWrite() override { return BeginOnLiveConnection(); }
  Status BeginRead() override { return BeginOnLiveConnection(); }
  Status BeginOnLiveConnection() {
    FL_RETURN_IF_ERROR(Revive());
    Status s = Exec("BEGIN");
    // Unavailable: the connection's own failure (no SQLSTATE from a server), whatever
    // PQstatus says yet.
    if (s.ok() || s.code() != Code::kUnavailable) return s;
    FL_RETURN_IF_ERROR(Revive(/*force=*/true));
    return Exec("BEGIN");
  }
  // Outside a transaction: resets a broken connection (PQreset; force: one that failed a
  // statement, whatever its status) and sets the session up again.
  Status Revive(bool force = false) {
    if (in_transaction() || (!force && PQstatus(conn_) == CONNECTION_OK)) return OkStatus();
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK)
      return UnavailableError(path() + ": " + Trimmed(PQerrorMessage(conn_)));
    return setup_.empty() ? OkStatus() : Exec(setup_);
  }
  bool outside_transaction() const { return !in_transaction(); }
  void set_setup(std::string sql) { setup_ = std::move(sql); }
  Status LockSchema() override {
    return Exec("SELECT pg_advisory_xact_lock(" + std::to_string(kSchemaLockKey) + ")");
  }

  PGconn* conn() { return conn_; }
  void set_changes(int64_t n) { changes_ = n; }

 private:
  PGconn* conn_;
  int64_t changes_ = 0;
  std::string setup_;  // the session's SETs, run again after a reset
};

StatusOr<bool> PgStmt::Step() {
  if (executed_) {
    if (row_ + 1 >= rows_) {
      row_ = rows_;
      return false;
    }
    ++row_;
    blobs_.clear();
    return true;
  }
  std::vector<const char*> values(params_.size());
  std::vector<int> lengths(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i]) {
      values[i] = params_[i]->data();
      lengths[i] = static_cast<int>(params_[i]->size());
    }
  }
  auto run = [&] {
    PQclear(res_);
    res_ = PQexecParams(db_->conn(), sql_.c_str(), static_cast<int>(params_.size()), nullptr,
                        values.data(), lengths.data(), formats_.data(), 0);
    return PQresultStatus(res_);
  };
  // A statement of its own (no transaction: a read, or one of the store's idempotent updates
  // and upserts) runs on a live connection, and once more if the connection broke under it.
  const bool alone = db_->outside_transaction();
  if (alone) FL_RETURN_IF_ERROR(db_->Revive());
  ExecStatusType st = run();
  if (alone && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK &&
      (PQstatus(db_->conn()) != CONNECTION_OK ||
       PQresultErrorField(res_, PG_DIAG_SQLSTATE) == nullptr) &&
      db_->Revive(/*force=*/true).ok()) {
    st = run();
  }
  if (st == PGRES_COMMAND_OK) {
    const char* n = PQcmdTuples(res_);
    db_->set_changes(n[0] != '\0' ? std::strtoll(n, nullptr, 10) : 0);
    executed_ = true;
    rows_ = row_ = 0;
    return false;
  }
  if (st == PGRES_TUPLES_OK) {
    executed_ = true;
    rows_ = PQntuples(res_);
    row_ = 0;
    blobs_.clear();
    return rows_ > 0;
  }
  Status s = db_->ResultError(res_, sql_);
  PQclear(res_);
  res_ = nullptr;
  return s;
}

std::span<const uint8_t> PgStmt::Blob(int col) const {
  const char* v = PQgetvalue(res_, row_, col);
  const size_t n = static_cast<size_t>(PQgetlength(res_, row_, col));
  if (PQftype(res_, col) != kByteaOid) return {reinterpret_cast<const uint8_t*>(v), n};
  auto& out = blobs_[col];
  out.clear();
  // bytea's text output: "\x" and two hex digits a byte (bytea_output = hex, set at Open).
  if (n >= 2 && v[0] == '\\' && v[1] == 'x') {
    out.reserve((n - 2) / 2);
    for (size_t i = 2; i + 1 < n; i += 2) {
      int hi = HexValue(v[i]), lo = HexValue(v[i + 1]);
      if (hi < 0 || lo < 0) break;
      out.push_back(static_cast<uint8_t>(hi * 16 + lo));
    }
  }
  return out;
}

void IgnoreNotice(void*, const char*) {}

}  // namespace

std::string RedactUri(std::string_view uri) {
  std::string s(uri);
  // user:password@ in the authority
  size_t scheme = s.find("://");
  if (scheme != std::string::npos) {
    size_t start = scheme + 3;
    size_t end = s.find_first_of("/?", start);
    if (end == std::string::npos) end = s.size();
    size_t at = s.rfind('@', end);
    if (at != std::string::npos && at > start) {
      size_t colon = s.find(':', start);
      if (colon != std::string::npos && colon < at) s.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // ?password=... / &password=...
  for (size_t p = 0; (p = s.find("password=", p)) != std::string::npos;) {
    if (p > 0 && s[p - 1] != '?' && s[p - 1] != '&') {
      p += 9;
      continue;
    }
    size_t v = p + 9;
    size_t e = s.find('&', v);
    s.replace(v, (e == std::string::npos ? s.size() : e) - v, "***");
    p = v + 3;
  }
  return s;
}

std::string PostgresSql(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 8);
  int next = 0;
  SplitCode(sql, [&](std::string_view piece, bool code) {
    if (!code) {
      out += piece;
      return;
    }
    for (size_t i = 0; i < piece.size(); ++i) {
      if (piece[i] != '?') {
        out += piece[i];
        continue;
      }
      size_t j = i + 1;
      while (j < piece.size() && std::isdigit(static_cast<unsigned char>(piece[j]))) ++j;
      out += '$';
      if (j > i + 1) {
        std::string_view digits = piece.substr(i + 1, j - i - 1);
        next = std::max(next, std::atoi(std::string(digits).c_str()));
        out += digits;
      } else {
        out += std::to_string(++next);
      }
      i = j - 1;
    }
  });
  return out;
}

std::string PostgresDdl(std::string_view sqlite_ddl) {
  static const std::map<std::string_view, std::string_view> kTypes = {
      {"INTEGER", "BIGINT"}, {"REAL", "DOUBLE PRECISION"}, {"BLOB", "BYTEA"}};
  std::string out;
  out.reserve(sqlite_ddl.size() + 256);
  // Words of the code so far, to spot CREATE TABLE name (.
  std::vector<std::string> recent;
  SplitCode(sqlite_ddl, [&](std::string_view piece, bool code) {
    if (!code) {
      out += piece;
      return;
    }
    size_t i = 0;
    while (i < piece.size()) {
      if (IsWordChar(piece[i])) {
        size_t j = i;
        while (j < piece.size() && IsWordChar(piece[j])) ++j;
        std::string_view word = piece.substr(i, j - i);
        auto t = kTypes.find(word);
        out += t != kTypes.end() ? t->second : word;
        recent.emplace_back(word);
        if (recent.size() > 3) recent.erase(recent.begin());
        i = j;
        continue;
      }
      char c = piece[i++];
      out += c;
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      if (c == '(' && recent.size() == 3 && recent[0] == "CREATE" && recent[1] == "TABLE") {
        out += "\n  rowid BIGINT GENERATED BY DEFAULT AS IDENTITY,";
      }
      recent.clear();
    }
  });
  return out;
}

StatusOr<std::unique_ptr<Db>> OpenPostgres(const std::string& uri, const Db::Options& options) {
  const std::string shown = RedactUri(uri);
  // Earlier keywords are defaults that the URI's own parameters override.
  const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {"10", "faultline", uri.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, 1);
  if (conn == nullptr) return UnavailableError(shown + ": libpq could not allocate a connection");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string msg = shown + ": " + Trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    if (msg.find("does not exist") != std::string::npos &&
        msg.find("database") != std::string::npos) {
      return NotFoundError(std::move(msg));
    }
    if (msg.find("authentication") != std::string::npos) {
      return FailedPreconditionError(std::move(msg));
    }
    return UnavailableError(std::move(msg));
  }
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  auto db = std::make_unique<PgDb>(conn, shown);
  Nanos ms = options.busy_timeout / kNsPerMs;
  std::string setup = "SET lock_timeout = " + std::to_string(ms < 1 ? 1 : ms) +
                      "; SET bytea_output = 'hex'; SET client_min_messages = warning";
  if (options.read_only) setup += "; SET default_transaction_read_only = on";
  FL_RETURN_IF_ERROR(db->Exec(setup));
  db->set_setup(std::move(setup));
  return std::unique_ptr<Db>(std::move(db));
}

}  // namespace fl::reports::sql
