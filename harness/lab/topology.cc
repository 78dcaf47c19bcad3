#include "harness/lab/topology.h"

#include "common/input_file.h"
#include "common/name_chars.h"
#include "common/yaml_util.h"

namespace fl::lab {

bool IsValidLabName(std::string_view name) { return IsNameOf(name, 10, "", Letters::kLower); }

namespace {

// Link rates up to 1 Tbit/s (tbf takes 64-bit rates); bursts up to 256 MiB.
constexpr uint64_t kMaxRate = 1000ull * 1000 * 1000 * 1000;
constexpr uint64_t kMaxBurst = 256ull << 20;
// routing bgp: rail subnets 198.18.0-239.0/24, uplink /31s in 198.18.240.0/20.
constexpr int kMaxBgpSubnets = 240;
constexpr int kUplinkBase = 240;

std::string UplinkAddr(int k, int end) {
  const int a = 2 * k + end;
  return "198.18." + std::to_string(kUplinkBase + a / 256) + "." + std::to_string(a % 256);
}

std::string Ip4Of(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

StatusOr<int> GetCount(const YamlDoc& doc, const YAML::Node& map, std::string_view key, int lo,
                       int hi, int fallback, bool required) {
  if (required) return doc.GetBounded<int>(map, key, lo, hi);
  return doc.GetBoundedOr<int>(map, key, fallback, lo, hi);
}

StatusOr<LinkSpec> GetLink(const YamlDoc& doc, const YAML::Node& map, std::string_view key,
                           LinkSpec fallback, bool allow_mtu) {
  YAML::Node n = map[std::string(key)];
  if (!n.IsDefined() || n.IsNull()) return fallback;
  if (allow_mtu) {
    FL_RETURN_IF_ERROR(doc.CheckKeys(n, {"rate", "burst", "mtu"}, key));
  } else {
    FL_RETURN_IF_ERROR(doc.CheckKeys(n, {"rate", "burst"}, key));
  }
  LinkSpec s = fallback;
  if (doc.Has(n, "rate")) {
    FL_ASSIGN_OR_RETURN(s.rate_bps, doc.AsBitRateIn(n["rate"], "rate", 0, kMaxRate));
    if (s.rate_bps != 0 && s.rate_bps < 1000000)
      return doc.Error(n["rate"], "rate must be 0 (unshaped) or at least 1mbit");
  }
  if (doc.Has(n, "burst")) {
    FL_ASSIGN_OR_RETURN(s.burst_bytes, doc.AsBytesIn(n["burst"], "burst", 0, kMaxBurst));
    if (s.burst_bytes < 64 * 1024)
      return doc.Error(n["burst"],
                       "burst must be at least 64KiB (the GSO size): smaller bursts "
                       "collapse TCP over tbf");
  }
  if (allow_mtu && doc.Has(n, "mtu")) {
    FL_ASSIGN_OR_RETURN(s.mtu, GetCount(doc, n, "mtu", 576, 9000, 1500, false));
  }
  return s;
}

}  // namespace

StatusOr<Topology> LoadTopology(const std::string& path) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::LoadFile(path, InputKind::kTopology));
  return ParseTopology(doc);
}

StatusOr<Topology> ParseTopology(std::string_view text, const std::string& source) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, source));
  return ParseTopology(doc);
}

StatusOr<Topology> ParseTopology(const YamlDoc& doc) {
  const std::string& source = doc.name();
  const std::string_view text = doc.text();
  const YAML::Node& r = doc.root();
  FL_RETURN_IF_ERROR(
      doc.CheckKeys(r,
                    {"name", "hosts", "gpus_per_host", "nics_per_host", "tors_per_rail",
                     "hosts_per_tor", "spines", "routing", "link", "uplink", "switch_control"},
                    "topology"));
  Topology t;
  t.source = source;
  t.text = std::string(text);
  FL_ASSIGN_OR_RETURN(t.name, doc.Get<std::string>(r, "name"));
  if (!IsValidLabName(t.name)) return doc.Error(r["name"], "name must be 1-10 characters [a-z0-9]");
  FL_ASSIGN_OR_RETURN(t.hosts, GetCount(doc, r, "hosts", 1, 64, 0, true));
  FL_ASSIGN_OR_RETURN(t.gpus_per_host, GetCount(doc, r, "gpus_per_host", 1, 16, 1, false));
  FL_ASSIGN_OR_RETURN(t.nics_per_host, GetCount(doc, r, "nics_per_host", 1, 8, 1, false));
  FL_ASSIGN_OR_RETURN(t.tors_per_rail, GetCount(doc, r, "tors_per_rail", 1, 2, 1, false));
  FL_ASSIGN_OR_RETURN(t.hosts_per_tor, GetCount(doc, r, "hosts_per_tor", 1, 64, t.hosts, false));
  std::string routing = "l2";
  if (doc.Has(r, "routing")) {
    FL_ASSIGN_OR_RETURN(routing, doc.Get<std::string>(r, "routing"));
  }
  if (routing == "bgp") {
    t.routing = Routing::kBgp;
  } else if (routing != "l2") {
    return doc.Error(r["routing"], "routing must be l2 or bgp, not '" + routing + "'");
  }
  if (t.routing == Routing::kBgp) {
    FL_ASSIGN_OR_RETURN(t.spines, GetCount(doc, r, "spines", 1, kMaxBgpSpines, 0, true));
    if (t.tors_per_rail != 1)
      return doc.Error(r["tors_per_rail"], "routing: bgp needs tors_per_rail: 1");
  } else {
    FL_ASSIGN_OR_RETURN(t.spines, GetCount(doc, r, "spines", 0, 1, 0, false));
  }
  LinkSpec link_default{1000ull * 1000 * 1000, 256 * 1024, 1500};
  FL_ASSIGN_OR_RETURN(t.link, GetLink(doc, r, "link", link_default, true));
  LinkSpec up_default{2 * t.link.rate_bps, t.link.burst_bytes, t.link.mtu};
  FL_ASSIGN_OR_RETURN(t.uplink, GetLink(doc, r, "uplink", up_default, false));
  t.uplink.mtu = t.link.mtu;
  if (t.hosts_per_tor > t.hosts) t.hosts_per_tor = t.hosts;
  if (t.pods() > 1 && t.spines == 0)
    return doc.Error(r["hosts_per_tor"],
                     "hosts_per_tor < hosts makes several pods: they need "
                     "'spines: 1' to reach each other");
  std::string control = "netlink";
  if (doc.Has(r, "switch_control")) {
    FL_ASSIGN_OR_RETURN(control, doc.Get<std::string>(r, "switch_control"));
  }
  if (t.routing == Routing::kBgp) {
    if (t.pods() * t.nics_per_host > kMaxBgpSubnets)
      return doc.Error(r["hosts_per_tor"],
                       "routing: bgp gives every rail of every pod a /24 in "
                       "198.18.0.0-198.18.239.255: at most " +
                           std::to_string(kMaxBgpSubnets) +
                           " pods x nics_per_host, this topology has " +
                           std::to_string(t.pods() * t.nics_per_host));
    if (control != "netlink")
      return doc.Error(r["switch_control"], "routing: bgp needs switch_control: netlink");
  }
  if (control == "ssh") {
    t.switch_control = SwitchControl::kSsh;
    const int switches = t.pods() * t.nics_per_host * t.tors_per_rail + t.spines;
    if (switches > kMaxSshSwitches)
      return doc.Error(r["switch_control"],
                       "switch_control: ssh gives every switch a management address 198.19.<m>." +
                           std::to_string(kSwitchMgmtBase) + "-" +
                           std::to_string(kSwitchMgmtBase + kMaxSshSwitches - 1) + ": at most " +
                           std::to_string(kMaxSshSwitches) + " switches, this topology has " +
                           std::to_string(switches));
  } else if (control != "netlink") {
    return doc.Error(r["switch_control"],
                     "switch_control must be netlink or ssh, not '" + control + "'");
  }
  return t;
}

std::string RailSubnet(const Topology& t, int rail, int pod) {
  return "198.18." + std::to_string(pod * t.nics_per_host + rail) + ".0/24";
}

std::vector<std::pair<std::string, std::string>> HostRoutes(const Topology& t, const LinkObj& l) {
  std::vector<std::pair<std::string, std::string>> out;
  if (t.routing != Routing::kBgp || l.kind != LinkKind::kHost) return out;
  const std::string gw = "198.18." + std::to_string(l.pod * t.nics_per_host + l.rail) + ".254";
  for (int pod = 0; pod < t.pods(); ++pod)
    if (pod != l.pod) out.push_back({RailSubnet(t, l.rail, pod), gw});
  return out;
}

std::string FrrConfig(const LabPlan& plan, const std::string& node) {
  const NodeObj* self = nullptr;
  for (const auto& n : plan.nodes)
    if (n.name == node) self = &n;
  if (!self || self->asn == 0) return "";
  std::string c = "! faultline lab " + plan.lab + ", switch " + node + " (generated)\n";
  c += "hostname " + node + "\n";
  c += "router bgp " + std::to_string(self->asn) + "\n";
  c += " bgp router-id " + self->router_id + "\n";
  c += " no bgp ebgp-requires-policy\n no bgp network import-check\n";
  c += " timers bgp 1 3\n";
  std::vector<std::string> nets;
  for (const auto& l : plan.links) {
    if (l.kind != LinkKind::kUplink) continue;
    std::string peer, peer_node;
    if (l.a_node == node) {
      peer = Ip4Of(l.b_addr);
      peer_node = l.b_node;
    } else if (l.b_node == node) {
      peer = Ip4Of(l.a_addr);
      peer_node = l.a_node;
    } else {
      continue;
    }
    int peer_asn = 0;
    for (const auto& n : plan.nodes)
      if (n.name == peer_node) peer_asn = n.asn;
    c += " neighbor " + peer + " remote-as " + std::to_string(peer_asn) + "\n";
    c += " neighbor " + peer + " description " + peer_node + "\n";
    c += " neighbor " + peer + " advertisement-interval 0\n";
    c += " neighbor " + peer + " timers connect 1\n";
  }
  c += " address-family ipv4 unicast\n";
  if (!self->addr.empty()) {
    // The subnet of br0's address: a.b.c.254/24 -> a.b.c.0/24.
    std::string ip = Ip4Of(self->addr);
    c += "  network " + ip.substr(0, ip.rfind('.')) + ".0/24\n";
  }
  c += "  maximum-paths " + std::to_string(kMaxBgpSpines) + "\n";
  c += " exit-address-family\n";
  return c;
}

std::string TorName(const Topology& t, int rail, int plane, int pod) {
  std::string n = "tor" + std::to_string(rail);
  if (t.tors_per_rail == 2) n += static_cast<char>('a' + plane);
  if (t.pods() > 1) n += "p" + std::to_string(pod);
  return n;
}

LabPlan PlanLab(const Topology& t, const std::string& lab_name, int mgmt_index) {
  LabPlan p;
  p.lab = lab_name;
  p.prefix = "fl-" + lab_name + "-";
  auto ns = [&](const std::string& node) { return p.prefix + node; };
  auto make_node = [&](const std::string& name, bool is_switch) {
    NodeObj n;
    n.name = name;
    n.netns = ns(name);
    n.is_switch = is_switch;
    return n;
  };
  for (int h = 0; h < t.hosts; ++h) p.nodes.push_back(make_node("h" + std::to_string(h), false));
  for (int pod = 0; pod < t.pods(); ++pod)
    for (int r = 0; r < t.nics_per_host; ++r)
      for (int pl = 0; pl < t.tors_per_rail; ++pl) {
        std::string tor = TorName(t, r, pl, pod);
        NodeObj n = make_node(tor, true);
        if (t.routing == Routing::kBgp) {
          const int i = static_cast<int>(p.nodes.size()) - t.hosts;  // ToR index
          n.asn = kSpineAsn + 1 + i;
          n.addr = "198.18." + std::to_string(pod * t.nics_per_host + r) + ".254/24";
          n.router_id = Ip4Of(n.addr);
        }
        p.nodes.push_back(n);
      }
  for (int s = 0; s < t.spines; ++s) {
    NodeObj n = make_node("spine" + std::to_string(s), true);
    if (t.routing == Routing::kBgp) {
      n.asn = kSpineAsn;
      n.router_id = "10.255.255." + std::to_string(s + 1);
    }
    p.nodes.push_back(n);
  }
  p.nodes.push_back(make_node("mgmt", true));

  for (int h = 0; h < t.hosts; ++h) {
    std::string host = "h" + std::to_string(h);
    int pod = h / t.hosts_per_tor;
    for (int r = 0; r < t.nics_per_host; ++r)
      for (int pl = 0; pl < t.tors_per_rail; ++pl) {
        std::string tor = TorName(t, r, pl, pod);
        LinkObj l;
        l.kind = LinkKind::kHost;
        l.a_node = host;
        l.a_netns = ns(host);
        l.a_if = "nic" + std::to_string(r) + (t.tors_per_rail == 2 ? std::string(1, 'a' + pl) : "");
        l.b_node = tor;
        l.b_netns = ns(tor);
        l.b_if = host;
        l.a_name = host + "." + l.a_if;
        l.b_name = tor + "." + host;
        const int subnet = t.routing == Routing::kBgp ? pod * t.nics_per_host + r : 2 * r + pl;
        l.a_addr = "198.18." + std::to_string(subnet) + "." + std::to_string(h + 1) + "/24";
        l.rail = r;
        l.host = h;
        l.pod = pod;
        l.spec = t.link;
        p.links.push_back(l);
      }
  }
  int uplink = 0;
  for (int s = 0; s < t.spines; ++s) {
    std::string spine = "spine" + std::to_string(s);
    for (const auto& n : p.nodes) {
      if (!n.is_switch || n.name.rfind("tor", 0) != 0) continue;
      LinkObj l;
      l.kind = LinkKind::kUplink;
      l.a_node = n.name;
      l.a_netns = n.netns;
      l.a_if = "up" + std::to_string(s);
      l.b_node = spine;
      l.b_netns = ns(spine);
      l.b_if = n.name;
      l.a_name = n.name + "." + l.a_if;
      l.b_name = spine + "." + n.name;
      if (t.routing == Routing::kBgp) {
        l.a_addr = UplinkAddr(uplink, 0) + "/31";
        l.b_addr = UplinkAddr(uplink, 1) + "/31";
        ++uplink;
      }
      l.spec = t.uplink;
      p.links.push_back(l);
    }
  }
  std::string m = "198.19." + std::to_string(mgmt_index) + ".";
  for (int h = 0; h < t.hosts; ++h) {
    std::string host = "h" + std::to_string(h);
    LinkObj l;
    l.kind = LinkKind::kMgmt;
    l.a_node = host;
    l.a_netns = ns(host);
    l.a_if = "mgmt0";
    l.b_node = "mgmt";
    l.b_netns = ns("mgmt");
    l.b_if = host;
    l.a_name = host + ".mgmt0";
    l.b_name = "mgmt." + host;
    l.a_addr = m + std::to_string(h + 1) + "/24";
    l.host = h;
    l.spec = LinkSpec{0, 0, 1500};
    p.links.push_back(l);
  }
  if (t.switch_control == SwitchControl::kSsh) {
    int i = 0;
    for (const auto& n : p.nodes) {
      if (!n.is_switch || n.name == "mgmt") continue;
      LinkObj l;
      l.kind = LinkKind::kMgmt;
      l.a_node = n.name;
      l.a_netns = n.netns;
      l.a_if = "mgmt0";
      l.b_node = "mgmt";
      l.b_netns = ns("mgmt");
      l.b_if = n.name;
      l.a_name = n.name + ".mgmt0";
      l.b_name = "mgmt." + n.name;
      l.a_addr = m + std::to_string(kSwitchMgmtBase + i++) + "/24";
      l.spec = LinkSpec{0, 0, 1500};
      p.links.push_back(l);
    }
  }
  p.root_mgmt_if = "fl-" + lab_name + "-m";
  p.root_mgmt_addr = m + "254/24";
  return p;
}

std::vector<std::pair<std::string, std::string>> SwitchPorts(const LabPlan& plan,
                                                             const std::string& node) {
  std::vector<std::string> ifnames;
  for (const auto& l : plan.links)
    if (l.kind == LinkKind::kHost && l.b_node == node) ifnames.push_back(l.b_if);
  for (const auto& l : plan.links)
    if (l.kind == LinkKind::kUplink && l.a_node == node) ifnames.push_back(l.a_if);
  for (const auto& l : plan.links)
    if (l.kind == LinkKind::kUplink && l.b_node == node) ifnames.push_back(l.b_if);
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < ifnames.size(); ++i)
    out.push_back({"Ethernet" + std::to_string(4 * i), ifnames[i]});
  return out;
}

}  // namespace fl::lab
