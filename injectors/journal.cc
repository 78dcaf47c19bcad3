#include "injectors/journal.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/json_util.h"
#include "common/log.h"
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

StatusOr<JournalEntry> ParseJournalEntry(std::string_view text, std::string_view source) {
  auto parse = [&]() -> StatusOr<JournalEntry> {
    if (text.size() > kMaxJournalEntryBytes)
      return InvalidArgumentError(std::string(source) + ": larger than " +
                                  std::to_string(kMaxJournalEntryBytes) + " bytes");
    FL_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(text, source));
    JournalEntry e;
    FL_ASSIGN_OR_RETURN(e.owner_pid, JsonGetInRange<int>(j, "owner_pid", 1, 4194304, source));
    FL_ASSIGN_OR_RETURN(e.owner_start, JsonGet<unsigned long long>(j, "owner_start", source));
    FL_ASSIGN_OR_RETURN(e.phase, JsonGet<std::string>(j, "phase", source));
    if (e.phase != "applying" && e.phase != "applied" && e.phase != "reverting")
      return InvalidArgumentError(std::string(source) + ": unknown phase '" +
                                  e.phase.substr(0, 32) + "'");
    FL_ASSIGN_OR_RETURN(nlohmann::json handle, JsonGet<nlohmann::json>(j, "handle", source));
    auto h = HandleFromJson(handle);
    if (!h.ok()) return InvalidArgumentError(std::string(source) + ": " + h.status().message());
    e.handle = std::move(*h);
    if (!IsSafeName(e.handle.id))
      return InvalidArgumentError(std::string(source) + ": fault id is not a safe name");
    return e;
  };
  auto e = parse();
  if (!e.ok()) return DataLossError(e.status().message());
  return e;
}

StatusOr<std::vector<JournalEntry>> FaultJournal::List(std::vector<std::string>* errors,
                                                       std::vector<CorruptEntry>* corrupt) const {
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
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;  // removed meanwhile (a revert finished)
    StatusOr<JournalEntry> e = DataLossError(path + ": not a regular file");
    if (S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) > kMaxJournalEntryBytes) {
      e = DataLossError(path + ": larger than " + std::to_string(kMaxJournalEntryBytes) + " bytes");
    } else if (S_ISREG(st.st_mode)) {
      auto text = ReadInputFile(path, InputKind::kJournal);
      if (!text.ok()) {
        // Not the entry's fault (permissions, I/O): reported, not moved.
        if (errors) errors->push_back(path + ": " + text.status().ToUserString());
        continue;
      }
      e = ParseJournalEntry(*text, path);
      if (e.ok() && e->handle.id + ".json" != n)
        e = DataLossError(path + ": fault id '" + e->handle.id + "' does not match the file name");
    }
    if (!e.ok()) {
      if (corrupt)
        corrupt->push_back({path, e.status().ToUserString()});
      else if (errors)
        errors->push_back(e.status().ToUserString());
      continue;
    }
    e->path = path;
    entries.push_back(std::move(*e));
  }
  return entries;
}

}  // namespace fl::injectors
