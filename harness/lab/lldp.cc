// lldpcli's JSON and the inventory's wiring compared (lldp.h).
#include "harness/lab/lldp.h"

#include <algorithm>
#include <map>

#include "nlohmann/json.hpp"

namespace fl::lab {
namespace {

using nlohmann::json;

// lldpcli's "one is an object, several are a list of objects" shape, as (key, value) pairs.
std::vector<std::pair<std::string, const json*>> Entries(const json& j) {
  std::vector<std::pair<std::string, const json*>> out;
  auto add_object = [&](const json& o) {
    if (!o.is_object()) return;
    for (auto it = o.begin(); it != o.end(); ++it) out.push_back({it.key(), &it.value()});
  };
  if (j.is_array()) {
    for (const auto& e : j) add_object(e);
  } else {
    add_object(j);
  }
  return out;
}

std::string StringAt(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return "";
    p = &(*p)[k];
  }
  return p->is_string() ? p->get<std::string>() : "";
}

}  // namespace

StatusOr<std::vector<LldpNeighbor>> ParseLldpNeighbors(std::string_view text,
                                                       std::string_view source) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("lldp"))
    return InvalidArgumentError(std::string(source) + ": not lldpcli's JSON (no \"lldp\")");
  std::vector<LldpNeighbor> out;
  const json& lldp = doc["lldp"];
  if (!lldp.is_object() || !lldp.contains("interface")) return out;  // no neighbour at all
  for (const auto& [ifname, iface] : Entries(lldp["interface"])) {
    if (!iface->is_object()) continue;
    LldpNeighbor n;
    n.ifname = ifname;
    if (iface->contains("chassis")) {
      for (const auto& [name, chassis] : Entries((*iface)["chassis"])) {
        // An unnamed chassis is keyed "id" in some versions: then its id's value names it.
        n.chassis = name == "id" ? StringAt(*chassis, {"value"}) : name;
        if (n.chassis.empty()) n.chassis = StringAt(*chassis, {"id", "value"});
        break;
      }
    }
    const std::string type = StringAt(*iface, {"port", "id", "type"});
    n.port = (type == "ifname" || type == "local") ? StringAt(*iface, {"port", "id", "value"})
                                                   : StringAt(*iface, {"port", "descr"});
    if (n.port.empty()) n.port = StringAt(*iface, {"port", "id", "value"});
    if (n.ifname.empty() || n.chassis.empty() || n.port.empty())
      return InvalidArgumentError(std::string(source) + ": interface '" + ifname +
                                  "' has no chassis name or port");
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<std::string> CompareWiring(const Inventory& inventory,
                                       const std::vector<HostWiring>& live) {
  std::vector<std::string> drift;
  std::map<std::string, const HostWiring*> by_host;
  for (const auto& h : live) by_host[h.host] = &h;
  for (const auto& host : inventory.hosts) {
    auto it = by_host.find(host.name);
    if (it == by_host.end()) {
      drift.push_back(host.name + ": not seen");
      continue;
    }
    std::map<std::string, const LldpNeighbor*> seen;  // by local ifname
    for (const auto& n : it->second->neighbors) seen[n.ifname] = &n;
    for (const auto& nic : host.nics) {
      const std::string who = host.name + "." + nic.name + " (" + nic.ifname + ")";
      auto s = seen.find(nic.ifname);
      const std::string want = nic.sw.empty() ? "" : nic.sw + " " + nic.sw_port;
      if (s == seen.end()) {
        if (!want.empty()) drift.push_back(who + ": no LLDP neighbour (expected " + want + ")");
        continue;
      }
      const std::string got = s->second->chassis + " " + s->second->port;
      if (want.empty())
        drift.push_back(who + ": cabled to " + got + ", which the inventory does not say");
      else if (got != want)
        drift.push_back(who + ": moved from " + want + " to " + got);
      seen.erase(s);
    }
    for (const auto& [ifname, n] : seen)
      drift.push_back(host.name + ": " + ifname + " is not in the inventory (cabled to " +
                      n->chassis + " " + n->port + ")");
  }
  std::sort(drift.begin(), drift.end());
  return drift;
}

}  // namespace fl::lab
