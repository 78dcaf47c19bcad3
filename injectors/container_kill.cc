// container_kill: SIGKILL every process of a container at once (cgroup.kill).
#include "injectors/builtin_internal.h"
#include "injectors/container_runtime.h"

namespace fl::injectors::internal {
namespace {

class ContainerKill : public Injector {
 public:
  std::string_view kind() const override { return "container_kill"; }
  std::string_view help() const override {
    return "SIGKILLs every process of a container at once (cgroup v2 cgroup.kill). Target: "
           "container (h0.rank1) or rank (rank3). No parameters. A kill cannot be undone: "
           "revert is a no-op; restarting is the job's business.";
  }
  Status Validate(const FaultSpec& spec) const override { return CheckParams(spec, {}); }
  StatusOr<FaultHandle> Prepare(const FaultSpec& spec, const Fabric& fabric) override {
    FL_ASSIGN_OR_RETURN(ContainerRef c, fabric.Container(spec.target));
    FL_ASSIGN_OR_RETURN(bool populated, CgroupPopulated(c.cgroup_path));
    if (!populated) return FailedPreconditionError("container " + c.name + " has no processes");
    FaultHandle h;
    h.spec = spec;
    h.state["container"] = c.name;
    h.state["cgroup"] = c.cgroup_path;
    return h;
  }
  Status Apply(FaultHandle& h) override {
    h.requested_wall_ns = WallNowNs();
    FL_RETURN_IF_ERROR(runtime_.Kill(h.state.value("cgroup", ""), Deadline::After(2 * kNsPerSec)));
    h.effective_wall_ns = WallNowNs();  // the kernel reported the cgroup empty
    return OkStatus();
  }
  Status Revert(const FaultHandle&) override { return OkStatus(); }
  Status Verify(const FaultHandle& h, Expect want) override {
    if (want == Expect::kGone) return OkStatus();
    auto populated = CgroupPopulated(h.state.value("cgroup", ""));
    if (populated.ok() && *populated)
      return InternalError("container " + h.state.value("container", "") + " still has processes");
    return OkStatus();
  }

 private:
  LocalContainerRuntime runtime_;
};

}  // namespace

std::unique_ptr<Injector> NewContainerKill() { return std::make_unique<ContainerKill>(); }

}  // namespace fl::injectors::internal
