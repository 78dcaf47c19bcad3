// Driving an Injector with the journal: the only sanctioned way to apply a fault.
//
//   Inject: Validate -> Prepare -> journal "applying" -> Apply -> Verify(present)
//           -> journal "applied". If Apply or Verify fails, the fault is reverted and the
//           error returned.
//   Revert: journal "reverting" -> Revert -> Verify(gone) -> journal entry removed. The entry
//           stays when the revert cannot be verified, so recovery will try again.
//
// Thread-safety: as the Injector. Blocking: bounded by the injector's deadlines.
#pragma once

#include "injectors/injector.h"
#include "injectors/journal.h"

namespace fl::injectors {

// Validates and prepares only: the dry-run answer (nothing is changed, nothing journaled).
StatusOr<FaultHandle> DryRunFault(Injector& injector, const FaultSpec& spec, const Fabric& fabric);

// journal may be null (unit tests of pure logic only).
StatusOr<FaultHandle> InjectFault(Injector& injector, const FaultSpec& spec, const Fabric& fabric,
                                  FaultJournal* journal);
Status RevertFault(Injector& injector, FaultHandle& handle, FaultJournal* journal);

// Reverts when it goes out of scope unless Release()d; for tests and the CLI's hold loop.
class ScopedFault {
 public:
  ScopedFault(Injector* injector, FaultHandle handle, FaultJournal* journal)
      : injector_(injector), handle_(std::move(handle)), journal_(journal) {}
  ScopedFault(const ScopedFault&) = delete;
  ScopedFault& operator=(const ScopedFault&) = delete;
  ~ScopedFault() {
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
