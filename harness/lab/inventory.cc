#include "harness/lab/inventory.h"

#include <arpa/inet.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/name_chars.h"
#include "common/yaml_util.h"
#include "harness/lab/lab_catalog.h"
#include "harness/lab/topology.h"
#include "injectors/injector.h"
#include "injectors/switch/ssh_template/ssh_template_driver.h"
#include "injectors/switch_drivers.h"
#include "injectors/sys.h"

namespace fl::lab {
namespace {

using injectors::Port;
using injectors::PortSide;

// Bounds on an inventory's numbers (docs/lab.md).
constexpr int kMaxRanksPerHost = 64;
constexpr size_t kMaxNicsPerHost = 16;
constexpr size_t kMaxHosts = 4096;
constexpr Nanos kMaxAgentWait = 3600 * kNsPerSec;

Status ParseNic(const YamlDoc& doc, const YAML::Node& n, InventoryNic* nic) {
  FL_RETURN_IF_ERROR(doc.ExpectMap(n, "nic"));
  FL_RETURN_IF_ERROR(
      doc.CheckKeys(n, {"name", "ifname", "address", "touch", "switch", "port", "expect"}, "nic"));
  FL_ASSIGN_OR_RETURN(nic->name, doc.Get<std::string>(n, "name"));
  if (!IsHostName(nic->name) || nic->name.find("rank") == 0)
    return doc.Error(n["name"], "NIC name '" + nic->name +
                                    "' must be [a-z0-9_-] and not start with 'rank' (e.g. nic0)");
  FL_ASSIGN_OR_RETURN(nic->ifname, doc.Get<std::string>(n, "ifname"));
  if (!injectors::IsSafeName(nic->ifname, 15))
    return doc.Error(n["ifname"], "'" + nic->ifname + "' is not an interface name");
  FL_ASSIGN_OR_RETURN(nic->address, doc.Get<std::string>(n, "address"));
  in_addr a;
  if (inet_pton(AF_INET, nic->address.c_str(), &a) != 1)
    return doc.Error(n["address"], "'" + nic->address + "' is not an IPv4 address");
  FL_ASSIGN_OR_RETURN(nic->touch, doc.GetOr<bool>(n, "touch", true));
  if (doc.Has(n, "switch") != doc.Has(n, "port"))
    return doc.Error(n, "NIC " + nic->name +
                            ": 'switch' and 'port' go together (the switch port its link goes to)");
  // Checked against the listed switches and their drivers by the caller.
  FL_ASSIGN_OR_RETURN(nic->sw, doc.GetOr<std::string>(n, "switch", ""));
  FL_ASSIGN_OR_RETURN(nic->sw_port, doc.GetOr<std::string>(n, "port", ""));
  if (doc.Has(n, "expect")) {
    const YAML::Node e = n["expect"];
    FL_RETURN_IF_ERROR(doc.ExpectMap(e, "expect"));
    FL_RETURN_IF_ERROR(doc.CheckKeys(
        e, {"driver", "firmware", "pci", "numa", "speed_mbps", "mac", "rdma"}, "expect"));
    NicFacts& f = nic->expect;
    FL_ASSIGN_OR_RETURN(f.driver, doc.GetOr<std::string>(e, "driver", ""));
    FL_ASSIGN_OR_RETURN(f.firmware, doc.GetOr<std::string>(e, "firmware", ""));
    FL_ASSIGN_OR_RETURN(f.pci, doc.GetOr<std::string>(e, "pci", ""));
    FL_ASSIGN_OR_RETURN(f.mac, doc.GetOr<std::string>(e, "mac", ""));
    FL_ASSIGN_OR_RETURN(f.rdma, doc.GetOr<std::string>(e, "rdma", ""));
    FL_ASSIGN_OR_RETURN(f.numa, doc.GetBoundedOr<int>(e, "numa", -1, -1, 1023));
    FL_ASSIGN_OR_RETURN(f.speed_mbps, doc.GetOr<uint64_t>(e, "speed_mbps", 0));
  }
  return OkStatus();
}

// ---- switches and wiring -----------------------------------------------------------------

constexpr size_t kMaxSwitches = 1024;
constexpr size_t kMaxUplinks = 65536;
constexpr size_t kMaxSwitchPortBytes = 64;
constexpr Nanos kMaxConnectTimeout = 120 * kNsPerSec;

// A management address: an IPv4/IPv6 address or a DNS name (letters, digits, '.', '-', ':'),
// not starting with '-' (it becomes an ssh argument).
bool IsAddress(std::string_view s) { return IsNameOf(s, 253, ".-:") && s[0] != '.' && s[0] != '-'; }

// A login name for ssh: [A-Za-z0-9._-], not starting with '-'.
bool IsUserName(std::string_view s) { return IsNameOf(s, 32, "._-") && s[0] != '-'; }

// "user@host" or "user@host:port".
bool IsJump(std::string_view s) {
  auto at = s.find('@');
  if (at == std::string_view::npos || !IsUserName(s.substr(0, at))) return false;
  std::string_view rest = s.substr(at + 1);
  auto colon = rest.rfind(':');
  if (colon != std::string_view::npos && rest.find(':') == colon) {  // one ':': a port
    std::string_view port = rest.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != port.npos ||
        std::stoi(std::string(port)) < 1 || std::stoi(std::string(port)) > 65535)
      return false;
    rest = rest.substr(0, colon);
  }
  return IsAddress(rest);
}

// "TYPE BASE64 [COMMENT]" on one line: an OpenSSH public key.
bool IsHostKey(std::string_view s) {
  if (s.size() > 16384) return false;
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  auto sp = s.find(' ');
  if (sp == std::string_view::npos || sp == 0) return false;
  if (!AllNameChars(s.substr(0, sp), "-.@")) return false;
  std::string_view rest = s.substr(sp + 1);
  std::string_view key = rest.substr(0, rest.find(' '));
  return key.size() >= 16 && AllNameChars(key, "+/=");
}

// A switch port name as the inventory may write it before the driver's own pattern:
// [A-Za-z0-9_/:.-], starting with a letter or digit ("Ethernet12", "Ethernet1/1", "swp3").
bool IsSwitchPortName(std::string_view s) {
  return IsNameOf(s, kMaxSwitchPortBytes, "_/:.-") && IsNameChar(s[0], "");
}

bool IsAbsolute(const std::string& p) { return !p.empty() && p[0] == '/'; }

// What ParseSwitch leaves for the wiring checks: the driver (port patterns) and where the
// switch was named.
struct ParsedSwitch {
  InventorySwitch sw;
  std::unique_ptr<injectors::SwitchDriver> driver;
  YAML::Node node;
};

Status ParseSwitch(const YamlDoc& doc, const YAML::Node& n, const std::string& source,
                   bool open_drivers, ParsedSwitch* out) {
  FL_RETURN_IF_ERROR(doc.ExpectMap(n, "switch"));
  FL_RETURN_IF_ERROR(
      doc.CheckKeys(n,
                    {"name", "address", "port", "driver", "preset", "user", "key_file",
                     "known_hosts", "host_key", "jump", "connect_timeout"},
                    "switch"));
  injectors::SwitchConn c;
  FL_ASSIGN_OR_RETURN(c.name, doc.Get<std::string>(n, "name"));
  if (!IsHostName(c.name) || c.name == "fabric" || c.name.rfind("rank", 0) == 0 ||
      IsRailName(c.name))
    return doc.Error(n["name"], "switch name '" + c.name +
                                    "' must be 1-32 chars [a-z0-9_-], not 'fabric', rank* or "
                                    "rail<N>");
  FL_ASSIGN_OR_RETURN(c.address, doc.Get<std::string>(n, "address"));
  if (!IsAddress(c.address))
    return doc.Error(n["address"],
                     "switch " + c.name + ": '" + c.address + "' is not an IP address or DNS name");
  FL_ASSIGN_OR_RETURN(c.port, doc.GetBoundedOr<int>(n, "port", 22, 1, 65535));
  FL_ASSIGN_OR_RETURN(c.driver, doc.GetOr<std::string>(n, "driver", "ssh-template"));
  if (open_drivers) {
    const auto names = injectors::SwitchDriverNames();
    if (std::find(names.begin(), names.end(), c.driver) == names.end()) {
      std::string known;
      for (const auto& d : names) known += (known.empty() ? "" : ", ") + d;
      return doc.Error(doc.Has(n, "driver") ? n["driver"] : n,
                       "switch " + c.name + ": unknown switch driver '" + c.driver +
                           "' (known: " + (known.empty() ? "none registered" : known) + ")");
    }
  }
  FL_ASSIGN_OR_RETURN(c.user, doc.GetOr<std::string>(n, "user", ""));
  if (!c.user.empty() && !IsUserName(c.user))
    return doc.Error(n["user"], "switch " + c.name + ": '" + c.user + "' is not a user name");
  FL_ASSIGN_OR_RETURN(c.key_file, doc.GetOr<std::string>(n, "key_file", ""));
  if (doc.Has(n, "key_file") && !IsAbsolute(c.key_file))
    return doc.Error(n["key_file"], "switch " + c.name + ": key_file must be an absolute path");
  FL_ASSIGN_OR_RETURN(c.known_hosts, doc.GetOr<std::string>(n, "known_hosts", ""));
  if (doc.Has(n, "known_hosts") && !IsAbsolute(c.known_hosts))
    return doc.Error(n["known_hosts"],
                     "switch " + c.name + ": known_hosts must be an absolute path");
  FL_ASSIGN_OR_RETURN(c.host_key, doc.GetOr<std::string>(n, "host_key", ""));
  if (doc.Has(n, "host_key") && !IsHostKey(c.host_key))
    return doc.Error(n["host_key"], "switch " + c.name +
                                        ": host_key must be one OpenSSH public key line "
                                        "(\"ssh-ed25519 AAAA...\")");
  if (doc.Has(n, "known_hosts") == doc.Has(n, "host_key"))
    return doc.Error(n, "switch " + c.name +
                            " needs exactly one of known_hosts (a file) and host_key (the "
                            "pinned key): its host key is always checked");
  FL_ASSIGN_OR_RETURN(c.jump, doc.GetOr<std::string>(n, "jump", ""));
  if (doc.Has(n, "jump") && !IsJump(c.jump))
    return doc.Error(
        n["jump"],
        "switch " + c.name + ": jump wants user@host or user@host:port, got '" + c.jump + "'");
  FL_ASSIGN_OR_RETURN(c.connect_timeout, doc.GetDurationIn(n, "connect_timeout", c.connect_timeout,
                                                           kNsPerSec, kMaxConnectTimeout));
  std::string preset;
  FL_ASSIGN_OR_RETURN(preset, doc.GetOr<std::string>(n, "preset", ""));
  if (!doc.Has(n, "preset") && injectors::SwitchDriverNeedsPreset(c.driver))
    return doc.Error(n, "switch " + c.name + ": the " + c.driver +
                            " driver needs 'preset' (sonic, eos, nvue or a file beside this one)");
  if (doc.Has(n, "preset") && !open_drivers) {
    c.preset = preset;  // a host's agent never acts on a switch: its preset is not read
  } else if (doc.Has(n, "preset")) {
    const std::string dir = std::filesystem::path(source).parent_path().string();
    auto path = injectors::ResolveSwitchPreset(preset, dir);
    if (!path.ok())
      return doc.Error(n["preset"], "switch " + c.name + ": " + path.status().message());
    auto text = ReadInputFile(*path, InputKind::kSwitchPreset);
    if (!text.ok())
      return doc.Error(n["preset"], "switch " + c.name + ": cannot read preset " + *path + ": " +
                                        text.status().message());
    c.preset = *path;
    c.preset_text = *text;
  }
  if (open_drivers) {
    auto driver = injectors::OpenSwitchDriver(c);
    if (!driver.ok())
      return doc.Error(doc.Has(n, "preset") ? n["preset"] : n,
                       "switch " + c.name + ": " + driver.status().message());
    out->driver = std::move(*driver);
  }
  out->sw.name = c.name;
  out->sw.conn = std::make_shared<const injectors::SwitchConn>(std::move(c));
  out->node = n;
  return OkStatus();
}

// The switches (before the hosts, whatever the file's order), the NICs' wiring, the uplinks.
class Wiring {
 public:
  Wiring(const YamlDoc& doc, bool open_drivers) : doc_(doc), open_drivers_(open_drivers) {}

  Status ParseSwitches(const YAML::Node& root, Inventory* inv) {
    FL_ASSIGN_OR_RETURN(const YAML::Node list,
                        doc_.GetListOr(root, "switches", 1, kMaxSwitches, "switches"));
    for (const auto& n : list) {
      ParsedSwitch p;
      FL_RETURN_IF_ERROR(ParseSwitch(doc_, n, inv->source, open_drivers_, &p));
      if (switches_.count(p.sw.name))
        return doc_.Error(n["name"], "switch '" + p.sw.name + "' appears twice");
      inv->switches.push_back(p.sw);
      switches_.emplace(p.sw.name, std::move(p));
    }
    return OkStatus();
  }

  // Checks that `sw` is a listed switch (at sw_node), that port is one of its port names and
  // not wired already (at port_node); `what` names the user ("node01.nic0").
  Status Use(const std::string& sw, const YAML::Node& sw_node, const std::string& port,
             const YAML::Node& port_node, const std::string& what) {
    auto it = switches_.find(sw);
    // Without a switches section, a NIC's wiring says only where it is cabled (what
    // `inventory discover` writes from LLDP, and --check compares): no switch is driven.
    const bool unmanaged = switches_.empty() && what.find("uplink") != 0;
    if (it == switches_.end() && !unmanaged) {
      std::string known;
      for (const auto& [name, p] : switches_) known += (known.empty() ? "" : ", ") + name;
      return doc_.Error(sw_node, what + ": no switch '" + sw + "' in switches (" +
                                     (known.empty() ? "the inventory lists none" : known) + ")");
    }
    if (!IsSwitchPortName(port))
      return doc_.Error(port_node, what + ": '" + port +
                                       "' is not a switch port name ([A-Za-z0-9_/:.-], at most " +
                                       std::to_string(kMaxSwitchPortBytes) + ")");
    if (Status st =
            !unmanaged && it->second.driver ? it->second.driver->CheckPortName(port) : OkStatus();
        !st.ok())
      return doc_.Error(port_node,
                        what + ": port '" + port + "' of switch " + sw + ": " + st.message());
    const std::string key = SwitchPortTarget(sw, port);
    auto [at, fresh] = used_.emplace(key, what);
    if (!fresh)
      return doc_.Error(port_node,
                        what + ": " + key + " is wired twice (also to " + at->second + ")");
    return OkStatus();
  }

  Status CheckNics(const YAML::Node& hosts, const Inventory& inv) {
    for (size_t h = 0; h < inv.hosts.size(); ++h) {
      const YAML::Node nics = hosts[h]["nics"];
      for (size_t i = 0; i < inv.hosts[h].nics.size(); ++i) {
        const InventoryNic& nic = inv.hosts[h].nics[i];
        if (nic.sw.empty() && nic.sw_port.empty()) continue;
        const YAML::Node n = nics[i];
        FL_RETURN_IF_ERROR(
            Use(nic.sw, n["switch"], nic.sw_port, n["port"], inv.hosts[h].name + "." + nic.name));
      }
    }
    return OkStatus();
  }

  Status ParseUplinks(const YAML::Node& root, Inventory* inv) {
    FL_ASSIGN_OR_RETURN(const YAML::Node list,
                        doc_.GetListOr(root, "uplinks", 0, kMaxUplinks, "uplinks"));
    for (const auto& n : list) {
      FL_RETURN_IF_ERROR(doc_.ExpectMap(n, "uplink"));
      FL_RETURN_IF_ERROR(
          doc_.CheckKeys(n, {"switch", "port", "peer_switch", "peer_port"}, "uplink"));
      InventoryUplink u;
      FL_ASSIGN_OR_RETURN(u.sw, doc_.Get<std::string>(n, "switch"));
      FL_ASSIGN_OR_RETURN(u.port, doc_.Get<std::string>(n, "port"));
      FL_ASSIGN_OR_RETURN(u.peer_sw, doc_.Get<std::string>(n, "peer_switch"));
      FL_ASSIGN_OR_RETURN(u.peer_port, doc_.Get<std::string>(n, "peer_port"));
      if (u.sw == u.peer_sw)
        return doc_.Error(n["peer_switch"], "uplink " + SwitchPortTarget(u.sw, u.port) +
                                                " goes back to its own switch");
      const std::string what = "uplink " + SwitchPortTarget(u.sw, u.port) + " - " +
                               SwitchPortTarget(u.peer_sw, u.peer_port);
      FL_RETURN_IF_ERROR(Use(u.sw, n["switch"], u.port, n["port"], what));
      FL_RETURN_IF_ERROR(Use(u.peer_sw, n["peer_switch"], u.peer_port, n["peer_port"], what));
      inv->uplinks.push_back(std::move(u));
    }
    return OkStatus();
  }

  // A switch and a host may not share a name (targets and agents are named by them).
  Status CheckNames(const Inventory& inv) const {
    for (const auto& [name, p] : switches_)
      if (inv.FindHost(name))
        return doc_.Error(p.node["name"], "switch '" + name + "' has the name of a host");
    return OkStatus();
  }

 private:
  const YamlDoc& doc_;
  const bool open_drivers_;
  std::map<std::string, ParsedSwitch> switches_;
  std::map<std::string, std::string> used_;  // "<switch>.<port>" -> what is wired to it
};

Status ParseHost(const YamlDoc& doc, const YAML::Node& n, InventoryHost* host) {
  FL_RETURN_IF_ERROR(doc.ExpectMap(n, "host"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(n, {"name", "ranks", "nics", "containers", "gpus"}, "host"));
  FL_ASSIGN_OR_RETURN(host->name, doc.Get<std::string>(n, "name"));
  if (!IsHostName(host->name) || host->name == "fabric" || host->name.rfind("rank", 0) == 0)
    return doc.Error(n["name"], "host name '" + host->name +
                                    "' must be 1-32 chars [a-z0-9_-], not 'fabric' or rank*");
  FL_ASSIGN_OR_RETURN(host->ranks, doc.GetBoundedOr<int>(n, "ranks", 1, 1, kMaxRanksPerHost));
  FL_ASSIGN_OR_RETURN(const YAML::Node nics, doc.GetList(n, "nics", 1, kMaxNicsPerHost, "NICs"));
  std::set<std::string> names;
  for (const auto& x : nics) {
    InventoryNic nic;
    FL_RETURN_IF_ERROR(ParseNic(doc, x, &nic));
    if (!names.insert(nic.name).second)
      return doc.Error(x, "NIC '" + nic.name + "' appears twice on " + host->name);
    host->nics.push_back(nic);
  }
  if (doc.Has(n, "gpus")) {
    const YAML::Node gs = n["gpus"];
    FL_RETURN_IF_ERROR(doc.ExpectSequence(gs, "gpus"));
    for (const auto& g : gs) {
      FL_RETURN_IF_ERROR(doc.ExpectMap(g, "gpu"));
      FL_RETURN_IF_ERROR(doc.CheckKeys(g, {"pci", "numa", "model"}, "gpu"));
      InventoryGpu gpu;
      FL_ASSIGN_OR_RETURN(gpu.pci, doc.Get<std::string>(g, "pci"));
      FL_ASSIGN_OR_RETURN(gpu.numa, doc.GetBoundedOr<int>(g, "numa", -1, -1, 1023));
      FL_ASSIGN_OR_RETURN(gpu.model, doc.GetOr<std::string>(g, "model", ""));
      host->gpus.push_back(gpu);
    }
  }
  if (doc.Has(n, "containers")) {
    const YAML::Node cs = n["containers"];
    FL_RETURN_IF_ERROR(doc.ExpectSequence(cs, "containers"));
    std::set<int> ranks;
    for (const auto& c : cs) {
      FL_RETURN_IF_ERROR(doc.ExpectMap(c, "container"));
      FL_RETURN_IF_ERROR(doc.CheckKeys(c, {"rank", "runtime", "id"}, "container"));
      InventoryContainer ic;
      FL_ASSIGN_OR_RETURN(ic.rank, doc.GetBoundedOr<int>(c, "rank", 0, 0, host->ranks - 1));
      FL_ASSIGN_OR_RETURN(ic.runtime, doc.Get<std::string>(c, "runtime"));
      if (ic.runtime != "docker" && ic.runtime != "podman")
        return doc.Error(c["runtime"],
                         "runtime must be docker or podman, not '" + ic.runtime + "'");
      FL_ASSIGN_OR_RETURN(ic.id, doc.Get<std::string>(c, "id"));
      if (!injectors::IsSafeName(ic.id, 128))
        return doc.Error(c["id"], "'" + ic.id + "' is not a container name or ID");
      if (!ranks.insert(ic.rank).second)
        return doc.Error(
            c, "rank " + std::to_string(ic.rank) + " of " + host->name + " has two containers");
      host->containers.push_back(ic);
    }
  }
  return OkStatus();
}

}  // namespace

bool IsRailName(std::string_view s) {
  return s.size() > 4 && s.substr(0, 4) == "rail" &&
         s.substr(4).find_first_not_of("0123456789") == std::string_view::npos;
}

bool IsHostName(std::string_view s) {
  return IsNameOf(s, 32, "-_", Letters::kLower) && s[0] != '-';
}

int Inventory::world_size() const {
  int n = 0;
  for (const auto& h : hosts) n += h.ranks;
  return n;
}

const InventoryHost* Inventory::HostOfRank(int rank, int* local) const {
  for (const auto& h : hosts) {
    if (rank >= 0 && rank < h.ranks) {
      if (local) *local = rank;
      return &h;
    }
    rank -= h.ranks;
  }
  return nullptr;
}

const InventorySwitch* Inventory::FindSwitch(std::string_view name) const {
  for (const auto& s : switches)
    if (s.name == name) return &s;
  return nullptr;
}

std::string SwitchPortTarget(const std::string& sw, const std::string& port) {
  return sw + "." + port;
}

const InventoryHost* Inventory::FindHost(std::string_view name) const {
  for (const auto& h : hosts)
    if (h.name == name) return &h;
  return nullptr;
}

StatusOr<Inventory> ParseInventory(std::string_view text, const std::string& source,
                                   const InventoryOptions& options) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, source));
  return ParseInventory(doc, options);
}

StatusOr<Inventory> ParseInventory(const YamlDoc& doc, const InventoryOptions& options) {
  const std::string& source = doc.name();
  const std::string_view text = doc.text();
  const YAML::Node& root = doc.root();
  FL_RETURN_IF_ERROR(doc.ExpectMap(root, "inventory"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(root,
                                   {"name", "coordinator", "agent_wait", "rendezvous_dir",
                                    "launcher", "hosts", "switches", "uplinks", "fabric_agent"},
                                   "inventory"));
  Inventory inv;
  inv.source = source;
  FL_ASSIGN_OR_RETURN(inv.name, doc.Get<std::string>(root, "name"));
  if (!IsValidLabName(inv.name))
    return doc.Error(root["name"], "inventory name must be 1-10 characters [a-z0-9]");
  if (!doc.Has(root, "coordinator")) return doc.Error(root, "inventory needs 'coordinator'");
  const YAML::Node c = root["coordinator"];
  FL_RETURN_IF_ERROR(doc.ExpectMap(c, "coordinator"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(c, {"listen", "token_file"}, "coordinator"));
  FL_ASSIGN_OR_RETURN(inv.listen, doc.Get<std::string>(c, "listen"));
  auto colon = inv.listen.rfind(':');
  int port = 0;  // digits only: "7070x" or an overflowing number is no port
  if (colon != std::string::npos) {
    std::string digits = inv.listen.substr(colon + 1);
    bool ok = !digits.empty() && digits.size() <= 5 &&
              digits.find_first_not_of("0123456789") == std::string::npos;
    port = ok ? std::stoi(digits) : 0;
  }
  in_addr a;
  if (colon == std::string::npos || port <= 0 || port > 65535 ||
      inet_pton(AF_INET, inv.listen.substr(0, colon).c_str(), &a) != 1)
    return doc.Error(
        c["listen"],
        "listen wants IPv4:PORT with a fixed port (agents dial it), got '" + inv.listen + "'");
  FL_ASSIGN_OR_RETURN(std::string token, doc.Get<std::string>(c, "token_file"));
  inv.token_file = PathBeside(token, source);
  FL_ASSIGN_OR_RETURN(inv.agent_wait_ns, doc.GetDurationIn(root, "agent_wait", inv.agent_wait_ns,
                                                           kNsPerSec, kMaxAgentWait));
  FL_ASSIGN_OR_RETURN(inv.rendezvous_dir, doc.GetOr<std::string>(root, "rendezvous_dir", ""));
  if (!inv.rendezvous_dir.empty() && inv.rendezvous_dir[0] != '/')
    return doc.Error(root["rendezvous_dir"], "rendezvous_dir must be an absolute path");
  FL_ASSIGN_OR_RETURN(inv.launcher, doc.GetOr<std::string>(root, "launcher", "systemd"));
  if (inv.launcher != "systemd" && inv.launcher != "slurm")
    return doc.Error(root["launcher"],
                     "launcher must be systemd (agents started on the hosts, they dial in) or "
                     "slurm (the coordinator starts them with srun), not '" +
                         inv.launcher + "'");
  Wiring wiring(doc, options.open_switch_drivers);
  FL_RETURN_IF_ERROR(wiring.ParseSwitches(root, &inv));
  if (inv.has_switches() && inv.launcher == "slurm")
    return doc.Error(root["switches"],
                     "switches need launcher: systemd (the fabric agent runs as a service; srun "
                     "starts only the hosts' agents)");
  if (!inv.has_switches() && doc.Has(root, "uplinks"))
    return doc.Error(root["uplinks"], "uplinks need switches");
  if (doc.Has(root, "fabric_agent")) {
    const YAML::Node fa = root["fabric_agent"];
    FL_RETURN_IF_ERROR(doc.ExpectMap(fa, "fabric_agent"));
    FL_RETURN_IF_ERROR(doc.CheckKeys(fa, {"host"}, "fabric_agent"));
    if (!inv.has_switches()) return doc.Error(fa, "fabric_agent needs switches (it drives them)");
    FL_ASSIGN_OR_RETURN(inv.fabric_agent_host, doc.Get<std::string>(fa, "host"));
    if (!IsAddress(inv.fabric_agent_host))
      return doc.Error(fa["host"], "fabric_agent host '" + inv.fabric_agent_host +
                                       "' is not a host name or address");
  }
  FL_ASSIGN_OR_RETURN(const YAML::Node hosts, doc.GetList(root, "hosts", 0, kMaxHosts, "hosts"));
  for (const auto& h : hosts) {
    InventoryHost host;
    FL_RETURN_IF_ERROR(ParseHost(doc, h, &host));
    if (inv.FindHost(host.name)) return doc.Error(h, "host '" + host.name + "' appears twice");
    if (!inv.hosts.empty() && (host.nics.size() != inv.hosts.front().nics.size() ||
                               host.ranks != inv.hosts.front().ranks))
      return doc.Error(h, "every host needs the same number of ranks and NICs (rails line up): " +
                              host.name + " differs from " + inv.hosts.front().name);
    inv.hosts.push_back(std::move(host));
  }
  if (inv.hosts.empty()) return doc.Error(hosts, "inventory needs at least one host");
  FL_RETURN_IF_ERROR(wiring.CheckNames(inv));
  FL_RETURN_IF_ERROR(wiring.CheckNics(hosts, inv));
  FL_RETURN_IF_ERROR(wiring.ParseUplinks(root, &inv));
  inv.text = std::string(text);
  return inv;
}

StatusOr<Inventory> LoadInventory(const std::string& path, const InventoryOptions& options) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::LoadFile(path, InputKind::kInventory));
  return ParseInventory(doc, options);
}

std::vector<std::string> InventoryFaultKinds() { return HostSideFaultKinds(); }

std::vector<std::string> InventoryFaultKinds(const Inventory& inv) {
  std::vector<std::string> kinds = HostSideFaultKinds();
  if (inv.has_switches()) {
    for (auto& k : injectors::BuiltinInjectors().NamesWhere(
             [](const injectors::InjectorInfo& i) { return !i.host_side(); }))
      kinds.push_back(std::move(k));
  }
  return kinds;
}

std::string InventoryAgentFor(const Inventory& inv, const std::string& kind,
                              const std::string& target) {
  if (inv.has_switches()) {
    const injectors::InjectorInfo* info = injectors::BuiltinInjectors().Describe(kind);
    if (info && !info->host_side()) return "fabric";
    const std::string head = target.substr(0, target.find('.'));
    if (inv.FindSwitch(head)) return "fabric";  // "leaf1" or "leaf1.Ethernet12"
  }
  std::vector<JobHost> hosts;
  for (const auto& h : inv.hosts) hosts.push_back(JobHost{h.name, h.ranks, {}});
  return DefaultAgentFor(target, hosts);
}

Status CheckHostSideFault(const std::string& kind,
                          const std::map<std::string, std::string>& params) {
  const injectors::InjectorInfo* info = injectors::BuiltinInjectors().Describe(kind);
  if (info == nullptr || !info->check_host_only) return OkStatus();
  return info->check_host_only(params);
}

std::unique_ptr<harness::FaultCatalog> HostSideCatalog(const Inventory& inv) {
  auto c = std::make_unique<harness::StaticFaultCatalog>();
  // Host-side classes; with switches the switch-side tor_port too (either-side kinds on the
  // ToR end, switch-side kinds), and uplinks only for switch-side kinds (a gray fault on an
  // uplink needs a switch's kernel end, which real switches do not give).
  std::set<std::string> classes_here = {"nic", "host", "rail", "container", "rank"};
  if (inv.has_switches()) classes_here.insert("tor_port");
  for (const auto& kind : InventoryFaultKinds(inv)) {
    const injectors::InjectorInfo* info = injectors::BuiltinInjectors().Describe(kind);
    std::vector<std::string> classes;
    for (const auto& cls : info->target_classes)
      if (!info->host_side() || classes_here.count(cls)) classes.push_back(cls);
    c->AddKind(kind, std::move(classes));
  }
  std::map<std::string, std::vector<std::string>> targets;
  std::set<size_t> rails;
  int rank = 0;
  for (const auto& h : inv.hosts) {
    bool any = false;
    for (size_t i = 0; i < h.nics.size(); ++i) {
      if (!h.nics[i].touch) continue;
      targets["nic"].push_back(h.name + "." + h.nics[i].name);
      if (!h.nics[i].sw.empty() && inv.has_switches())
        targets["tor_port"].push_back(SwitchPortTarget(h.nics[i].sw, h.nics[i].sw_port));
      rails.insert(i);
      any = true;
    }
    if (any) targets["host"].push_back(h.name);
    for (int g = 0; g < h.ranks; ++g) {
      targets["container"].push_back(h.name + ".rank" + std::to_string(g));
      targets["rank"].push_back("rank" + std::to_string(rank++));
    }
  }
  for (size_t r : rails) targets["rail"].push_back("rail" + std::to_string(r));
  std::set<std::string> with_uplinks;
  for (const auto& u : inv.uplinks) {
    targets["uplink"].push_back(SwitchPortTarget(u.sw, u.port));
    targets["uplink"].push_back(SwitchPortTarget(u.peer_sw, u.peer_port));
    with_uplinks.insert(u.sw);
    with_uplinks.insert(u.peer_sw);
  }
  for (const auto& sw : inv.switches)  // file order
    if (with_uplinks.count(sw.name)) targets["uplink"].push_back(sw.name);
  for (auto& [cls, names] : targets) c->AddTargets(cls, std::move(names));
  return c;
}

}  // namespace fl::lab
