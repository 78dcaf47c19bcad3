// Topology: what a lab looks like, loaded from configs/labs/*.yaml, and the kernel objects
// it maps to (namespaces, bridges, veth links, addresses) for a lab of a given name.
//
// File format (every key is checked; unknown keys are errors with file:line:col):
//   name: rail4              # default lab name (1-10 chars [a-z0-9])
//   hosts: 4
//   gpus_per_host: 2         # ranks (containers) per host
//   nics_per_host: 2         # data NICs; NIC i of every host is on rail i
//   tors_per_rail: 1         # 2 = dual-ToR (HPN-style): each NIC has a port on two ToRs
//   hosts_per_tor: 4         # hosts per pod; fewer than hosts needs a spine
//   spines: 0                # l2: 0 or 1 (one L2 spine joining every ToR); bgp: 1..4
//   routing: l2              # or bgp: ToRs and spines are routers running FRR (see below)
//   link:   {rate: 1gbit, burst: 256KiB, mtu: 1500}
//   uplink: {rate: 2gbit, burst: 256KiB}
//   switch_control: netlink  # or ssh: switch ports are managed over SSH (see below)
//
// Naming: namespaces are "fl-<lab>-<node>" (node: h0, tor0, tor0a, tor0p1, spine0, mgmt);
// inside a host the data ports are nic<r> (dual-ToR: nic<r>a, nic<r>b) and mgmt0; inside a
// switch the host ports are h<i>, uplinks up<s>, and a spine's ports are named after ToRs.
// Addresses: data 198.18.<2*rail+plane>.<host+1>/24; management 198.19.<m>.<host+1>/24 with
// the root namespace at .254 (m chosen per lab so that labs coexist).
//
// switch_control: netlink (default): injectors act on switch ports with netlink/nft directly.
// ssh: every switch (ToRs and spines) also gets a port mgmt0 on the management network at
// 198.19.<m>.<kSwitchMgmtBase + i> (i: the switch's index in plan order; at most
// kMaxSshSwitches switches), runs a real sshd there whose ForceCommand is
// faultline-switch-shim (a SONiC-like CLI), and the lab's Fabric hands out switch ports that
// carry a SwitchConn (injectors/switch/switch_driver.h) and a SONiC port name (Ethernet0, 4, 8, ...
// in SwitchPorts order), so injectors go through the ssh-template driver. See docs/lab.md.
//
// routing: bgp: ToRs and spines route (no bridge between ToR and spine; a ToR's host ports stay
// on its br0, which carries the hosts' gateway). Rail r of pod p is the subnet
// 198.18.<p*nics_per_host + r>.0/24, hosts at .<host+1>, the ToR's br0 at .254; the ToR-spine
// links are /31s in 198.18.240.0/20 (uplink k: ToR .2k, spine .2k+1). eBGP: ToR i (plan
// order) is AS 65001+i, every spine AS 65000; each ToR advertises its rail subnet. Needs
// tors_per_rail 1 and switch_control netlink.
//
// Thread-safety: values.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace fl {
class YamlDoc;
}  // namespace fl

namespace fl::lab {

struct LinkSpec {
  uint64_t rate_bps = 0;
  uint64_t burst_bytes = 256 * 1024;
  int mtu = 1500;
};

enum class SwitchControl { kNetlink, kSsh };
enum class Routing { kL2, kBgp };

inline constexpr int kSpineAsn = 65000;
inline constexpr int kMaxBgpSpines = 4;

// Switch management addresses: 198.19.<m>.(kSwitchMgmtBase + i); hosts use .1-.64, root .254.
inline constexpr int kSwitchMgmtBase = 100;
inline constexpr int kMaxSshSwitches = 150;

struct Topology {
  std::string source;  // file it came from
  std::string text;    // its content (stored with a running lab)
  std::string name;
  int hosts = 0;
  int gpus_per_host = 1;
  int nics_per_host = 1;
  int tors_per_rail = 1;
  int hosts_per_tor = 0;  // 0: all hosts
  int spines = 0;
  LinkSpec link;
  LinkSpec uplink;
  SwitchControl switch_control = SwitchControl::kNetlink;
  Routing routing = Routing::kL2;

  int pods() const { return (hosts + hosts_per_tor - 1) / hosts_per_tor; }
};

// Errors are InvalidArgument "FILE:LINE:COL: ..."; nothing outside the process is touched.
StatusOr<Topology> LoadTopology(const std::string& path);
StatusOr<Topology> ParseTopology(std::string_view text, const std::string& source);
// The same over a document already parsed (its name is the source).
StatusOr<Topology> ParseTopology(const YamlDoc& doc);

// True for a valid lab name: 1-10 characters [a-z0-9].
bool IsValidLabName(std::string_view name);

// The kernel objects of a lab.
struct NodeObj {
  std::string name;   // "h0", "tor1", "spine0", "mgmt"
  std::string netns;  // "fl-<lab>-h0"
  bool is_switch = false;
  // routing bgp (ToRs and spines): the AS, the router id, and a ToR's br0 address.
  int asn = 0;
  std::string router_id;
  std::string addr;  // "198.18.1.254/24"
};

enum class LinkKind { kHost, kUplink, kMgmt };

struct LinkObj {
  LinkKind kind;
  std::string a_node, a_netns, a_if;  // host / ToR side
  std::string b_node, b_netns, b_if;  // switch / spine side (or the mgmt switch)
  std::string a_name;                 // target name of the a end: "h0.nic1a", "tor0.up0"
  std::string b_name;                 // target name of the b end: "tor1.h0", "spine0.tor0"
  std::string a_addr;                 // "198.18.2.1/24" (hosts; switches' mgmt0 with ssh)
  std::string b_addr;                 // routing bgp, uplinks: the spine end ("198.18.240.1/31")
  int rail = -1;
  int host = -1;  // kHost and the hosts' kMgmt links; -1 for a switch's mgmt0
  int pod = -1;   // kHost links
  LinkSpec spec;  // rate 0: unshaped
};

struct LabPlan {
  std::string lab;     // lab name
  std::string prefix;  // "fl-<lab>-"
  std::vector<NodeObj> nodes;
  std::vector<LinkObj> links;
  std::string root_mgmt_if;  // "fl-<lab>-m" in the root namespace
  std::string root_mgmt_addr;
};

// mgmt_index picks the management subnet 198.19.<mgmt_index>.0/24.
LabPlan PlanLab(const Topology& topology, const std::string& lab_name, int mgmt_index);

// The data ports of switch `node` in the fixed order their SONiC names follow (Ethernet0,
// Ethernet4, ...): host ports (kHost links, plan order), then its uplinks, then (a spine) its
// ToR ports. Pairs of (SONiC name, ifname in the switch's namespace).
std::vector<std::pair<std::string, std::string>> SwitchPorts(const LabPlan& plan,
                                                             const std::string& node);

std::string TorName(const Topology& t, int rail, int plane, int pod);

// routing bgp: the subnet of rail `rail` in pod `pod` ("198.18.3.0/24").
std::string RailSubnet(const Topology& t, int rail, int pod);

// routing bgp: a host's routes to the other pods' subnets of the rail of its kHost link l:
// (prefix, gateway) pairs, the gateway being its ToR's br0 address.
std::vector<std::pair<std::string, std::string>> HostRoutes(const Topology& t, const LinkObj& l);

// routing bgp: the FRR configuration of switch `node` (zebra and bgpd read the same text):
// router id, eBGP to every peer over its /31s with `timers bgp 1 3`, maximum-paths for ECMP,
// and (a ToR) a network statement for its rail subnet.
std::string FrrConfig(const LabPlan& plan, const std::string& node);

}  // namespace fl::lab
