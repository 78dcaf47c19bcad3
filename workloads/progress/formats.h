// The progress formats of a command job (docs/scenarios.md, "Command jobs": job.progress.format,
// faultline-worker --progress-format): one table, read by the scenario loader (which names it
// takes), the worker's command runner (which output it parses) and the run driver (which ranks
// report, whether there is a warm-up to wait for). Adding a format is a row here and its parser.
//
// Thread-safety: immutable, constant data.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fl::workloads::progress {

// Where a format's progress is read from.
enum class ProgressSource {
  kStdoutRows,  // nccl-tests rows on the command's stdout (NcclTestsParser)
  kLines,       // the progress line protocol in FAULTLINE_PROGRESS (ParseProgressLine)
  kExitOnly,    // nothing: only the command's exit status
};

// Which ranks report progress.
enum class ReportingRanks {
  kAll,       // every rank
  kRankZero,  // rank 0 alone (nccl-tests and ftccl-perf print from rank 0 only)
};

struct ProgressFormat {
  std::string_view name;  // job.progress.format, --progress-format
  std::string_view doc;   // one line
  ReportingRanks reporting_ranks;
  bool has_warmup;  // progress comes in units, so the timeline waits for the warm-up ones
  ProgressSource source;
};

// The default format ("lines").
inline constexpr std::string_view kDefaultProgressFormat = "lines";

// Every format, in the order documentation lists them.
const std::vector<ProgressFormat>& ProgressFormats();
// nullptr for a name not in the table.
const ProgressFormat* FindProgressFormat(std::string_view name);
// The names joined: ProgressFormatNames(", ", " or ") = "nccl-tests, lines or exit".
std::string ProgressFormatNames(std::string_view sep, std::string_view last_sep);

}  // namespace fl::workloads::progress
