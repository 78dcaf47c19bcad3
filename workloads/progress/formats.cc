#include "workloads/progress/formats.h"

namespace fl::workloads::progress {

const std::vector<ProgressFormat>& ProgressFormats() {
  static const std::vector<ProgressFormat> formats = {
      {"nccl-tests", "nccl-tests result rows on stdout (ftccl-perf speaks it too)",
       ReportingRanks::kRankZero, /*has_warmup=*/true, ProgressSource::kStdoutRows},
      {"lines", "one line per iteration in the file FAULTLINE_PROGRESS names", ReportingRanks::kAll,
       /*has_warmup=*/true, ProgressSource::kLines},
      {"exit", "no progress: only the command's exit status", ReportingRanks::kAll,
       /*has_warmup=*/false, ProgressSource::kExitOnly},
  };
  return formats;
}

const ProgressFormat* FindProgressFormat(std::string_view name) {
  for (const ProgressFormat& f : ProgressFormats())
    if (f.name == name) return &f;
  return nullptr;
}

std::string ProgressFormatNames(std::string_view sep, std::string_view last_sep) {
  const auto& all = ProgressFormats();
  std::string s;
  for (size_t k = 0; k < all.size(); ++k) {
    if (k > 0) s += k + 1 == all.size() ? last_sep : sep;
    s += all[k].name;
  }
  return s;
}

}  // namespace fl::workloads::progress
