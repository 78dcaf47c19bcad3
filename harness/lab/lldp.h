// What LLDP says a host's NICs are cabled to, and how that differs from an inventory: parts of
// `faultline inventory discover` and `--check` (inventory_discovery.h). Every agent runs
// lldpcli for its host facts (harness/agent/fingerprint.h) with this parser.
//
// ParseLldpNeighbors reads `lldpcli -f json show neighbors` (lldpd 1.0; Debian 12): one entry
// per local interface and neighbour. lldpcli writes "interface" as an object keyed by the
// interface name when there is one, and as a list of such objects when there are several; the
// same for "chassis". The neighbour's port is its port id when that is a name (type ifname or
// local: what switches send, "Ethernet12"), else its port description (a MAC-typed id, as a
// Linux lldpd sends, describes the port by name in "descr").
//
// CompareWiring: the live wiring of an inventory's hosts against the inventory's own
// (InventoryNic::sw, sw_port), one line per difference: a NIC moved to another switch port, a
// NIC seen nowhere, a cabled NIC the inventory does not know. Pure and never throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "harness/lab/inventory.h"

namespace fl::lab {

struct LldpNeighbor {
  std::string ifname;   // the local interface ("ens1f0np0")
  std::string chassis;  // the neighbour's system name ("leaf0"); its chassis id when unnamed
  std::string port;     // its port ("Ethernet12")
};

// InvalidArgument "SOURCE: ..." for text that is not lldpcli's JSON.
StatusOr<std::vector<LldpNeighbor>> ParseLldpNeighbors(std::string_view json_text,
                                                       std::string_view source = "lldpcli");

// What one host's lldpcli said, for CompareWiring.
struct HostWiring {
  std::string host;
  std::vector<LldpNeighbor> neighbors;
};

// One line per difference, sorted by host and NIC; empty when the wiring matches. Hosts of the
// inventory absent from `live` are "HOST: not seen"; NICs without an sw in the inventory are
// only compared when LLDP sees them cabled.
std::vector<std::string> CompareWiring(const Inventory& inventory,
                                       const std::vector<HostWiring>& live);

}  // namespace fl::lab
