#include "injectors/container_runtime.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "common/file_util.h"
#include "injectors/sys.h"

namespace fl::injectors {

StatusOr<bool> CgroupPopulated(const std::string& cgroup_path) {
  auto text = ReadFile(cgroup_path + "/cgroup.events");
  if (!text.ok()) return text.status();
  std::istringstream in(*text);
  std::string key;
  int value = 0;
  while (in >> key >> value)
    if (key == "populated") return value != 0;
  return InternalError(cgroup_path + "/cgroup.events has no 'populated' line");
}

std::vector<int> CgroupProcs(const std::string& cgroup_path) {
  std::vector<int> pids;
  std::ifstream f(cgroup_path + "/cgroup.procs");
  int pid;
  while (f >> pid) pids.push_back(pid);
  return pids;
}

StatusOr<ContainerInfo> LocalContainerRuntime::Start(const ContainerSpec& spec) {
  if (!IsSafeName(spec.name)) return InvalidArgumentError("bad container name '" + spec.name + "'");
  if (spec.argv.empty()) return InvalidArgumentError("container " + spec.name + ": empty command");
  ContainerInfo info;
  info.name = spec.name;
  info.cgroup_path = spec.cgroup_parent + "/" + spec.name;
  FL_RETURN_IF_ERROR(MakeDirs(info.cgroup_path));
  int cg_fd = open(info.cgroup_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cg_fd < 0) return ErrnoStatus(errno, "open " + info.cgroup_path);
  int ns_fd = -1;
  if (!spec.netns.empty()) {
    std::string p = std::string(kNetnsDir) + "/" + spec.netns;
    ns_fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns_fd < 0) {
      int e = errno;
      close(cg_fd);
      return ErrnoStatus(e, "open " + p);
    }
  }
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  clone_args args{};
  args.flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>(cg_fd);
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) {
    // Child: pid 1 of a new pid namespace, already in its cgroup. Async-signal-safe only.
    if (ns_fd >= 0 && setns(ns_fd, CLONE_NEWNET) != 0) _exit(125);
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(125);
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) _exit(125);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int e = errno;
  close(cg_fd);
  if (ns_fd >= 0) close(ns_fd);
  if (pid < 0) return ErrnoStatus(e, "clone3 container " + spec.name);
  info.init_pid = static_cast<int>(pid);
  return info;
}

Status LocalContainerRuntime::Kill(const std::string& cgroup_path, Deadline deadline) {
  std::string kill_file = cgroup_path + "/cgroup.kill";
  int fd = open(kill_file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open " + kill_file);
  ssize_t w = write(fd, "1", 1);
  int e = errno;
  close(fd);
  if (w != 1) return ErrnoStatus(e, "write " + kill_file);
  bool empty = WaitUntil(
      [&] {
        auto p = CgroupPopulated(cgroup_path);
        return p.ok() && !*p;
      },
      deadline, 100 * kNsPerUs);
  if (!empty) return DeadlineExceededError(cgroup_path + " still has processes after cgroup.kill");
  return OkStatus();
}

Status LocalContainerRuntime::Remove(const std::string& cgroup_path) {
  if (rmdir(cgroup_path.c_str()) != 0 && errno != ENOENT)
    return ErrnoStatus(errno, "rmdir " + cgroup_path);
  return OkStatus();
}

}  // namespace fl::injectors
