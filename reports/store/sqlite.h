// The SQLite driver of the SQL layer (reports/store/sql.h): the only place in faultline that
// calls sqlite3_*. One connection per Db, opened in SQLite's multi-thread mode; WAL mode (set by
// the store) lets readers proceed while one writer commits. Result codes map onto Status as
// sql.h says: SQLITE_BUSY/LOCKED after the busy timeout -> kDeadlineExceeded, CONSTRAINT ->
// kInvalidArgument, CORRUPT/NOTADB -> kDataLoss, CANTOPEN -> kNotFound, the rest as listed in
// sqlite.cc.
#pragma once

#include <memory>
#include <string>

#include "reports/store/sql.h"

namespace fl::reports::sql {

[[nodiscard]] StatusOr<std::unique_ptr<Db>> OpenSqlite(const std::string& path,
                                                       const Db::Options& options);

}  // namespace fl::reports::sql
