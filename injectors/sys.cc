#include "injectors/sys.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <dirent.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "common/file_util.h"
#include "common/unique_fd.h"

namespace fl::injectors {
namespace {

using Fd = UniqueFd;

std::string JoinArgv(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                   const CommandOptions& options) {
  return fl::Run(argv, options);
}

StatusOr<std::string> RunChecked(const std::vector<std::string>& argv,
                                 const CommandOptions& options) {
  FL_ASSIGN_OR_RETURN(CommandResult r, RunCommand(argv, options));
  if (r.exit_code != 0) {
    std::string err = r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return InternalError(JoinArgv(argv) +
                         (options.netns.empty() ? "" : " (netns " + options.netns + ")") +
                         ": exit " + std::to_string(r.exit_code) + ": " + err);
  }
  return std::move(r.out);
}

Status RunInNetns(const std::string& netns, const std::function<Status()>& fn) {
  if (!IsSafeName(netns)) return InvalidArgumentError("bad netns name '" + netns + "'");
  std::string path = std::string(kNetnsDir) + "/" + netns;
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus(errno, "open " + path);
  Status result;
  std::thread t([&] {
    if (setns(fd.get(), CLONE_NEWNET) != 0) {
      result = ErrnoStatus(errno, "setns " + path);
      return;
    }
    result = fn();
  });
  t.join();
  return result;
}

bool NetnsExists(const std::string& name) {
  std::string path = std::string(kNetnsDir) + "/" + name;
  return access(path.c_str(), F_OK) == 0;
}

std::vector<std::string> ListNetns() {
  std::vector<std::string> names;
  DIR* d = opendir(kNetnsDir);
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    names.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

StatusOr<std::string> Cgroup2Root() {
  for (const auto& m : ListMounts())
    if (m.fstype == "cgroup2") return m.mountpoint;
  return FailedPreconditionError("no cgroup2 mount in /proc/self/mountinfo");
}

}  // namespace fl::injectors
