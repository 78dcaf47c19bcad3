// The table of progress formats (workloads/progress/formats.h).
#include "workloads/progress/formats.h"

#include <catch2/catch.hpp>
#include <set>

namespace fl::workloads::progress {
namespace {

TEST_CASE("progress formats: one row per name, what each says about itself", "[unit]") {
  std::set<std::string_view> names;
  for (const ProgressFormat& f : ProgressFormats()) {
    CHECK(names.insert(f.name).second);
    CHECK(FindProgressFormat(f.name) == &f);
    CHECK(!f.doc.empty());
  }
  REQUIRE(FindProgressFormat(kDefaultProgressFormat) != nullptr);
  CHECK(FindProgressFormat("nccl_tests") == nullptr);
  CHECK(FindProgressFormat("") == nullptr);
  // nccl-tests prints from rank 0 alone; exit reports no units, so no warm-up.
  CHECK(FindProgressFormat("nccl-tests")->reporting_ranks == ReportingRanks::kRankZero);
  CHECK(FindProgressFormat("nccl-tests")->source == ProgressSource::kStdoutRows);
  CHECK(FindProgressFormat("lines")->reporting_ranks == ReportingRanks::kAll);
  CHECK(!FindProgressFormat("exit")->has_warmup);
  CHECK(FindProgressFormat("lines")->has_warmup);
  CHECK(ProgressFormatNames(", ", " or ") == "nccl-tests, lines or exit");
  CHECK(ProgressFormatNames("|", "|") == "nccl-tests|lines|exit");
}

}  // namespace
}  // namespace fl::workloads::progress
