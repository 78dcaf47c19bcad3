#include "injectors/journal.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "common/file_util.h"
#include "common/json_util.h"
#include "common/log.h"
#include "injectors/injection.h"
#include "injectors/sys.h"

namespace fl::injectors {

std::string StateDir() {
  const char* env = std::getenv("FAULTLINE_STATE_DIR");
  return (env && *env) ? env : "/run/faultline";
}

FaultJournal::FaultJournal(std::string dir) : dir_(dir.empty() ? StateDir() + "/journal" : dir) {}

Status FaultJournal::Record(const FaultHandle& handle, std::string_view phase) {
  if (!IsSafeName(handle.id)) return InvalidArgumentError("bad fault id '" + handle.id + "'");
  FL_RETURN_IF_ERROR(MakeDirs(dir_, 0700));
  nlohmann::json j = {{"owner_pid", static_cast<int>(getpid())},
                      {"owner_start", ProcessStartTime(getpid())},
                      {"phase", std::string(phase)},
                      {"handle", HandleToJson(handle)}};
  return WriteFileAtomic(dir_ + "/" + handle.id + ".json", j.dump(2) + "\n");
}

Status FaultJournal::Remove(const std::string& fault_id) {
  std::string path = dir_ + "/" + fault_id + ".json";
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus(errno, "unlink " + path);
  return OkStatus();
}

StatusOr<std::vector<JournalEntry>> FaultJournal::List(std::vector<std::string>* errors) const {
  std::vector<JournalEntry> entries;
  DIR* d = opendir(dir_.c_str());
  if (!d) {
    if (errno == ENOENT) return entries;
    return ErrnoStatus(errno, "opendir " + dir_);
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 5 && n.ends_with(".json")) names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    std::string path = dir_ + "/" + n;
    auto parsed = LoadJsonFile(path);
    StatusOr<FaultHandle> handle = parsed.ok() && parsed->contains("handle")
                                       ? HandleFromJson((*parsed)["handle"])
                                       : StatusOr<FaultHandle>(DataLossError("unreadable"));
    if (!handle.ok()) {
      if (errors) errors->push_back(path + ": " + handle.status().ToUserString());
      continue;
    }
    JournalEntry e;
    e.handle = std::move(*handle);
    e.owner_pid = parsed->value("owner_pid", 0);
    e.owner_start = parsed->value("owner_start", 0ull);
    e.phase = parsed->value("phase", std::string());
    e.path = path;
    entries.push_back(std::move(e));
  }
  return entries;
}

RecoveryReport FaultJournal::RecoverDead(const InjectorRegistry& registry, bool include_live) {
  RecoveryReport report;
  std::vector<std::string> errors;
  auto entries = List(&errors);
  for (auto& e : errors) report.failed.push_back(e);
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
    Status s = RevertFault(**injector, e.handle, this);
    if (s.ok()) {
      report.reverted.push_back(e.handle.id);
    } else {
      report.failed.push_back(e.handle.id + ": " + s.ToUserString());
    }
  }
  return report;
}

}  // namespace fl::injectors
