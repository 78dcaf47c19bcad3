// Db::Open, the factory above the SQL contract (sql.h): it alone knows both drivers, so that
// sql.cc, the contract's own code, includes neither.
#include "reports/store/postgres.h"
#include "reports/store/sql.h"
#include "reports/store/sqlite.h"

namespace fl::reports::sql {

StatusOr<std::unique_ptr<Db>> Db::Open(const std::string& target, const Options& options) {
  if (IsPostgresTarget(target)) return OpenPostgres(target, options);
  return OpenSqlite(target, options);
}

}  // namespace fl::reports::sql
