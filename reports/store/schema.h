// The results database schema and its migrations (docs/store.md lists every version).
//
// Version N is reached from N-1 by kMigrations[N-1]; each migration runs in its own
// transaction together with the schema_version update, so a crash leaves the database at the
// old or the new version, never between. A database newer than this build is refused.
//
// Thread-safety: functions operate on the Db they are given; the caller serialises.
// Blocking: file I/O; waits for other writers at most the Db's busy timeout.
#pragma once

#include <span>
#include <string_view>

#include <string>
#include "common/status.h"

#include "reports/store/sql.h"

namespace fl::reports {

inline constexpr int kSchemaVersion = 9;

// The SQL of each migration: index 0 creates version 1 from an empty database.
std::span<const std::string_view> SchemaMigrations();

// The version recorded in schema_version, 0 for an empty database (no tables at all).
// FailedPrecondition for a non-empty database that is not a faultline results database.
[[nodiscard]] StatusOr<int> ReadSchemaVersion(sql::Db& db);

// Migration `version` (0: the one that creates version 1) in the dialect's SQL.
std::string MigrationSql(sql::Dialect dialect, int version);

// Brings the database to target_version (default: this build's). FailedPrecondition when the
// database is newer than target_version, naming both versions.
[[nodiscard]] Status MigrateSchema(sql::Db& db, int target_version = kSchemaVersion);

}  // namespace fl::reports
