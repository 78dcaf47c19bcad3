// link_blackhole and packet_loss: nftables netdev tables on the link end where the fabric
// applies gray faults (Fabric::GrayFaultSide): the switch-side port in the local lab, the
// host's own NIC on real hosts. Carrier stays up: a gray failure the host cannot see in its
// link state.
#include <cmath>

#include "common/json_util.h"

#include "injectors/builtin_internal.h"
#include "injectors/netlink.h"
#include "injectors/sys.h"
#include "injectors/tc_nft.h"

namespace fl::injectors::internal {

DirectionHooks HooksFor(PortSide side) {
  if (side == PortSide::kHost) return {"ingress", "egress"};
  return {"egress", "ingress"};
}

namespace {

class NftDropInjector : public Injector {
 public:
  explicit NftDropInjector(bool random) : random_(random) {}

  std::string_view kind() const override { return random_ ? "packet_loss" : "link_blackhole"; }
  std::string_view help() const override {
    return random_ ? "random drop (nft numgen random) on a link: on the switch side in the "
                     "local lab, on the host's own NIC on real hosts. Target: ToR port, NIC, "
                     "host, rail or uplink. Params: percent (0-100, required), direction "
                     "(both|to_host|from_host, default both)."
                   : "drops every frame on a link while carrier stays up (gray failure): on "
                     "the switch side in the local lab, on the host's own NIC on real hosts. "
                     "Target: ToR port, NIC, host, rail or uplink. Params: direction "
                     "(both|to_host|from_host, default both).";
  }

  Status Validate(const FaultSpec& spec) const override {
    if (random_) {
      FL_RETURN_IF_ERROR(CheckParams(spec, {"percent", "direction"}));
      if (!spec.params.count("percent"))
        return InvalidArgumentError("packet_loss: parameter 'percent' is required");
      FL_ASSIGN_OR_RETURN(double pct, NumberParam(spec, "percent", 0));
      if (!(pct > 0 && pct <= 100))
        return InvalidArgumentError("packet_loss: percent must be in (0, 100]");
    } else {
      FL_RETURN_IF_ERROR(CheckParams(spec, {"direction"}));
    }
    auto it = spec.params.find("direction");
    if (it != spec.params.end() && it->second != "both" && it->second != "to_host" &&
        it->second != "from_host")
      return InvalidArgumentError(std::string(kind()) +
                                  ": direction must be both, to_host or from_host");
    return OkStatus();
  }

  StatusOr<FaultHandle> Prepare(const FaultSpec& spec, const Fabric& fabric) override {
    PortSide side = fabric.GrayFaultSide();
    FL_ASSIGN_OR_RETURN(auto ports, ResolveLinks(fabric, spec.target, side));
    for (const auto& p : ports) {
      if (UsesDriver(p)) {
        FL_ASSIGN_OR_RETURN(auto driver, CheckDriverPort(p, kind(),
                                                         {SwitchOp::kDropAdd, SwitchOp::kDropRemove,
                                                          SwitchOp::kPortState}));
        // The switch is reached (and the port known to it, with its link up) before the fault
        // is journaled: a switch that cannot be logged in to fails here, with nothing to undo.
        FL_ASSIGN_OR_RETURN(SwitchPortState st, driver->ReadPort(p.sw_port, SwitchDeadline(p)));
        if (!st.oper_up)
          return FailedPreconditionError(std::string(kind()) + ": " + p.name + " (" +
                                         SwitchPortLabel(p) +
                                         ") has no link: a blackhole there would be no gray "
                                         "failure");
        continue;
      }
      if (ViaDriver(p) && !HasKernelEnd(p))
        return FailedPreconditionError(
            std::string(kind()) + ": " + p.name + " (" + SwitchPortLabel(p) +
            "): switch drivers have no random-drop operation; packet_loss on a real switch "
            "port is not possible (use link_blackhole, or packet_loss on the host's NIC)");
      if (!IsSafeName(p.ifname, 15)) return InternalError("unsafe interface name " + p.ifname);
      FL_RETURN_IF_ERROR(GetLink(p.netns, p.ifname).status());
    }
    FaultHandle h;
    h.spec = spec;
    SetPorts(h, ports);
    // Recorded so that Apply (and a recovering process) need no Fabric.
    h.state["side"] = side == PortSide::kHost ? "host" : "switch";
    return h;
  }

  Status Apply(FaultHandle& h) override {
    auto ports = PortsOf(h);
    std::string dir = h.spec.params.count("direction") ? h.spec.params.at("direction") : "both";
    std::string verdict = "drop";
    if (random_) {
      FL_ASSIGN_OR_RETURN(double pct, NumberParam(h.spec, "percent", 0));
      // Threshold out of 1,000,000 so fractions of a percent work.
      auto threshold = static_cast<uint64_t>(std::llround(pct * 10000.0));
      verdict = "numgen random mod 1000000 < " + std::to_string(threshold) + " drop";
    }
    std::string side =
        JsonGetOr<std::string>(h.state, "side", "switch", "state").value_or("switch");
    if (side != "switch" && side != "host")
      return InvalidArgumentError(std::string(kind()) + ": state side '" + side +
                                  "' is neither switch nor host");
    DirectionHooks hooks = HooksFor(side == "host" ? PortSide::kHost : PortSide::kSwitch);
    h.requested_wall_ns = WallNowNs();
    for (size_t i = 0; i < ports.size(); ++i) {
      const Port& p = ports[i];
      if (UsesDriver(p)) {
        // A drop rule per stage on the switch port, each verified by the driver's read-back.
        FL_ASSIGN_OR_RETURN(auto driver, DriverOf(p));
        for (SwitchStage st : StagesOf(dir))
          FL_RETURN_IF_ERROR(driver->AddDrop(p.sw_port, st, RuleName(h, i, st), SwitchDeadline(p)));
        continue;
      }
      std::string t = NftTableName(h, i);
      std::string rs = "table netdev " + t + " {\n";
      if (dir != "to_host")
        rs += std::string("  chain from_host { type filter hook ") + hooks.from_host +
              " device \"" + p.ifname + "\" priority -500; " + verdict + "; }\n";
      if (dir != "from_host")
        rs += std::string("  chain to_host { type filter hook ") + hooks.to_host + " device \"" +
              p.ifname + "\" priority -500; " + verdict + "; }\n";
      rs += "}\n";
      FL_RETURN_IF_ERROR(NftApply(p.netns, rs));
    }
    h.effective_wall_ns = WallNowNs();  // nft returns after the kernel committed the batch
    return OkStatus();
  }

  Status Revert(const FaultHandle& h) override {
    auto ports = PortsOf(h);
    std::string dir = h.spec.params.count("direction") ? h.spec.params.at("direction") : "both";
    Status result;  // every port is tried; the first failure is returned
    for (size_t i = 0; i < ports.size(); ++i) {
      const Port& p = ports[i];
      if (LabGone(p)) continue;
      Status s;
      if (UsesDriver(p)) {
        auto driver = DriverOf(p);
        s = driver.status();
        for (SwitchStage st : StagesOf(dir)) {
          if (!s.ok()) break;
          s = (*driver)->RemoveDrop(p.sw_port, st, RuleName(h, i, st), SwitchDeadline(p));
        }
      } else {
        s = NftDeleteTable(p.netns, "netdev", NftTableName(h, i));
      }
      if (!s.ok() && result.ok()) result = s;
    }
    return result;
  }

  Status Verify(const FaultHandle& h, Expect want) override {
    auto ports = PortsOf(h);
    for (size_t i = 0; i < ports.size(); ++i) {
      const Port& p = ports[i];
      FL_ASSIGN_OR_RETURN(bool gone, SkipGoneNetns(p.netns, want));
      if (gone) continue;
      if (UsesDriver(p)) {
        // The rules' presence and absence were read back by AddDrop/RemoveDrop; what is left
        // to check is the promise of a gray failure: the port's link stays up.
        if (want == Expect::kPresent) {
          FL_ASSIGN_OR_RETURN(auto driver, DriverOf(p));
          FL_ASSIGN_OR_RETURN(SwitchPortState st, driver->ReadPort(p.sw_port, SwitchDeadline(p)));
          if (!st.oper_up)
            return InternalError(p.name + " (" + SwitchPortLabel(p) +
                                 ") lost its link: not a gray failure");
        }
        continue;
      }
      FL_ASSIGN_OR_RETURN(bool exists, NftTableExists(p.netns, "netdev", NftTableName(h, i)));
      if (want == Expect::kPresent && !exists)
        return InternalError("nft table for " + p.name + " is missing");
      if (want == Expect::kGone && exists)
        return InternalError("nft table for " + p.name + " is still there after revert");
      if (want == Expect::kPresent) {
        FL_ASSIGN_OR_RETURN(LinkState st, GetLink(p.netns, p.ifname));
        if (!st.carrier) return InternalError(p.name + " lost carrier: not a gray failure");
      }
    }
    return OkStatus();
  }

 private:
  // link_blackhole on a switch port goes through the driver; packet_loss has no driver
  // operation and keeps the kernel end where there is one (a local lab over SSH).
  bool UsesDriver(const Port& p) const { return ViaDriver(p) && !random_; }

  // to_host is what the switch port sends (egress), from_host what it receives (ingress).
  static std::vector<SwitchStage> StagesOf(const std::string& dir) {
    if (dir == "to_host") return {SwitchStage::kEgress};
    if (dir == "from_host") return {SwitchStage::kIngress};
    return {SwitchStage::kIngress, SwitchStage::kEgress};
  }
  static std::string RuleName(const FaultHandle& h, size_t i, SwitchStage st) {
    return SwitchRuleName(h.id, 2 * i + (st == SwitchStage::kEgress ? 1 : 0));
  }

  bool random_;
};

}  // namespace

std::unique_ptr<Injector> NewLinkBlackhole() { return std::make_unique<NftDropInjector>(false); }
std::unique_ptr<Injector> NewPacketLoss() { return std::make_unique<NftDropInjector>(true); }

}  // namespace fl::injectors::internal
