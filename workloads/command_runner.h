// A command as the job under test (docs/scenarios.md, "Command jobs"): faultline-worker's
// command mode runs one rank of it. It starts the command (an argv, never a shell string) in
// its own process group with the rank's environment, keeps its stdout and stderr in the run's
// directory (LOG_DIR/rank-N.stdout, .stderr), reads its progress from outside (nccl-tests
// rows on stdout, the line protocol in FAULTLINE_PROGRESS, or only its exit status) and the
// network errors its collective library logs, and reports them to a TelemetrySink as the same
// samples, CCL events and worker events faultline-worker writes. On exit it reports a
// command_exit event with the status and the tail of stderr.
//
// The command is started through the one process layer (common/process.h, fl::Spawn: its own
// process group, stdin /dev/null, stdout and stderr piped to the runner), with the runner's
// whole environment plus the rank's. Its log files must open, or it is not started (127, the
// reason in command_exit); a later failed write is said once on stderr and in command_exit
// (log_errors), and that file is not written to again.
//
// A stop request (SIGTERM to the runner), the job's own iterations or duration being reached,
// all end the command: SIGTERM to its process group, SIGKILL after a grace; nothing of the
// group survives the runner.
//
// Thread-safety: RunCommand runs on the calling thread; `stop` may be set from a signal
// handler.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "workloads/progress/formats.h"
#include "workloads/worker.h"

namespace fl::workloads {

struct CommandOptions {
  std::vector<std::string> argv;  // argv[0]: an absolute path
  // The rank's whole extra environment (RANK, MASTER_ADDR, ..., then the job's env), added to
  // the runner's own.
  std::map<std::string, std::string> env;
  // A name in workloads/progress/formats.h (nccl-tests | lines | exit). Whatever the format,
  // lines in FAULTLINE_PROGRESS are read.
  std::string progress_format{progress::kDefaultProgressFormat};
  std::string log_dir;  // rank-N.stdout/.stderr/.progress go here
  int rank = 0;
  uint64_t iterations = 0;  // stop after this many progress units; 0: no limit
  Nanos duration_ns = 0;    // stop after this long; 0: no limit
  // A restarted job: iteration numbers reported are the command's plus this.
  uint64_t first_iteration = 0;
  Nanos stop_grace_ns = 2 * kNsPerSec;  // SIGTERM to SIGKILL
};

struct CommandResult {
  int exit_code = 0;           // the runner's: 0 completed (or stopped by us), else the command's
  int command_code = -1;       // the command's exit code, -1 when it was signalled
  int command_signal = 0;      // the signal that ended it, 0 if none
  bool stopped_by_us = false;  // iterations/duration reached or a stop request
  uint64_t progress_units = 0;
  std::string stderr_tail;
};

// The path of a rank's file in log_dir: "rank-3.stdout".
std::string RankLogPath(const std::string& log_dir, int rank, const std::string& suffix);

// Exit codes: the command's own when it ended by itself (128 + signal when signalled), 0 when
// the runner ended it (iterations/duration reached or a stop request), 127 when it could not
// be started.
CommandResult RunCommand(const CommandOptions& options, TelemetrySink& sink,
                         const std::atomic<bool>& stop);

}  // namespace fl::workloads
