#include "harness/lab/inventory_discovery.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "common/name_chars.h"
#include "harness/lab/lldp.h"

namespace fl::lab {
namespace {

// Natural order: digit runs compare as numbers ("nic2" < "nic10").
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

bool MatchesAny(const std::string& ifname, const std::vector<std::string>& globs) {
  for (const auto& g : globs)
    if (fnmatch(g.c_str(), ifname.c_str(), 0) == 0) return true;
  return false;
}

// A YAML scalar that stays a string (quoted when a plain scalar would read otherwise).
std::string Scalar(const std::string& s) {
  bool plain = !s.empty() && AllNameChars(s, "_-./");
  // Numbers, booleans and null would not read back as strings.
  if (plain && (std::isdigit(static_cast<unsigned char>(s[0])) || s == "true" || s == "false" ||
                s == "null" || s == "yes" || s == "no" || s == "on" || s == "off"))
    plain = false;
  if (plain) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) q += c;
  }
  return q + "\"";
}

std::string Rdma(const HostFacts::Nic& n) {
  return n.rdma_device.empty() ? "" : n.rdma_device + "/" + std::to_string(n.rdma_port);
}

std::string ExpectYaml(const HostFacts::Nic& n) {
  std::vector<std::string> kv;
  if (!n.driver.empty()) kv.push_back("driver: " + Scalar(n.driver));
  if (!n.firmware.empty()) kv.push_back("firmware: " + Scalar(n.firmware));
  if (!n.pci.empty()) kv.push_back("pci: " + Scalar(n.pci));
  if (n.numa >= 0) kv.push_back("numa: " + std::to_string(n.numa));
  if (n.speed_mbps > 0) kv.push_back("speed_mbps: " + std::to_string(n.speed_mbps));
  if (!n.mac.empty()) kv.push_back("mac: " + Scalar(n.mac));
  if (!n.rdma_device.empty()) kv.push_back("rdma: " + Scalar(Rdma(n)));
  std::string out;
  for (const auto& x : kv) out += (out.empty() ? "" : ", ") + x;
  return out;
}

int RanksOf(const HostFacts& h, int ranks) {
  if (ranks > 0) return ranks;
  return h.gpus.empty() ? 1 : static_cast<int>(h.gpus.size());
}

// "driver mlx5_core changed to ..." lines for one NIC against its expect:.
void CompareFacts(const std::string& who, const NicFacts& want, const HostFacts::Nic& got,
                  std::vector<std::string>* out) {
  auto differ = [&](const char* what, const std::string& w, const std::string& g) {
    if (!w.empty() && w != g)
      out->push_back(who + ": " + what + " changed from " + w + " to " + (g.empty() ? "none" : g));
  };
  differ("driver", want.driver, got.driver);
  differ("firmware", want.firmware, got.firmware);
  differ("PCI address", want.pci, got.pci);
  differ("MAC", want.mac, got.mac);
  differ("RDMA port", want.rdma, Rdma(got));
  if (want.numa >= 0 && want.numa != got.numa)
    out->push_back(who + ": NUMA node changed from " + std::to_string(want.numa) + " to " +
                   (got.numa < 0 ? std::string("unknown") : std::to_string(got.numa)));
  if (want.speed_mbps > 0 && want.speed_mbps != got.speed_mbps)
    out->push_back(who + ": speed changed from " + std::to_string(want.speed_mbps) + " to " +
                   std::to_string(got.speed_mbps) + " Mbit/s");
}

}  // namespace

std::vector<const HostFacts::Nic*> SelectNics(const HostFacts& host,
                                              const std::vector<std::string>& nic_globs) {
  std::vector<const HostFacts::Nic*> out;
  if (!nic_globs.empty()) {
    for (const auto& n : host.nics)
      if (MatchesAny(n.ifname, nic_globs)) out.push_back(&n);
  } else {
    bool any_pci = false;
    std::vector<const HostFacts::Nic*> cand;
    for (const auto& n : host.nics) {
      if (n.ipv4.empty()) continue;
      if (!host.peer_ip.empty() &&
          std::find(n.ipv4.begin(), n.ipv4.end(), host.peer_ip) != n.ipv4.end())
        continue;  // the management interface
      cand.push_back(&n);
      any_pci = any_pci || !n.pci.empty();
    }
    for (const auto* n : cand)
      if (!any_pci || !n->pci.empty()) out.push_back(n);
  }
  std::sort(out.begin(), out.end(), [](const HostFacts::Nic* a, const HostFacts::Nic* b) {
    if (a->pci.empty() != b->pci.empty()) return !a->pci.empty();
    if (a->pci != b->pci) return a->pci < b->pci;
    return NaturalLess(a->ifname, b->ifname);
  });
  return out;
}

StatusOr<std::string> InventoryYamlFromFacts(const std::vector<HostFacts>& hosts,
                                             const DiscoverOptions& options) {
  if (hosts.empty()) return InvalidArgumentError("no host answered: nothing to write");
  bool name_ok = !options.name.empty() && options.name.size() <= 10;
  for (char c : options.name)
    name_ok = name_ok && (std::islower(static_cast<unsigned char>(c)) ||
                          std::isdigit(static_cast<unsigned char>(c)));
  if (!name_ok)
    return InvalidArgumentError("inventory name '" + options.name +
                                "' must be 1-10 characters [a-z0-9] (--name)");
  std::vector<std::vector<const HostFacts::Nic*>> selected;
  std::string counts;
  std::set<size_t> sizes;
  std::set<int> ranks;
  for (const auto& h : hosts) {
    selected.push_back(SelectNics(h, options.nic_globs));
    if (selected.back().empty())
      return InvalidArgumentError("host " + h.host + ": no data NIC found (" +
                                  (options.nic_globs.empty()
                                       ? std::string("no interface with an IPv4 address besides "
                                                     "the management one")
                                       : "no interface matches --nics") +
                                  "); say which with --nics GLOB");
    for (const auto* n : selected.back())
      if (n->ipv4.empty())
        return InvalidArgumentError("host " + h.host + ": NIC " + n->ifname +
                                    " has no IPv4 address (the ranks bind to one)");
    sizes.insert(selected.back().size());
    ranks.insert(RanksOf(h, options.ranks));
    counts += (counts.empty() ? "" : ", ") + h.host + " " + std::to_string(selected.back().size());
  }
  if (sizes.size() > 1)
    return InvalidArgumentError(
        "the hosts have different numbers of data NICs (" + counts +
        "): NIC i of every host is rail i, so they must match; pick them with --nics GLOB");
  if (ranks.size() > 1)
    return InvalidArgumentError(
        "the hosts have different numbers of GPUs: give the ranks per host with --ranks");

  std::string y = "# Discovered by faultline inventory discover";
  if (!options.tool_version.empty()) y += " (" + options.tool_version + ")";
  y += ".\n# Wiring from each host's lldpd; expect: is what the host said of each NIC, and\n"
       "# `faultline inventory discover --check THIS_FILE` reports what changed since.\n";
  y += "name: " + options.name + "\n";
  y += "coordinator:\n  listen: " + Scalar(options.listen) +
       "\n  token_file: " + Scalar(options.token_file) + "\n";
  y += "agent_wait: " + options.agent_wait + "\n";
  y += "hosts:\n";
  for (size_t h = 0; h < hosts.size(); ++h) {
    const HostFacts& host = hosts[h];
    y += "  - name: " + host.host + "\n";
    y += "    ranks: " + std::to_string(RanksOf(host, options.ranks)) + "\n";
    if (!host.lldp_read)
      y +=
          "    # no wiring: " + (host.lldp_note.empty() ? "lldpd did not answer" : host.lldp_note) +
          "\n";
    y += "    nics:\n";
    for (size_t i = 0; i < selected[h].size(); ++i) {
      const HostFacts::Nic& n = *selected[h][i];
      y += "      - name: nic" + std::to_string(i) + "\n";
      y += "        ifname: " + Scalar(n.ifname) + "\n";
      y += "        address: " + n.ipv4.front() + "\n";
      if (!n.lldp_switch.empty() && !n.lldp_port.empty())
        y += "        switch: " + Scalar(n.lldp_switch) + "\n        port: " + Scalar(n.lldp_port) +
             "\n";
      else if (host.lldp_read)
        y += "        # no LLDP neighbour heard on " + n.ifname + "\n";
      const std::string e = ExpectYaml(n);
      if (!e.empty()) y += "        expect: {" + e + "}\n";
    }
    if (!host.gpus.empty()) {
      y += "    gpus:\n";
      for (const auto& g : host.gpus) {
        y += "      - {pci: " + Scalar(g.pci);
        if (g.numa >= 0) y += ", numa: " + std::to_string(g.numa);
        if (!g.model.empty()) y += ", model: " + Scalar(g.model);
        y += "}\n";
      }
    }
  }
  return y;
}

std::vector<std::string> CheckDrift(const Inventory& inventory, const std::vector<HostFacts>& live,
                                    const std::vector<std::string>& nic_globs) {
  std::vector<std::string> drift;
  std::map<std::string, const HostFacts*> by_host;
  for (const auto& h : live) by_host[h.host] = &h;
  std::set<std::string> known;
  for (const auto& host : inventory.hosts) {
    known.insert(host.name);
    auto it = by_host.find(host.name);
    if (it == by_host.end()) {
      drift.push_back(host.name + ": not seen (no agent dialled in)");
      continue;
    }
    const HostFacts& facts = *it->second;
    std::map<std::string, const HostFacts::Nic*> nics;  // by ifname
    for (const auto& n : facts.nics) nics[n.ifname] = &n;
    HostWiring wiring{host.name, {}};
    std::set<std::string> listed;
    for (const auto& nic : host.nics) {
      listed.insert(nic.ifname);
      const std::string who = host.name + "." + nic.name + " (" + nic.ifname + ")";
      auto n = nics.find(nic.ifname);
      if (n == nics.end()) {
        drift.push_back(who + ": missing (no such interface on the host)");
        continue;
      }
      CompareFacts(who, nic.expect, *n->second, &drift);
      if (n->second->state != "up")
        drift.push_back(who + ": link is " +
                        (n->second->state.empty() ? std::string("unknown") : n->second->state));
      if (!n->second->lldp_switch.empty())
        wiring.neighbors.push_back({nic.ifname, n->second->lldp_switch, n->second->lldp_port});
    }
    if (facts.lldp_read) {
      // Only the inventory's NICs: those it does not list are reported below, once.
      Inventory one;
      one.hosts = {host};
      for (auto& line : CompareWiring(one, {wiring})) drift.push_back(line);
    } else {
      bool wired = false;
      for (const auto& nic : host.nics) wired = wired || !nic.sw.empty();
      if (wired)
        drift.push_back(
            host.name + ": wiring not checked (" +
            (facts.lldp_note.empty() ? std::string("lldpd did not answer") : facts.lldp_note) +
            ")");
    }
    for (const auto* n : SelectNics(facts, nic_globs))
      if (!listed.count(n->ifname))
        drift.push_back(
            host.name + ": new NIC " + n->ifname + " (" +
            (n->ipv4.empty() ? std::string("no address") : n->ipv4.front()) +
            (n->lldp_switch.empty() ? "" : ", cabled to " + n->lldp_switch + " " + n->lldp_port) +
            ") is not in the inventory");
    if (!host.gpus.empty() || !facts.gpus.empty()) {
      std::set<std::string> want, got;
      for (const auto& g : host.gpus) want.insert(g.pci);
      for (const auto& g : facts.gpus) got.insert(g.pci);
      for (const auto& p : want)
        if (!got.count(p)) drift.push_back(host.name + ": GPU " + p + " missing");
      for (const auto& p : got)
        if (!want.count(p)) drift.push_back(host.name + ": new GPU " + p);
    }
  }
  for (const auto& h : live)
    if (!known.count(h.host))
      drift.push_back(h.host + ": new host (its agent dialled in; the inventory does not list it)");
  std::stable_sort(drift.begin(), drift.end());
  return drift;
}

}  // namespace fl::lab
