// Helpers for injectors acting on switch ports through a SwitchDriver (builtin_internal.h).
#include "injectors/builtin_internal.h"
#include "injectors/switch_drivers.h"
#include "injectors/sys.h"

namespace fl::injectors::internal {

bool LabGone(const Port& p) { return !p.netns.empty() && !NetnsExists(p.netns); }

StatusOr<std::unique_ptr<SwitchDriver>> DriverOf(const Port& p) {
  if (!p.sw)
    return FailedPreconditionError("switch port " + p.sw_port + " (" + p.name +
                                   ") has no switch connection in its handle");
  return OpenSwitchDriver(*p.sw);
}

Deadline SwitchDeadline(const Port& p) {
  return Deadline::After(p.sw ? p.sw->command_timeout : 20 * kNsPerSec);
}

std::string SwitchPortLabel(const Port& p) {
  return (p.sw ? p.sw->name : std::string("?")) + " " + p.sw_port;
}

StatusOr<std::unique_ptr<SwitchDriver>> CheckDriverPort(const Port& p, std::string_view kind,
                                                        const std::vector<SwitchOp>& ops) {
  FL_ASSIGN_OR_RETURN(auto driver, DriverOf(p));
  FL_RETURN_IF_ERROR(driver->CheckPortName(p.sw_port));
  for (SwitchOp op : ops)
    if (!driver->Supports(op))
      return FailedPreconditionError(std::string(kind) + ": " + p.sw->Describe() + ": driver " +
                                     p.sw->driver + " (preset " + p.sw->preset + ") has no " +
                                     std::string(SwitchOpName(op)) + " operation");
  return driver;
}

}  // namespace fl::injectors::internal
