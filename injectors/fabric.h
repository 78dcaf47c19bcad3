// Fabric: how injectors turn topology names into kernel objects.
//
// Injectors are aimed by names from the topology (host "h0", NIC "h0.nic1", rail "rail1",
// ToR port "tor1.h0", uplink "tor0.up0", container "h0.rank1"), never by interface names or
// shell strings. A Fabric (the local lab, or an inventory of real hosts) resolves them to
// the ports and containers an injector acts on. Resolution happens once, when a fault is
// prepared; the result is stored in the fault's handle so that a revert needs no Fabric (a
// recovering process may know nothing about the lab).
//
// Thread-safety: implementations must allow concurrent const calls.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fl::injectors {

struct SwitchConn;  // injectors/switch/switch_driver.h

// One end of a link: an interface in a network namespace, and the other end.
struct Port {
  std::string name;   // topology name, e.g. "h0.nic1" or "tor1.h0"
  std::string netns;  // namespace holding ifname ("" = the caller's)
  std::string ifname;
  std::string peer_netns;  // the far end of the link
  std::string peer_ifname;
  uint64_t rate_bps = 0;  // shaped rate of this end's egress (0 = unshaped)
  uint64_t burst_bytes = 0;
  // A port of a real switch (or of a local lab with `switch_control: ssh`): the injectors act
  // on it through the SwitchDriver for sw (injectors/switch/switch_driver.h), naming it sw_port
  // ("Ethernet12"), instead of netlink/nft on netns/ifname. Null: a kernel port.
  std::shared_ptr<const SwitchConn> sw = {};
  std::string sw_port = {};
};

// A rank's container. runtime "cgroup": one faultline started (LocalContainerRuntime), named
// by its cgroup v2 leaf. runtime "docker" or "podman": a container of that engine, named by its
// ID or name and killed through the engine's CLI (argv only; the CLI is `cli` when that is an
// absolute path, else the engine's name resolved by fl::ResolveTool, never through PATH).
struct ContainerRef {
  std::string name;                // topology name, e.g. "h0.rank1"
  std::string cgroup_path;         // runtime "cgroup": absolute path of its cgroup v2 leaf
  std::string runtime = "cgroup";  // "cgroup" | "docker" | "podman"
  std::string id = {};             // docker/podman: the container's ID or name
  std::string cli = {};            // docker/podman: absolute path of the CLI ("": resolved)
};

enum class PortSide { kHost, kSwitch };

class Fabric {
 public:
  virtual ~Fabric() = default;

  // Host-to-switch links named by host ("h0": all its NICs), NIC ("h0.nic1"), rail
  // ("rail1": that NIC on every host) or ToR port ("tor1.h0"); returns the host-side or the
  // switch-side end of each. Unknown names are NotFound, listing what is known.
  virtual StatusOr<std::vector<Port>> HostLinks(std::string_view target, PortSide side) const = 0;
  // ToR-to-spine links named "tor0.up0" (one) or "tor0" (all uplinks of tor0); the ToR end.
  virtual StatusOr<std::vector<Port>> Uplinks(std::string_view target) const = 0;
  // The switch ports that send into the switch holding switch_port, other than switch_port
  // itself: the far ends (host NICs, spine ports) whose egress a paused switch backs up.
  virtual StatusOr<std::vector<Port>> UpstreamOf(const Port& switch_port) const = 0;
  // A running container ("h0.rank1" or "rank3").
  virtual StatusOr<ContainerRef> Container(std::string_view target) const = 0;

  // The end of a host link where this fabric applies gray faults (link_blackhole,
  // packet_loss, bandwidth_throttle): the switch side in the local lab; the host's own NIC on
  // real hosts, where there is no switch access. HostLinks(target, GrayFaultSide()) gives the
  // ports. Directions keep their meaning on either end: to_host is traffic arriving at the
  // host (switch-side egress, host-side ingress), from_host traffic leaving it.
  virtual PortSide GrayFaultSide() const { return PortSide::kSwitch; }
};

}  // namespace fl::injectors
