#include "injectors/builtin_internal.h"
#include "injectors/injector.h"

namespace fl::injectors {

Status RegisterBuiltinInjectors(InjectorRegistry& registry) {
  using Make = std::unique_ptr<Injector> (*)();
  const std::pair<const char*, Make> kBuiltins[] = {
      {"nic_port_flap", internal::NewNicPortFlap},
      {"tor_port_down", internal::NewTorPortDown},
      {"tor_uplink_down", internal::NewTorUplinkDown},
      {"link_blackhole", internal::NewLinkBlackhole},
      {"packet_loss", internal::NewPacketLoss},
      {"bandwidth_throttle", internal::NewBandwidthThrottle},
      {"pfc_storm", internal::NewPfcStorm},
      {"container_kill", internal::NewContainerKill},
  };
  for (const auto& [name, make] : kBuiltins) {
    FL_RETURN_IF_ERROR(registry.Register(
        name, [make = make]() -> StatusOr<std::unique_ptr<Injector>> { return make(); }));
  }
  return OkStatus();
}

}  // namespace fl::injectors
