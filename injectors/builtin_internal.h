// Factories of the built-in injectors (registered by RegisterBuiltinInjectors) and helpers
// they share. Internal to fl_injectors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "injectors/injector.h"
#include "injectors/switch/switch_driver.h"

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

// For Verify, a link end in a named namespace that no longer exists (a lab torn down): true
// (nothing left to check there) when the fault should be gone, Unavailable "namespace N is gone"
// when it should be present; false where the namespace is there or none is named.
StatusOr<bool> SkipGoneNetns(const std::string& netns, Expect want);

// The background workers of faults (a flap schedule, a watchdog), by handle id, behind mu: each
// is taken out under the lock and stopped outside it.
template <typename Ptr>
Ptr TakeWorker(std::mutex& mu, std::map<std::string, Ptr>& workers, const std::string& id) {
  std::lock_guard<std::mutex> l(mu);
  auto it = workers.find(id);
  if (it == workers.end()) return nullptr;
  Ptr w = std::move(it->second);
  workers.erase(it);
  return w;
}
template <typename Ptr>
std::map<std::string, Ptr> TakeAllWorkers(std::mutex& mu, std::map<std::string, Ptr>& workers) {
  std::lock_guard<std::mutex> l(mu);
  return std::exchange(workers, {});
}

// bandwidth_throttle's ingress policer on a host's own NIC: an nft netdev table `table` with an
// ingress chain on ifname dropping what exceeds rate_bps (with burst_bytes of burst).
std::string PolicerRuleset(const std::string& table, const std::string& ifname, uint64_t rate_bps,
                           uint64_t burst_bytes);

// nft netdev hooks that carry traffic to and from the host at a link end on `side`: on the
// switch side ingress is from the host and egress to it; on the host's own NIC the reverse.
struct DirectionHooks {
  const char* to_host;
  const char* from_host;
};
DirectionHooks HooksFor(PortSide side);

}  // namespace fl::injectors::internal

// ---- ports of a switch reached through a SwitchDriver (Port::sw set) ----

namespace fl::injectors::internal {

// Whether the port is made through its switch's driver (sw set), and whether it also has a
// kernel end this process can reach (a local lab with `switch_control: ssh`: the injectors that
// have no driver operation, packet_loss and pfc_storm, keep using that).
inline bool ViaDriver(const Port& p) { return p.sw != nullptr || !p.sw_port.empty(); }
inline bool HasKernelEnd(const Port& p) { return !p.ifname.empty(); }
// A port in a named namespace that no longer exists (a local lab torn down): a revert has
// nothing left to do there, through a driver or not.
bool LabGone(const Port& p);

// The driver of p's switch, opened for one operation (FailedPrecondition when the handle lost
// its connection: a corrupt journal entry).
StatusOr<std::unique_ptr<SwitchDriver>> DriverOf(const Port& p);
// The deadline of one operation on p's switch.
Deadline SwitchDeadline(const Port& p);
// "leaf1 Ethernet12" for messages, and the journal object a fault on it claims.
std::string SwitchPortLabel(const Port& p);
// At Prepare: p's driver, once it opened, knows the port name and has the operations.
StatusOr<std::unique_ptr<SwitchDriver>> CheckDriverPort(const Port& p, std::string_view kind,
                                                        const std::vector<SwitchOp>& ops);

}  // namespace fl::injectors::internal
