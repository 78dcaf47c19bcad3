#include <algorithm>

#include "injectors/builtin_internal.h"
#include "injectors/injector.h"

namespace fl::injectors {

namespace {

// pfc_storm on a host with no switch access can only send pause frames from its NIC.
Status PfcFromHostOnly(const std::map<std::string, std::string>& params) {
  auto it = params.find("mode");
  if (it == params.end() || it->second != "frames")
    return InvalidArgumentError(
        "pfc_storm mode=stall stalls a switch port, and real hosts give no switch access: use "
        "mode: frames (IEEE 802.1Qbb frames sent from the host's NIC toward its switch)");
  return OkStatus();
}

}  // namespace

bool InjectorInfo::AcceptsClass(std::string_view cls) const {
  return std::find(target_classes.begin(), target_classes.end(), cls) != target_classes.end();
}

Status RegisterBuiltinInjectors(InjectorRegistry& registry) {
  using Make = std::unique_ptr<Injector> (*)();
  struct Row {
    const char* name;
    Make make;
    InjectorInfo info;
  };
  const FaultSide host = FaultSide::kHost, sw = FaultSide::kSwitch, either = FaultSide::kEither;
  // One row per injector: its name, its factory, and what it says of itself (target classes
  // with the default first; side; takes the path down; instantaneous; host-only check).
  const Row kBuiltins[] = {
      {"nic_port_flap", internal::NewNicPortFlap, {{"nic", "host", "rail"}, host, true, false, {}}},
      {"tor_port_down",
       internal::NewTorPortDown,
       {{"tor_port", "nic", "host", "rail"}, sw, true, false, {}}},
      {"tor_uplink_down", internal::NewTorUplinkDown, {{"uplink"}, sw, true, false, {}}},
      {"link_blackhole",
       internal::NewLinkBlackhole,
       {{"nic", "tor_port", "host", "rail", "uplink"}, either, true, false, {}}},
      {"packet_loss",
       internal::NewPacketLoss,
       {{"nic", "tor_port", "host", "rail", "uplink"}, either, false, false, {}}},
      {"bandwidth_throttle",
       internal::NewBandwidthThrottle,
       {{"nic", "tor_port", "host", "rail", "uplink"}, either, false, false, {}}},
      {"pfc_storm",
       internal::NewPfcStorm,
       {{"nic", "host", "rail"}, host, true, false, PfcFromHostOnly}},
      {"container_kill",
       internal::NewContainerKill,
       {{"container", "rank"}, host, false, true, {}}},
  };
  for (const auto& row : kBuiltins) {
    FL_RETURN_IF_ERROR(registry.Register(
        row.name, [make = row.make]() -> StatusOr<std::unique_ptr<Injector>> { return make(); },
        row.info));
  }
  return OkStatus();
}

const InjectorRegistry& BuiltinInjectors() {
  static const InjectorRegistry* const kRegistry = [] {
    auto* r = new InjectorRegistry("injector");
    // Names are unique by construction (the table above), so this cannot fail.
    RegisterBuiltinInjectors(*r).IgnoreError();
    return r;
  }();
  return *kRegistry;
}

}  // namespace fl::injectors
