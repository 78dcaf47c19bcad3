#include "injectors/container_runtime.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "common/file_util.h"
#include "common/process.h"
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
  // The process layer starts it inside the leaf (clone3 CLONE_INTO_CGROUP), as pid 1 of new
  // pid and mount namespaces with its own /proc, in the host's network namespace.
  ProcessSpec ps;
  ps.argv = spec.argv;
  ps.netns = spec.netns;
  ps.cgroup = info.cgroup_path;
  ps.container = true;
  auto proc = Spawn(ps);
  if (!proc.ok()) {
    rmdir(info.cgroup_path.c_str());  // nothing was started in it
    Status s = proc.status();
    s.AddTrail(__FILE__, __LINE__);
    return s;
  }
  info.init_pid = proc->pid();
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
