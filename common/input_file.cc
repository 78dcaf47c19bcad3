#include "common/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/enum_names.h"
#include "common/unique_fd.h"
#include "common/units.h"

namespace fl {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;

std::string_view FileType(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// "PATH: 5.0 MiB is more than a scenario may be (4.0 MiB)".
Status TooLarge(const std::string& path, InputKind kind, const std::string& size) {
  return InvalidArgumentError(path + ": " + size + " is more than a " +
                              std::string(InputKindName(kind)) + " may be (" +
                              FormatBytes(InputCap(kind)) + ")");
}

}  // namespace

size_t InputCap(InputKind kind) {
  switch (kind) {
    case InputKind::kScenario:
      return 4 * kMiB;
    case InputKind::kTopology:
      return 4 * kMiB;
    case InputKind::kLabFile:
      return 16 * kMiB;
    case InputKind::kInventory:
      return 16 * kMiB;
    case InputKind::kSuite:
      return 4 * kMiB;
    case InputKind::kPolicy:
      return 1 * kMiB;
    case InputKind::kSwitchPreset:
      return 1 * kMiB;
    case InputKind::kJournal:
      return 1 * kMiB;
    case InputKind::kLabState:
      return 16 * kMiB;
    case InputKind::kCertificate:
      return 256 * kKiB;
    case InputKind::kToken:
      return 64 * kKiB;
    case InputKind::kJobOutput:
      return 64 * kMiB;
    case InputKind::kSpool:
      return 1024 * kMiB;
    case InputKind::kFailureRates:
      return 1 * kMiB;
    case InputKind::kAlerts:
      return 64 * kMiB;
    case InputKind::kAlertRules:
      return 4 * kMiB;
    case InputKind::kSweep:
      return 1 * kMiB;
  }
  return 1 * kMiB;
}

constexpr NamedValue<InputKind> kInputKindNames[] = {
    {InputKind::kScenario, "scenario"},
    {InputKind::kTopology, "topology"},
    {InputKind::kLabFile, "lab file"},
    {InputKind::kInventory, "inventory"},
    {InputKind::kSuite, "suite"},
    {InputKind::kPolicy, "policy"},
    {InputKind::kSwitchPreset, "switch preset"},
    {InputKind::kJournal, "journal entry"},
    {InputKind::kLabState, "lab state file"},
    {InputKind::kCertificate, "certificate or key"},
    {InputKind::kToken, "token file"},
    {InputKind::kJobOutput, "job output"},
    {InputKind::kSpool, "spool"},
    {InputKind::kFailureRates, "failure rates file"},
    {InputKind::kAlerts, "alerts file"},
    {InputKind::kAlertRules, "alert rules file"},
    {InputKind::kSweep, "sweep file"}};

std::string_view InputKindName(InputKind kind) { return NameIn(kInputKindNames, kind, "file"); }

StatusOr<std::string> ReadInputFile(const std::string& path, InputKind kind) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) return ErrnoStatus(errno, "cannot open " + path);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, "cannot stat " + path);
  if (!S_ISREG(st.st_mode))
    return InvalidArgumentError(path + ": " + std::string(FileType(st.st_mode)) + ", not a " +
                                "regular file: a " + std::string(InputKindName(kind)) +
                                " is read from a regular file");
  const size_t cap = InputCap(kind);
  if (static_cast<size_t>(st.st_size) > cap)
    return TooLarge(path, kind, FormatBytes(static_cast<uint64_t>(st.st_size)));
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  while (true) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot read " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    // Endless input that passes for a regular file (it grew while read).
    if (out.size() > cap) return TooLarge(path, kind, "what it gave while read");
  }
  return out;
}

}  // namespace fl
