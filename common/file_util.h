// Small file helpers with Status errors. WriteFileAtomic is what durable state (the fault
// journal, agent leases) is written with: a reader sees the old or the new content, never a
// torn one, and the content is on disk when it returns.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace fl {

StatusOr<std::string> ReadFile(const std::string& path);
// Writes all of data to fd, again after EINTR and short writes; ErrnoStatus(errno, what) when
// a write fails.
Status WriteAll(int fd, std::string_view data, std::string_view what);
// Writes path.tmp, fsyncs it, renames it over path and fsyncs the directory.
Status WriteFileAtomic(const std::string& path, std::string_view content);
// Writes tmp (0644) and renames it over path, without fsync: a reader sees the old or the new
// content, which need not survive a crash (a rendezvous key). tmp is gone when it fails.
Status ReplaceFile(const std::string& path, const std::string& tmp, std::string_view content);
// mkdir -p; existing directories are fine.
Status MakeDirs(const std::string& path, unsigned mode = 0755);

// This process's mounts, from /proc/self/mountinfo, in its order (empty when unreadable).
struct Mount {
  std::string mountpoint;
  std::string fstype;
};
std::vector<Mount> ListMounts();

// The directory of this process's executable (from /proc/self/exe), "." when unknown: where
// faultline finds its sibling binaries (faultline-agent, faultline-worker).
std::string SelfExeDir();

// A path named in a file: absolute as it is; relative, beside that file when it exists there,
// else as given when it exists relative to the working directory, else in the nearest folder
// above the file's where it exists (an installed configs/ tree), else as given.
std::string PathBeside(const std::string& rel, const std::string& file);

// 1-based line and column of a byte offset (0-based) in text.
std::pair<int, int> LineColOf(std::string_view text, size_t byte_offset);

}  // namespace fl
