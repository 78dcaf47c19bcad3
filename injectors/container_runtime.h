// ContainerRuntime: starting and killing the containers ranks run in. LocalContainerRuntime
// is the embedded one: a process in new pid and mount namespaces (it is pid 1 there, with its
// own /proc), inside a host's network namespace, in a cgroup v2 leaf of its own; killing it
// writes cgroup.kill, which SIGKILLs every process of the leaf at once. Room is left for
// docker/podman/kubectl runtimes on real clusters (same interface, other drivers).
//
// Thread-safety: implementations are stateless apart from the kernel objects they create.
// Ownership: Start's caller owns the container: it reaps init_pid (waitpid) and calls Remove.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::injectors {

struct ContainerSpec {
  std::string name;           // safe name, unique under cgroup_parent
  std::string netns;          // host namespace to run in ("" = the caller's)
  std::string cgroup_parent;  // absolute cgroup v2 directory (created if missing)
  std::vector<std::string> argv;
};

struct ContainerInfo {
  std::string name;
  std::string cgroup_path;
  int init_pid = 0;  // in the caller's pid namespace
};

class ContainerRuntime {
 public:
  virtual ~ContainerRuntime() = default;
  virtual StatusOr<ContainerInfo> Start(const ContainerSpec& spec) = 0;
  // SIGKILLs every process of the container; returns once the kernel reports it empty or the
  // deadline passes (DeadlineExceeded).
  virtual Status Kill(const std::string& cgroup_path, Deadline deadline) = 0;
  // Removes the (empty) container's cgroup; a missing one is fine.
  virtual Status Remove(const std::string& cgroup_path) = 0;
};

class LocalContainerRuntime : public ContainerRuntime {
 public:
  StatusOr<ContainerInfo> Start(const ContainerSpec& spec) override;
  Status Kill(const std::string& cgroup_path, Deadline deadline) override;
  Status Remove(const std::string& cgroup_path) override;
};

// Containers of a docker or podman engine (ranks a launcher put there), driven through the
// engine's CLI with argv arrays; the CLI path is absolute (resolved once, never through PATH).
// Blocking: each call runs the CLI once with a deadline.
struct EngineContainer {
  std::string runtime;  // "docker" | "podman"
  std::string cli;      // absolute path of its CLI
  std::string id;       // container ID or name
};

// True for the engine runtimes ("docker", "podman").
bool IsEngineRuntime(std::string_view runtime);
// Checks runtime and id (a safe name: [a-zA-Z0-9_.-], up to 128) and resolves the CLI: cli when
// given (must be absolute), else fl::ResolveTool(runtime). InvalidArgument / NotFound.
StatusOr<EngineContainer> ResolveEngineContainer(std::string_view runtime, const std::string& id,
                                                 const std::string& cli);
// Pure: argv of `<cli> kill --signal KILL <id>` and `<cli> inspect --type container -f
// {{.State.Running}} <id>`.
std::vector<std::string> EngineKillArgv(const EngineContainer& c);
std::vector<std::string> EngineInspectRunningArgv(const EngineContainer& c);
// Pure: the result of the inspect command. true/false from its output; NotFound when the engine
// says there is no such container (a container started with --rm disappears once killed);
// Unavailable for other failures (no daemon, permission), with the CLI's message.
StatusOr<bool> ParseInspectRunning(int exit_code, std::string_view out, std::string_view err);
// Whether the container is running (NotFound when it does not exist).
StatusOr<bool> EngineRunning(const EngineContainer& c);
// SIGKILL through the engine, then waits until it reports the container stopped (or gone) or the
// deadline passes (DeadlineExceeded).
Status EngineKill(const EngineContainer& c, Deadline deadline);

// "populated" from cgroup.events: true while any process is in the cgroup or below.
StatusOr<bool> CgroupPopulated(const std::string& cgroup_path);
// Pids listed in cgroup.procs.
std::vector<int> CgroupProcs(const std::string& cgroup_path);

}  // namespace fl::injectors
