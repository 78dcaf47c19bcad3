#include "injectors/container_runtime.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
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

bool IsEngineRuntime(std::string_view runtime) {
  return runtime == "docker" || runtime == "podman";
}

StatusOr<EngineContainer> ResolveEngineContainer(std::string_view runtime, const std::string& id,
                                                 const std::string& cli) {
  if (!IsEngineRuntime(runtime))
    return InvalidArgumentError("container runtime '" + std::string(runtime) +
                                "' is not docker or podman");
  if (!IsSafeName(id, 128))
    return InvalidArgumentError(std::string(runtime) + " container id '" + id +
                                "' is not a safe name ([a-zA-Z0-9_.-], up to 128)");
  EngineContainer c;
  c.runtime = std::string(runtime);
  c.id = id;
  if (!cli.empty() && cli[0] != '/')
    return InvalidArgumentError(std::string(runtime) + " CLI '" + cli +
                                "' is not an absolute path");
  FL_ASSIGN_OR_RETURN(c.cli, ResolveTool(cli.empty() ? std::string(runtime) : cli));
  return c;
}

std::vector<std::string> EngineKillArgv(const EngineContainer& c) {
  return {c.cli, "kill", "--signal", "KILL", c.id};
}

std::vector<std::string> EngineInspectRunningArgv(const EngineContainer& c) {
  return {c.cli, "inspect", "--type", "container", "-f", "{{.State.Running}}", c.id};
}

StatusOr<bool> ParseInspectRunning(int exit_code, std::string_view out, std::string_view err) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ' || v.back() == '\r'))
      v.remove_suffix(1);
    while (!v.empty() && (v.front() == '\n' || v.front() == ' ')) v.remove_prefix(1);
    return v;
  };
  if (exit_code == 0) {
    std::string_view v = trim(out);
    if (v == "true") return true;
    if (v == "false") return false;
    return InternalError("container inspect printed '" + std::string(v) +
                         "', expected true or false");
  }
  std::string msg(trim(err));
  std::string lower = msg;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  // docker: "Error: No such container: X" / "Error: No such object: X"; podman: "Error: no
  // such container X" or "...: no such object".
  if (lower.find("no such container") != std::string::npos ||
      lower.find("no such object") != std::string::npos)
    return NotFoundError("no such container: " + msg);
  return UnavailableError("container inspect: exit " + std::to_string(exit_code) + ": " + msg);
}

StatusOr<bool> EngineRunning(const EngineContainer& c) {
  CommandOptions o;
  o.timeout = 10 * kNsPerSec;
  FL_ASSIGN_OR_RETURN(CommandResult r, RunCommand(EngineInspectRunningArgv(c), o));
  return ParseInspectRunning(r.exit_code, r.out, r.err);
}

Status EngineKill(const EngineContainer& c, Deadline deadline) {
  CommandOptions o;
  o.timeout = 10 * kNsPerSec;
  FL_ASSIGN_OR_RETURN(CommandResult r, RunCommand(EngineKillArgv(c), o));
  if (r.exit_code != 0) {
    // Already gone (or stopped) between Prepare and now is what the caller wanted anyway; the
    // wait below tells.
    auto running = EngineRunning(c);
    if (running.ok() && *running)
      return InternalError(c.runtime + " kill " + c.id + ": exit " + std::to_string(r.exit_code) +
                           ": " + r.err);
  }
  Status last;
  bool stopped = WaitUntil(
      [&] {
        auto running = EngineRunning(c);
        if (running.ok()) return !*running;
        if (running.status().code() == Code::kNotFound) return true;
        last = running.status();
        return false;
      },
      deadline, 20 * kNsPerMs);
  if (!stopped)
    return DeadlineExceededError(c.runtime + " container " + c.id + " still running after kill" +
                                 (last.ok() ? "" : " (" + last.message() + ")"));
  return OkStatus();
}

}  // namespace fl::injectors
