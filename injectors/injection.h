// Driving an Injector with the journal: the only sanctioned way to apply a fault.
//
//   Inject: Validate -> Prepare -> admit (optional) -> journal "applying" -> Apply
//           -> Verify(present) -> journal "applied". If Apply or Verify fails, the fault is
//           reverted and the error returned.
//   Revert: journal "reverting" -> Revert -> Verify(gone) -> journal entry removed. The entry
//           stays when the revert cannot be verified, so recovery will try again.
//
// Overlapping faults: an injector whose faults cannot stack on one object (a root qdisc, a
// link's administrative state) claims it in Prepare (ClaimObjects). Inject refuses, before
// anything is journaled or applied, a fault that claims an object some fault in the journal
// (of any process sharing the state directory) still holds: FailedPrecondition naming that
// fault. The check and the "applying" record happen under a lock on the journal directory.
// docs/injectors.md lists, per injector, what it claims and what its revert restores.
//
// Thread-safety: as the Injector. Blocking: bounded by the injector's deadlines.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "injectors/injector.h"
#include "injectors/journal.h"

namespace fl::injectors {

// Objects a fault holds exclusively, as "<group>:<netns>/<ifname>" (group: root-qdisc,
// link-admin). Stored in handle.state["objects"].
void ClaimObjects(FaultHandle& handle, const std::vector<std::string>& objects);
std::vector<std::string> ClaimedObjects(const FaultHandle& handle);
std::string ObjectName(std::string_view group, const std::string& netns, const std::string& ifname);

// "fault <id> (<kind> on <target>)" for the journal entry that claims object; "" when none.
std::string HolderOf(const std::string& object, const FaultJournal& journal);

// FailedPrecondition when one of handle's objects is claimed by another entry of journal.
Status CheckNoOverlap(const FaultHandle& handle, const FaultJournal& journal);

// Validates and prepares only: the dry-run answer (nothing is changed, nothing journaled).
StatusOr<FaultHandle> DryRunFault(Injector& injector, const FaultSpec& spec, const Fabric& fabric);

// journal may be null (unit tests of pure logic only). admit, when set, sees the prepared
// handle (its resolved ports) before anything is journaled or applied; an error from it is
// returned as is (the agent's policy: switch ports it may not touch).
StatusOr<FaultHandle> InjectFault(Injector& injector, const FaultSpec& spec, const Fabric& fabric,
                                  FaultJournal* journal,
                                  const std::function<Status(const FaultHandle&)>& admit = {});
Status RevertFault(Injector& injector, FaultHandle& handle, FaultJournal* journal);

// InjectFault in two steps, for a fault prepared ahead of its time (the agent's faults sent
// ahead): PrepareFault does all of it but Apply (Validate, Prepare, admit, the overlap check
// and the "applying" record); FireFault then applies, verifies and records "applied" (on a
// failure it reverts and returns the error, as InjectFault). A prepared fault that is not to
// fire is given to CancelPrepared: nothing was applied, and its journal entry is removed.
StatusOr<FaultHandle> PrepareFault(Injector& injector, const FaultSpec& spec, const Fabric& fabric,
                                   FaultJournal* journal,
                                   const std::function<Status(const FaultHandle&)>& admit = {});
Status FireFault(Injector& injector, FaultHandle& handle, FaultJournal* journal);
Status CancelPrepared(const FaultHandle& handle, FaultJournal* journal);

// RevertFault in two steps, for a revert sent ahead of its time: PrepareRevert records
// "reverting" (the journal's fsync, out of the revert's time; a crash from then on reverts the
// fault on recovery, as it would an applied one); FireRevert reverts, stamps reverted_wall_ns
// when the revert took effect (before it is verified, as an inject's effective time is), verifies
// and removes the entry.
Status PrepareRevert(const FaultHandle& handle, FaultJournal* journal);
Status FireRevert(Injector& injector, FaultHandle& handle, FaultJournal* journal);

// Reverts when it goes out of scope unless Release()d; for tests and the CLI's hold loop.
class ScopedFault {
 public:
  ScopedFault(Injector* injector, FaultHandle handle, FaultJournal* journal)
      : injector_(injector), handle_(std::move(handle)), journal_(journal) {}
  ScopedFault(const ScopedFault&) = delete;
  ScopedFault& operator=(const ScopedFault&) = delete;
  ~ScopedFault() {
    // A destructor cannot return it: RevertFault logs a failure and the journal keeps the
    // fault for the next start's recovery.
    if (injector_) RevertFault(*injector_, handle_, journal_).IgnoreError();
  }
  FaultHandle& handle() { return handle_; }
  Status Revert() { return RevertFault(*injector_, handle_, journal_); }

 private:
  Injector* injector_;
  FaultHandle handle_;
  FaultJournal* journal_;
};

}  // namespace fl::injectors
