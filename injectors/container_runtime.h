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

// "populated" from cgroup.events: true while any process is in the cgroup or below.
StatusOr<bool> CgroupPopulated(const std::string& cgroup_path);
// Pids listed in cgroup.procs.
std::vector<int> CgroupProcs(const std::string& cgroup_path);

}  // namespace fl::injectors
