// Recovery of the journal's entries whose owner is dead: each one reverted through its
// injector (injection.h) and removed once verified. Apart from the journal itself, which the
// injection path writes: the journal never calls an injector.
#include "injectors/journal_recovery.h"

#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <exception>

#include "common/clock.h"
#include "common/log.h"
#include "injectors/injection.h"
#include "injectors/sys.h"

namespace fl::injectors {

namespace {

// Renames a corrupt entry out of the journal's way; returns where it went.
StatusOr<std::string> MoveAside(const std::string& path) {
  std::string dest = path + ".corrupt";
  struct stat st;
  if (lstat(dest.c_str(), &st) == 0) dest += "." + std::to_string(WallNowNs());
  if (rename(path.c_str(), dest.c_str()) != 0) return ErrnoStatus(errno, "rename " + path);
  return dest;
}

// Whether the link `ifname` exists in network namespace `netns` ("-": this process's).
bool LinkExists(const std::string& netns, const std::string& ifname) {
  if (netns == "-") return if_nametoindex(ifname.c_str()) != 0;
  if (!NetnsExists(netns)) return false;
  bool exists = true;  // when the namespace cannot be entered, assume it is there
  Status st = RunInNetns(netns, [&] {
    exists = if_nametoindex(ifname.c_str()) != 0;
    return OkStatus();
  });
  return st.ok() ? exists : true;
}

// Whether every object the fault holds ("group:netns/ifname", injection.h) is gone. A fault
// that claims none (a container kill) or a switch's port ("group:switch:NAME/port") is never
// judged gone here.
bool ObjectsGone(const FaultHandle& handle) {
  const std::vector<std::string> objects = ClaimedObjects(handle);
  if (objects.empty()) return false;
  for (const std::string& o : objects) {
    const auto colon = o.find(':');
    const auto slash = o.find('/', colon == std::string::npos ? 0 : colon + 1);
    if (colon == std::string::npos || slash == std::string::npos) return false;
    const std::string where = o.substr(colon + 1, slash - colon - 1);
    // A switch's port ("switch:NAME"): not a kernel object here; unreachable is not gone.
    if (where.rfind("switch:", 0) == 0) return false;
    if (LinkExists(where, o.substr(slash + 1))) return false;
  }
  return true;
}

}  // namespace

RecoveryReport RecoverDeadFaults(FaultJournal& journal, const InjectorRegistry& registry,
                                 bool include_live) {
  RecoveryReport report;
  std::vector<std::string> errors;
  std::vector<CorruptEntry> corrupt;
  auto entries = journal.List(&errors, &corrupt);
  for (auto& e : errors) report.failed.push_back(e);
  for (const auto& c : corrupt) {
    auto dest = MoveAside(c.path);
    if (!dest.ok()) {
      report.failed.push_back(c.error +
                              "; could not move it aside: " + dest.status().ToUserString());
      continue;
    }
    FL_LOG(kError, "inject") << "corrupt journal entry " << c.error << "; moved aside to " << *dest
                             << " (the fault it recorded, if any, was not reverted)";
    report.corrupt.push_back(c.error + "; moved aside to " + *dest);
  }
  if (!entries.ok()) {
    report.failed.push_back(entries.status().ToUserString());
    return report;
  }
  for (auto& e : *entries) {
    bool mine = e.owner_pid == getpid();
    if (!include_live && (mine || ProcessAlive(e.owner_pid, e.owner_start))) {
      report.skipped.push_back(e.handle.id);
      continue;
    }
    auto injector = registry.Create(e.handle.spec.kind);
    if (!injector.ok()) {
      report.failed.push_back(e.handle.id + ": " + injector.status().ToUserString());
      continue;
    }
    FL_LOG(kInfo, "inject") << "recovering fault " << e.handle.id << " (" << e.handle.spec.kind
                            << " on " << e.handle.spec.target << ") left by pid " << e.owner_pid;
    Status s;
    try {
      s = RevertFault(**injector, e.handle, &journal);
    } catch (const std::exception& ex) {
      // A well-formed entry whose injector-specific state confused the injector: reported,
      // left in place; the next entry is still recovered.
      s = InternalError(std::string("revert threw: ") + ex.what());
    }
    if (s.ok()) {
      report.reverted.push_back(e.handle.id);
    } else if (ObjectsGone(e.handle)) {
      // Its namespace or link went (a lab torn down, a NIC removed): what the fault did went
      // with it. Kept, the entry would fail every later recovery.
      Status rm = journal.Remove(e.handle.id);
      FL_LOG(kWarn, "inject") << "fault " << e.handle.id << " (" << e.handle.spec.kind << " on "
                              << e.handle.spec.target
                              << "): everything it held is gone, nothing to revert"
                              << (rm.ok() ? "; journal entry removed" : "; " + rm.message());
      if (rm.ok())
        report.gone.push_back(e.handle.id + ": everything it held is gone (" + s.message() + ")");
      else
        report.failed.push_back(e.handle.id + ": " + rm.ToUserString());
    } else {
      report.failed.push_back(e.handle.id + ": " + s.ToUserString());
    }
  }
  return report;
}

}  // namespace fl::injectors
