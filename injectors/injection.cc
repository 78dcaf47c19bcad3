#include "injectors/injection.h"

#include "common/ids.h"
#include "common/log.h"

namespace fl::injectors {

StatusOr<FaultHandle> DryRunFault(Injector& injector, const FaultSpec& spec, const Fabric& fabric) {
  FL_RETURN_IF_ERROR(injector.Validate(spec));
  return injector.Prepare(spec, fabric);
}

StatusOr<FaultHandle> InjectFault(Injector& injector, const FaultSpec& spec, const Fabric& fabric,
                                  FaultJournal* journal) {
  FL_ASSIGN_OR_RETURN(FaultHandle handle, DryRunFault(injector, spec, fabric));
  if (handle.id.empty()) handle.id = spec.kind + "-" + RandomHex(6);
  if (journal) FL_RETURN_IF_ERROR(journal->Record(handle, "applying"));
  Status s = injector.Apply(handle);
  if (s.ok()) s = injector.Verify(handle, Expect::kPresent);
  if (!s.ok()) {
    Status r = RevertFault(injector, handle, journal);
    if (!r.ok()) {
      FL_LOG(kError, "inject") << "fault " << handle.id
                               << " failed and its revert failed too: " << r.ToString()
                               << " (the journal keeps it for recovery)";
    }
    s.AddTrail(__FILE__, __LINE__);
    return s;
  }
  if (journal) FL_RETURN_IF_ERROR(journal->Record(handle, "applied"));
  FL_LOG(kInfo, "inject") << spec.kind << " on " << spec.target << " effective after "
                          << (handle.effective_wall_ns - handle.requested_wall_ns) / 1000 << " us";
  return handle;
}

Status RevertFault(Injector& injector, FaultHandle& handle, FaultJournal* journal) {
  if (journal) FL_RETURN_IF_ERROR(journal->Record(handle, "reverting"));
  FL_RETURN_IF_ERROR(injector.Revert(handle));
  FL_RETURN_IF_ERROR(injector.Verify(handle, Expect::kGone));
  handle.reverted_wall_ns = WallNowNs();
  if (journal) FL_RETURN_IF_ERROR(journal->Remove(handle.id));
  return OkStatus();
}

}  // namespace fl::injectors
