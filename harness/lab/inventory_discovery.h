// `faultline inventory discover` and `--check` (docs/operations.md, "Discover the inventory"):
// what the hosts' agents say of themselves, made into an inventory `--lab` accepts, and the
// drift between a live fleet and an inventory. Pure: the agents are asked by
// harness/suite/census.h; this file only turns their facts into YAML and differences.
//
// Which NICs become the inventory's (SelectNics): those whose interface name matches one of
// the --nics globs when given; otherwise every interface with an IPv4 address but the one the
// agent dialled from (the management network, never a target) and, when the host has NICs on
// PCI, only those (a docker bridge or a VPN tunnel has an address too). Rail order: by PCI
// address, then by name in natural order ("nic2" before "nic10"); NIC i is named nic<i>.
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "harness/lab/inventory.h"

namespace fl::lab {

// One host as its agent reported it (its Hello's fingerprint).
struct HostFacts {
  struct Nic {
    std::string ifname, driver, firmware, pci, mac;
    int numa = -1;
    uint64_t speed_mbps = 0;
    std::string state;  // "up", "down", "no-carrier"
    std::vector<std::string> ipv4;
    std::string rdma_device;
    uint32_t rdma_port = 0;
    std::string lldp_switch, lldp_port;  // empty: no LLDP neighbour heard
  };
  std::string host;
  std::string peer_ip;  // the address the agent dialled from (its management interface's)
  std::string agent_version;
  std::vector<Nic> nics;
  std::vector<InventoryGpu> gpus;
  bool lldp_read = false;  // lldpd answered
  std::string lldp_note;   // why not
  // The agent's policy (its file's path and text; empty text: the built-in default) and what
  // the injectors need that the host lacks ("tc: not installed").
  std::string policy_source, policy_yaml;
  std::vector<std::string> lacks;
};

struct DiscoverOptions {
  std::string name;        // the inventory's name (1-10 chars [a-z0-9])
  std::string listen;      // coordinator.listen
  std::string token_file;  // coordinator.token_file
  std::string agent_wait = "60s";
  std::vector<std::string> nic_globs;  // fnmatch(3) patterns on interface names; empty: default
  int ranks = 0;                       // ranks per host; 0: its GPUs (1 when it has none)
  std::string tool_version;            // written in the header comment
};

// The NICs of the host that go into the inventory, in rail order.
std::vector<const HostFacts::Nic*> SelectNics(const HostFacts& host,
                                              const std::vector<std::string>& nic_globs);

// The inventory's text. InvalidArgument when it could not be one: a host without a selected
// NIC (or without an IPv4 address on one), hosts with different numbers of NICs or ranks
// (rails must line up), a name that is not an inventory name. The result parses with
// ParseInventory (checked by the caller that writes it).
StatusOr<std::string> InventoryYamlFromFacts(const std::vector<HostFacts>& hosts,
                                             const DiscoverOptions& options);

// The drift of a live fleet from an inventory, one line each, sorted by host; empty when none:
// a host not seen or a new one, a NIC missing (by interface name) or new (selected as
// discovery would), a NIC moved to another switch port or no longer cabled (CompareWiring;
// only for hosts whose lldpd answered, else one line saying the wiring was not checked),
// changes of driver, firmware, PCI address, NUMA node, speed, MAC or RDMA port against the
// NIC's `expect:`, a NIC whose link is not up, a GPU missing or new against `gpus:`.
std::vector<std::string> CheckDrift(const Inventory& inventory, const std::vector<HostFacts>& live,
                                    const std::vector<std::string>& nic_globs = {});

}  // namespace fl::lab
