// The fault journal: durable record of every fault that may be applied, so that no fault
// outlives the process that applied it.
//
// Rules: an entry is written (fsynced, atomically) before the fault is applied, updated once
// it is effective, and removed only after its revert has been verified. Each entry names its
// owner (pid and start time, so a recycled pid is not mistaken for it). A process that finds
// entries whose owner is dead reverts them (journal_recovery.h RecoverDeadFaults), e.g.
// `faultline lab recover` or an agent at start-up.
//
// Layout: DIR/<fault id>.json, one file per fault. DIR defaults to
// $FAULTLINE_STATE_DIR/journal, $FAULTLINE_STATE_DIR defaulting to /run/faultline.
//
// Bad entries: each entry is checked field by field (ParseJournalEntry: types, ranges, a safe
// id that matches the file name). RecoverDeadFaults renames a corrupt entry to
// DIR/<name>.json.corrupt (out of the way of later recoveries, kept for the operator), names
// it in the report and goes on with the others; nothing in a journal file can throw or abort.
//
// Thread-safety: distinct faults may be recorded and removed concurrently (one file each).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "injectors/injector.h"

namespace fl::injectors {

// $FAULTLINE_STATE_DIR or /run/faultline.
std::string StateDir();

struct JournalEntry {
  FaultHandle handle;
  int owner_pid = 0;
  unsigned long long owner_start = 0;
  std::string phase;  // "applying", "applied", "reverting"
  std::string path;
};

// The largest journal file read; a bigger one is corrupt.
inline constexpr size_t kMaxJournalEntryBytes = 1 << 20;

// One journal file's text, checked field by field: owner_pid (1..4194304), owner_start
// (unsigned), phase (applying/applied/reverting), handle (HandleFromJson: id a safe name, kind,
// target, params of strings, non-negative times, state an object). Pure and never throws (a
// libFuzzer target calls it). Errors are DataLoss "SOURCE: ...". The entry's path is left
// empty.
StatusOr<JournalEntry> ParseJournalEntry(std::string_view text,
                                         std::string_view source = "journal entry");

struct CorruptEntry {
  std::string path;
  std::string error;  // "PATH: what is wrong"
};

class FaultJournal {
 public:
  // dir empty: StateDir() + "/journal".
  explicit FaultJournal(std::string dir = "");

  const std::string& dir() const { return dir_; }
  // Owned by this process.
  Status Record(const FaultHandle& handle, std::string_view phase);
  Status Remove(const std::string& fault_id);
  // Entries that could not be parsed are reported as DataLoss in errors (and left in place),
  // or, when corrupt is given, there instead. Files that cannot be read go to errors.
  StatusOr<std::vector<JournalEntry>> List(std::vector<std::string>* errors = nullptr,
                                           std::vector<CorruptEntry>* corrupt = nullptr) const;

 private:
  std::string dir_;
};

}  // namespace fl::injectors
