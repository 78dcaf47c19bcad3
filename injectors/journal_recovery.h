// Reverting what dead processes left applied: every journal entry (journal.h) whose owner is
// dead is reverted through its injector, verified, and removed; corrupt entries are moved
// aside to PATH.corrupt and named. Used by an agent at start-up, by the local lab before a
// run, and by `faultline lab recover`.
//
// Thread-safety: one recovery at a time per journal directory.
#pragma once

#include <string>
#include <vector>

#include "injectors/injector.h"
#include "injectors/journal.h"

namespace fl::injectors {

struct RecoveryReport {
  std::vector<std::string> reverted;  // fault ids
  std::vector<std::string> failed;    // "id: error"
  std::vector<std::string> skipped;   // live owners
  // "id: ..." for each entry whose revert failed because everything it holds is gone (its
  // network namespace deleted or its link removed, and with them the link's state, qdiscs
  // and rules): nothing of it can be left applied, so the entry is removed.
  std::vector<std::string> gone;
  // "PATH: error; moved aside to PATH.corrupt" for each entry that could not be parsed.
  std::vector<std::string> corrupt;
};

// Reverts (and verifies) every entry whose owner is dead, then removes it. With include_live,
// entries of live owners are reverted too (for an operator who knows). Corrupt entries are
// moved aside and recovery goes on with the others. An entry whose every object is gone is
// removed (RecoveryReport::gone) instead of failing at every later recovery.
RecoveryReport RecoverDeadFaults(FaultJournal& journal, const InjectorRegistry& registry,
                                 bool include_live = false);

}  // namespace fl::injectors
