// Factories of the built-in injectors (registered by RegisterBuiltinInjectors) and helpers
// they share. Internal to fl_injectors.
#pragma once

#include <memory>
#include <vector>

#include "injectors/injector.h"

namespace fl::injectors::internal {

std::unique_ptr<Injector> NewNicPortFlap();
std::unique_ptr<Injector> NewTorPortDown();
std::unique_ptr<Injector> NewTorUplinkDown();
std::unique_ptr<Injector> NewLinkBlackhole();
std::unique_ptr<Injector> NewPacketLoss();
std::unique_ptr<Injector> NewBandwidthThrottle();
std::unique_ptr<Injector> NewPfcStorm();
std::unique_ptr<Injector> NewContainerKill();

// Ports stored under state["ports"].
std::vector<Port> PortsOf(const FaultHandle& handle);
void SetPorts(FaultHandle& handle, const std::vector<Port>& ports);

// Resolves a link target: host links first (switch or host side), then uplinks.
StatusOr<std::vector<Port>> ResolveLinks(const Fabric& fabric, std::string_view target,
                                         PortSide side);

// nft table name for a fault on its i-th port: "fl_<id>_<i>" with '-' as '_'.
std::string NftTableName(const FaultHandle& handle, size_t i);

}  // namespace fl::injectors::internal
