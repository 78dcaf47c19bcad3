#include "harness/run/lab_claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "common/file_util.h"
#include "common/input_file.h"
#include "injectors/journal.h"
#include "injectors/sys.h"

namespace fl::harness::run {

namespace {

std::string ClaimsDir() { return injectors::StateDir() + "/claims"; }

}  // namespace

StatusOr<int> RemoveStaleClaims() {
  const std::string dir = ClaimsDir();
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return 0;
    return ErrnoStatus(ec.value(), "cannot read " + dir);
  }
  int removed = 0;
  for (const auto& entry : it) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".claim") continue;
    UniqueFd fd(open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (fd.get() < 0) continue;  // gone meanwhile, or not a claim we could hold
    if (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // held: a live run's
    // Locked by us: unless it was replaced meanwhile, nobody holds it and nobody will (a
    // taker that opened it before our unlink sees the inode change and tries again).
    struct stat held = {};
    struct stat now = {};
    if (fstat(fd.get(), &held) == 0 && stat(path.c_str(), &now) == 0 && now.st_ino == held.st_ino &&
        now.st_dev == held.st_dev && unlink(path.c_str()) == 0)
      ++removed;
  }
  return removed;
}

StatusOr<std::unique_ptr<LabClaim>> LabClaim::Take(const std::string& kind,
                                                   const std::string& name) {
  if (!IsSafeName(kind) || !IsSafeName(name))
    return InvalidArgumentError("lab '" + kind + "-" + name + "': not a name a claim can carry");
  const std::string dir = ClaimsDir();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return ErrnoStatus(ec.value(), "cannot make " + dir);
  (void)RemoveStaleClaims();  // best effort: the files of holders killed -9, ours included
  const std::string path = dir + "/" + kind + "-" + name + ".claim";
  // The file may be removed by a holder letting go between our open and our lock: then the
  // lock is on a file nobody else will see, and we try again on the new one.
  for (int attempt = 0; attempt < 10; ++attempt) {
    UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (fd.get() < 0) return ErrnoStatus(errno, "cannot open " + path);
    if (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) return ErrnoStatus(errno, "cannot lock " + path);
      // What the holder wrote, printable and short (the file is ours, but says who holds it).
      std::string holder = ReadInputFile(path, InputKind::kLabState).value_or("");
      if (holder.size() > 200) holder.resize(200);
      while (!holder.empty() && holder.back() == '\n') holder.pop_back();
      for (char& c : holder)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = ' ';
      return FailedPreconditionError(
          "lab " + name + " is in use by " + (holder.empty() ? "another run" : holder) +
          ": one run at a time on a lab; wait for it to end (" + path + ")");
    }
    struct stat held = {};
    struct stat now = {};
    if (fstat(fd.get(), &held) != 0) return ErrnoStatus(errno, "cannot stat " + path);
    if (stat(path.c_str(), &now) != 0 || now.st_ino != held.st_ino || now.st_dev != held.st_dev)
      continue;  // let go of and removed meanwhile
    std::unique_ptr<LabClaim> claim(new LabClaim(path, std::move(fd)));
    FL_RETURN_IF_ERROR(claim->Write("pid " + std::to_string(getpid()) + "\n"));
    return claim;
  }
  return UnavailableError("cannot claim " + path + ": it keeps changing");
}

Status LabClaim::Write(const std::string& text) {
  if (ftruncate(fd_.get(), 0) != 0) return ErrnoStatus(errno, "cannot write " + path_);
  if (pwrite(fd_.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    return ErrnoStatus(errno, "cannot write " + path_);
  return OkStatus();
}

Status LabClaim::SetRun(const std::string& run_id) {
  return Write("run " + run_id + " (pid " + std::to_string(getpid()) + ")\n");
}

LabClaim::~LabClaim() {
  // Removed while still held, so that nobody locks a file that is about to go.
  unlink(path_.c_str());
}

}  // namespace fl::harness::run
