// container_kill: SIGKILL every process of a container at once: cgroup.kill for the containers
// faultline started, the engine's CLI (`docker|podman kill --signal KILL`) for ranks in docker or
// podman containers.
#include "common/json_util.h"
#include "injectors/builtin_internal.h"
#include "injectors/container_runtime.h"

namespace fl::injectors::internal {
namespace {

class ContainerKill : public Injector {
 public:
  std::string_view kind() const override { return "container_kill"; }
  std::string_view help() const override {
    return "SIGKILLs every process of a container at once: cgroup v2 cgroup.kill for containers "
           "faultline started, `docker|podman kill --signal KILL` (CLI by absolute path) for "
           "ranks in docker or podman containers. Target: container (h0.rank1) or rank (rank3). "
           "No parameters. A kill cannot be undone: revert is a no-op; restarting is the job's "
           "business.";
  }
  Status Validate(const FaultSpec& spec) const override { return CheckParams(spec, {}); }
  StatusOr<FaultHandle> Prepare(const FaultSpec& spec, const Fabric& fabric) override {
    FL_ASSIGN_OR_RETURN(ContainerRef c, fabric.Container(spec.target));
    FaultHandle h;
    h.spec = spec;
    h.state["container"] = c.name;
    if (IsEngineRuntime(c.runtime)) {
      FL_ASSIGN_OR_RETURN(EngineContainer e, ResolveEngineContainer(c.runtime, c.id, c.cli));
      auto running = EngineRunning(e);
      if (running.status().code() == Code::kNotFound || (running.ok() && !*running))
        return FailedPreconditionError("container " + c.name + " (" + e.runtime + " " + e.id +
                                       ") is not running");
      FL_RETURN_IF_ERROR(running.status());
      h.state["runtime"] = e.runtime;
      h.state["id"] = e.id;
      h.state["cli"] = e.cli;
      return h;
    }
    if (!c.runtime.empty() && c.runtime != "cgroup")
      return InvalidArgumentError("container " + c.name + ": unknown runtime '" + c.runtime +
                                  "' (cgroup, docker or podman)");
    FL_ASSIGN_OR_RETURN(bool populated, CgroupPopulated(c.cgroup_path));
    if (!populated) return FailedPreconditionError("container " + c.name + " has no processes");
    h.state["runtime"] = "cgroup";
    h.state["cgroup"] = c.cgroup_path;
    return h;
  }
  Status Apply(FaultHandle& h) override {
    h.requested_wall_ns = WallNowNs();
    if (IsEngine(h)) {
      FL_ASSIGN_OR_RETURN(EngineContainer e, EngineOf(h));
      FL_RETURN_IF_ERROR(EngineKill(e, Deadline::After(10 * kNsPerSec)));
      h.effective_wall_ns = WallNowNs();  // the engine reported it stopped
      return OkStatus();
    }
    FL_RETURN_IF_ERROR(runtime_.Kill(Str(h, "cgroup"), Deadline::After(2 * kNsPerSec)));
    h.effective_wall_ns = WallNowNs();  // the kernel reported the cgroup empty
    return OkStatus();
  }
  Status Revert(const FaultHandle&) override { return OkStatus(); }
  Status Verify(const FaultHandle& h, Expect want) override {
    if (want == Expect::kGone) return OkStatus();
    if (IsEngine(h)) {
      FL_ASSIGN_OR_RETURN(EngineContainer e, EngineOf(h));
      auto running = EngineRunning(e);
      if (running.status().code() == Code::kNotFound) return OkStatus();  // --rm: removed
      FL_RETURN_IF_ERROR(running.status());
      if (*running)
        return InternalError("container " + Str(h, "container") + " (" + e.runtime + " " + e.id +
                             ") is still running");
      return OkStatus();
    }
    auto populated = CgroupPopulated(Str(h, "cgroup"));
    if (populated.ok() && *populated)
      return InternalError("container " + Str(h, "container") + " still has processes");
    return OkStatus();
  }

 private:
  // Journal data: a member of the wrong type reads as empty.
  static std::string Str(const FaultHandle& h, std::string_view key) {
    return JsonGetOr<std::string>(h.state, key, "", "state").value_or(std::string());
  }
  static bool IsEngine(const FaultHandle& h) { return IsEngineRuntime(Str(h, "runtime")); }
  // The journalled CLI path is checked again (absolute, executable) before it is run.
  static StatusOr<EngineContainer> EngineOf(const FaultHandle& h) {
    return ResolveEngineContainer(Str(h, "runtime"), Str(h, "id"), Str(h, "cli"));
  }

  LocalContainerRuntime runtime_;
};

}  // namespace

std::unique_ptr<Injector> NewContainerKill() { return std::make_unique<ContainerKill>(); }

}  // namespace fl::injectors::internal
