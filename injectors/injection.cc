#include "injectors/injection.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>

#include "common/file_util.h"
#include "common/ids.h"
#include "common/log.h"

namespace fl::injectors {
namespace {

// An exclusive flock on DIR/.lock while an overlap check and its "applying" record happen,
// so two processes cannot both pass the check for one object.
class JournalLock {
 public:
  explicit JournalLock(const std::string& dir) {
    if (!MakeDirs(dir, 0700).ok()) return;
    fd_ = open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) return;
    // Bounded: the holder only lists the journal and writes one file.
    locked_ = WaitUntil([&] { return flock(fd_, LOCK_EX | LOCK_NB) == 0; },
                        Deadline::After(10 * kNsPerSec), kNsPerMs);
  }
  ~JournalLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  bool locked() const { return locked_; }

 private:
  int fd_ = -1;
  bool locked_ = false;
};

}  // namespace

std::string ObjectName(std::string_view group, const std::string& netns,
                       const std::string& ifname) {
  return std::string(group) + ":" + (netns.empty() ? "-" : netns) + "/" + ifname;
}

void ClaimObjects(FaultHandle& handle, const std::vector<std::string>& objects) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& o : objects) a.push_back(o);
  handle.state["objects"] = a;
}

std::vector<std::string> ClaimedObjects(const FaultHandle& handle) {
  std::vector<std::string> v;
  if (!handle.state.is_object() || !handle.state.contains("objects")) return v;
  for (const auto& o : handle.state["objects"])
    if (o.is_string()) v.push_back(o.get<std::string>());
  return v;
}

std::string HolderOf(const std::string& object, const FaultJournal& journal) {
  auto entries = journal.List();
  if (!entries.ok()) return "";
  for (const auto& e : *entries)
    for (const auto& o : ClaimedObjects(e.handle))
      if (o == object)
        return "fault " + e.handle.id + " (" + e.handle.spec.kind + " on " + e.handle.spec.target +
               ")";
  return "";
}

Status CheckNoOverlap(const FaultHandle& handle, const FaultJournal& journal) {
  std::vector<std::string> mine = ClaimedObjects(handle);
  if (mine.empty()) return OkStatus();
  FL_ASSIGN_OR_RETURN(std::vector<JournalEntry> entries, journal.List());
  for (const auto& e : entries) {
    if (e.handle.id == handle.id) continue;
    for (const auto& o : ClaimedObjects(e.handle)) {
      if (std::find(mine.begin(), mine.end(), o) == mine.end()) continue;
      return FailedPreconditionError(
          handle.spec.kind + " on " + handle.spec.target + ": " + o + " is held by fault " +
          e.handle.id + " (" + e.handle.spec.kind + " on " + e.handle.spec.target +
          "); faults of this kind do not stack on one object: revert that one first");
    }
  }
  return OkStatus();
}

StatusOr<FaultHandle> DryRunFault(Injector& injector, const FaultSpec& spec, const Fabric& fabric) {
  FL_RETURN_IF_ERROR(injector.Validate(spec));
  return injector.Prepare(spec, fabric);
}

StatusOr<FaultHandle> PrepareFault(Injector& injector, const FaultSpec& spec, const Fabric& fabric,
                                   FaultJournal* journal,
                                   const std::function<Status(const FaultHandle&)>& admit) {
  FL_ASSIGN_OR_RETURN(FaultHandle handle, DryRunFault(injector, spec, fabric));
  if (admit) FL_RETURN_IF_ERROR(admit(handle));
  if (handle.id.empty()) handle.id = spec.kind + "-" + RandomHex(6);
  if (journal) {
    JournalLock lock(journal->dir());
    if (!lock.locked() && !ClaimedObjects(handle).empty())
      return UnavailableError("cannot lock the fault journal " + journal->dir());
    FL_RETURN_IF_ERROR(CheckNoOverlap(handle, *journal));
    FL_RETURN_IF_ERROR(journal->Record(handle, "applying"));
  }
  return handle;
}

Status FireFault(Injector& injector, FaultHandle& handle, FaultJournal* journal) {
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
  FL_LOG(kInfo, "inject") << handle.spec.kind << " on " << handle.spec.target << " effective after "
                          << (handle.effective_wall_ns - handle.requested_wall_ns) / 1000 << " us";
  return OkStatus();
}

Status CancelPrepared(const FaultHandle& handle, FaultJournal* journal) {
  if (journal) return journal->Remove(handle.id);
  return OkStatus();
}

StatusOr<FaultHandle> InjectFault(Injector& injector, const FaultSpec& spec, const Fabric& fabric,
                                  FaultJournal* journal,
                                  const std::function<Status(const FaultHandle&)>& admit) {
  FL_ASSIGN_OR_RETURN(FaultHandle handle, PrepareFault(injector, spec, fabric, journal, admit));
  FL_RETURN_IF_ERROR(FireFault(injector, handle, journal));
  return handle;
}

Status RevertFault(Injector& injector, FaultHandle& handle, FaultJournal* journal) {
  FL_RETURN_IF_ERROR(PrepareRevert(handle, journal));
  return FireRevert(injector, handle, journal);
}

Status PrepareRevert(const FaultHandle& handle, FaultJournal* journal) {
  if (journal) FL_RETURN_IF_ERROR(journal->Record(handle, "reverting"));
  return OkStatus();
}

Status FireRevert(Injector& injector, FaultHandle& handle, FaultJournal* journal) {
  FL_RETURN_IF_ERROR(injector.Revert(handle));
  handle.reverted_wall_ns = WallNowNs();
  FL_RETURN_IF_ERROR(injector.Verify(handle, Expect::kGone));
  if (journal) FL_RETURN_IF_ERROR(journal->Remove(handle.id));
  return OkStatus();
}

}  // namespace fl::injectors
