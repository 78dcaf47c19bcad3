// InventoryLab (the coordinator's side of an inventory: its agents run as a service and dial
// in), InventorySite and InventoryFabricSite (an agent's view of its host, or of the switches):
// the lab and site kinds over a parsed inventory (inventory.cc).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "common/file_util.h"
#include "common/narrate.h"
#include "harness/control/certs.h"
#include "harness/lab/inventory.h"
#include "injectors/injector.h"
#include "injectors/journal.h"
#include "injectors/sys.h"

namespace fl::lab {

using injectors::Port;
using injectors::PortSide;

// ---- InventoryLab ------------------------------------------------------------------------

InventoryLab::InventoryLab(Inventory inventory)
    : inv_(std::move(inventory)), catalog_(HostSideCatalog(inv_)) {}

Status InventoryLab::CheckFault(const std::string& kind,
                                const std::map<std::string, std::string>& params) const {
  Status st = CheckHostSideFault(kind, params);
  if (st.ok() || !inv_.has_switches()) return st;
  return InvalidArgumentError(
      "pfc_storm mode=stall stalls a switch port, and the switch drivers offer no pause stall: "
      "use mode: frames (IEEE 802.1Qbb frames sent from the host's NIC toward its switch)");
}

std::vector<JobHost> InventoryLab::hosts() const {
  std::vector<JobHost> out;
  for (const auto& h : inv_.hosts) {
    JobHost j{h.name, h.ranks, {}};
    for (const auto& n : h.nics) j.nics.push_back(n.address);
    out.push_back(std::move(j));
  }
  return out;
}

Status InventoryLab::Provision(const LabRun& run) {
  // The run's folder in a shared rendezvous directory is made by the coordinator and goes
  // at teardown.
  if (!inv_.rendezvous_dir.empty()) made_dir_ = inv_.rendezvous_dir + "/" + run.run_id;
  std::string switches;
  if (inv_.has_switches())
    switches = ", " + std::to_string(inv_.switches.size()) +
               " switches (their agent 'fabric' dials in" +
               (inv_.fabric_agent_host.empty() ? "" : " from " + inv_.fabric_agent_host) + ")";
  Narrate("[provision] inventory %s from %s: %zu real hosts%s, nothing to build", inv_.name.c_str(),
          inv_.source.c_str(), inv_.hosts.size(), switches.c_str());
  return OkStatus();
}

StatusOr<ControlPlane> InventoryLab::Control(const LabRun& run) {
  ControlPlane c;
  c.listen = inv_.listen;
  c.token_file = inv_.token_file;
  if (!run.no_tls)
    c.tls_dir = run.tls_dir.empty() ? harness::DefaultTlsDir(inv_.token_file) : run.tls_dir;
  return c;
}

std::vector<std::string> InventoryLab::agent_names() const {
  std::vector<std::string> names;
  for (const auto& h : inv_.hosts) names.push_back(h.name);
  if (inv_.has_switches()) names.push_back("fabric");  // the switch-side agent dials in too
  return names;
}

Rendezvous InventoryLab::RendezvousFor(const LabRun& run) const {
  Rendezvous r;
  if (!inv_.rendezvous_dir.empty()) {
    r.kind = Rendezvous::Kind::kDirectory;
    r.dir = inv_.rendezvous_dir + "/" + run.run_id;
    return r;
  }
  r.kind = Rendezvous::Kind::kTcp;
  r.listen = inv_.listen.substr(0, inv_.listen.rfind(':')) + ":0";
  return r;
}

Status InventoryLab::Teardown() {
  if (made_dir_.empty()) return OkStatus();
  std::error_code ec;
  std::filesystem::remove_all(made_dir_, ec);
  if (ec) return UnavailableError("cannot remove " + made_dir_ + ": " + ec.message());
  made_dir_.clear();
  return OkStatus();
}

// ---- InventorySite -----------------------------------------------------------------------

InventorySite::InventorySite(Inventory inventory, std::string self, std::string mgmt_ifname)
    : inv_(std::move(inventory)), mgmt_ifname_(std::move(mgmt_ifname)) {
  self_ = inv_.FindHost(self);
}

StatusOr<injectors::ContainerInfo> InventorySite::StartRank(int local_rank,
                                                            const std::vector<std::string>& argv) {
  return StartContainer(local_rank, argv);
}

std::vector<std::string> InventorySite::KillLeftoverRanks() {
  std::vector<std::string> killed;
  std::error_code ec;
  injectors::LocalContainerRuntime rt;
  for (const auto& e : std::filesystem::directory_iterator(CgroupDir(), ec)) {
    if (!e.is_directory()) continue;
    const std::string name = e.path().filename().string();
    if (name.rfind(self_->name + ".rank", 0) != 0) continue;  // only this host's rank leaves
    Status k = rt.Kill(e.path().string(), Deadline::After(5 * kNsPerSec));
    if (k.ok()) k = rt.Remove(e.path().string());
    killed.push_back(k.ok() ? name : name + " (" + k.ToUserString() + ")");
  }
  RemoveCgroupDir();
  return killed;
}

std::vector<std::string> InventorySite::WorkerDirs() const {
  std::vector<std::string> dirs = {injectors::StateDir()};
  if (!inv_.rendezvous_dir.empty()) dirs.push_back(inv_.rendezvous_dir);
  return dirs;
}

StatusOr<std::vector<Port>> InventorySite::HostLinks(std::string_view target, PortSide side) const {
  if (side == PortSide::kSwitch)
    return FailedPreconditionError("inventory " + inv_.name + ": '" + std::string(target) +
                                   "': this fault needs the switch side of the link, and a lab "
                                   "of real hosts has no switch access");
  std::vector<Port> ports;
  std::string t(target);
  for (size_t i = 0; i < self_->nics.size(); ++i) {
    const InventoryNic& nic = self_->nics[i];
    std::string name = self_->name + "." + nic.name;
    if (t != self_->name && t != name && t != "rail" + std::to_string(i)) continue;
    if (!nic.touch || (!mgmt_ifname_.empty() && nic.ifname == mgmt_ifname_)) {
      if (t == name)
        return FailedPreconditionError(
            "host " + self_->name + ": " + name + " (" + nic.ifname + ") may not be touched (" +
            (nic.touch ? "it carries the management network to the coordinator"
                       : "the inventory says touch: false") +
            ")");
      continue;  // a host or rail target covers the NICs that may be touched
    }
    Port p;
    p.name = name;
    p.ifname = nic.ifname;
    ports.push_back(std::move(p));
  }
  if (ports.empty())
    return NotFoundError("host " + self_->name + ": unknown or untouchable link target '" + t +
                         "' (use " + self_->name + ", " + self_->name + "." +
                         self_->nics.front().name + " or rail0)");
  return ports;
}

StatusOr<std::vector<Port>> InventorySite::Uplinks(std::string_view target) const {
  return FailedPreconditionError("inventory " + inv_.name + ": '" + std::string(target) +
                                 "': no switch access on an inventory lab");
}

StatusOr<std::vector<Port>> InventorySite::UpstreamOf(const Port& port) const {
  return FailedPreconditionError("inventory " + inv_.name + ": '" + port.name +
                                 "': no switch access on an inventory lab");
}

StatusOr<injectors::ContainerRef> InventorySite::Container(std::string_view target) const {
  std::string t(target);
  std::string name = t;
  if (t.rfind("rank", 0) == 0 && t.size() > 4) {
    int local = 0;
    const InventoryHost* h = inv_.HostOfRank(std::atoi(t.c_str() + 4), &local);
    if (h) name = h->name + ".rank" + std::to_string(local);
  }
  for (const auto& c : self_->containers)
    if (name == self_->name + ".rank" + std::to_string(c.rank))
      return injectors::ContainerRef{name, "", c.runtime, c.id, ""};
  std::string path = CgroupDir() + "/" + name;
  struct stat st;
  if (name.rfind(self_->name + ".rank", 0) != 0 || !injectors::IsSafeName(name) ||
      stat(path.c_str(), &st) != 0)
    return NotFoundError("host " + self_->name + ": no running container '" + t +
                         "' (containers are named like " + self_->name + ".rank0 or rank3)");
  return injectors::ContainerRef{name, path};
}

std::string InventorySite::CgroupDir() const {
  auto root = injectors::Cgroup2Root();
  return (root.ok() ? *root : std::string("/sys/fs/cgroup")) + "/faultline/inv-" + inv_.name + "-" +
         self_->name;
}

StatusOr<injectors::ContainerInfo> InventorySite::StartContainer(
    int local_rank, const std::vector<std::string>& argv) {
  if (local_rank < 0 || local_rank >= self_->ranks)
    return InvalidArgumentError(self_->name + " has ranks 0.." + std::to_string(self_->ranks - 1));
  injectors::ContainerSpec spec;
  spec.name = self_->name + ".rank" + std::to_string(local_rank);
  spec.netns = "";
  spec.cgroup_parent = CgroupDir();
  spec.argv = argv;
  injectors::LocalContainerRuntime rt;
  return rt.Start(spec);
}

void InventorySite::RemoveCgroupDir() const {
  rmdir(CgroupDir().c_str());
  auto root = injectors::Cgroup2Root();
  if (root.ok()) rmdir((*root + "/faultline").c_str());  // only when nothing else is there
}

// ---- InventoryFabricSite -----------------------------------------------------------------

InventoryFabricSite::InventoryFabricSite(Inventory inventory) : inv_(std::move(inventory)) {}

StatusOr<injectors::ContainerInfo> InventoryFabricSite::StartRank(
    int /*local_rank*/, const std::vector<std::string>& /*argv*/) {
  return FailedPreconditionError("the fabric agent runs no ranks");
}

Port InventoryFabricSite::SwitchPort(const std::string& sw, const std::string& port) const {
  Port p;
  p.name = SwitchPortTarget(sw, port);
  p.sw = inv_.FindSwitch(sw)->conn;
  p.sw_port = port;
  return p;
}

StatusOr<Port> InventoryFabricSite::NicPort(const InventoryHost& host,
                                            const InventoryNic& nic) const {
  const std::string name = host.name + "." + nic.name;
  if (nic.sw.empty())
    return FailedPreconditionError("inventory " + inv_.name + ": " + name +
                                   " is not wired to a switch (give it switch: and port:)");
  if (!nic.touch)
    return FailedPreconditionError("inventory " + inv_.name + ": " + name + " (" +
                                   SwitchPortTarget(nic.sw, nic.sw_port) +
                                   ") may not be touched (the inventory says touch: false)");
  return SwitchPort(nic.sw, nic.sw_port);
}

StatusOr<std::vector<Port>> InventoryFabricSite::HostLinks(std::string_view target,
                                                           PortSide side) const {
  const std::string t(target);
  if (side == PortSide::kHost)
    return FailedPreconditionError("inventory " + inv_.name + ": '" + t +
                                   "': the fabric agent acts on switch ports only (the host "
                                   "side of a link is its host's agent's)");
  const auto dot = t.find('.');
  const std::string head = t.substr(0, dot);
  std::vector<Port> ports;
  if (inv_.FindSwitch(head) && dot != std::string::npos) {  // "leaf1.Ethernet12"
    const std::string port = t.substr(dot + 1);
    for (const auto& h : inv_.hosts)
      for (const auto& n : h.nics)
        if (n.sw == head && n.sw_port == port) {
          FL_ASSIGN_OR_RETURN(Port p, NicPort(h, n));
          return std::vector<Port>{p};
        }
    return NotFoundError("inventory " + inv_.name + ": no host NIC is wired to " + t);
  }
  if (const InventoryHost* h = inv_.FindHost(head)) {
    if (dot != std::string::npos) {  // "node01.nic0"
      const std::string nic = t.substr(dot + 1);
      for (const auto& n : h->nics)
        if (n.name == nic) {
          FL_ASSIGN_OR_RETURN(Port p, NicPort(*h, n));
          return std::vector<Port>{p};
        }
      return NotFoundError("inventory " + inv_.name + ": host " + h->name + " has no NIC '" + nic +
                           "'");
    }
    for (const auto& n : h->nics)  // "node01": its wired NICs that may be touched
      if (!n.sw.empty() && n.touch) ports.push_back(SwitchPort(n.sw, n.sw_port));
    if (ports.empty())
      return FailedPreconditionError("inventory " + inv_.name + ": host " + h->name +
                                     " has no NIC wired to a switch that may be touched");
    return ports;
  }
  if (IsRailName(t)) {  // "rail1": NIC 1 of every host, one switch port each
    const size_t rail = std::stoul(t.substr(4));
    if (inv_.hosts.empty() || rail >= inv_.hosts.front().nics.size())
      return NotFoundError("inventory " + inv_.name + ": no rail " + t.substr(4));
    for (const auto& h : inv_.hosts) {
      const InventoryNic& n = h.nics[rail];
      if (!n.sw.empty() && n.touch) ports.push_back(SwitchPort(n.sw, n.sw_port));
    }
    if (ports.empty())
      return FailedPreconditionError("inventory " + inv_.name + ": no NIC of " + t +
                                     " is wired to a switch and may be touched");
    return ports;
  }
  std::string example = "rail0";
  for (const auto& h : inv_.hosts)
    for (const auto& n : h.nics)
      if (!n.sw.empty() && n.touch && example == "rail0")
        example = SwitchPortTarget(n.sw, n.sw_port) + ", " + h.name + "." + n.name + ", " + h.name +
                  " or rail0";
  return NotFoundError("inventory " + inv_.name + ": unknown switch-side link target '" + t +
                       "' (use " + example + ")");
}

StatusOr<std::vector<Port>> InventoryFabricSite::Uplinks(std::string_view target) const {
  const std::string t(target);
  std::vector<Port> ports;
  for (const auto& u : inv_.uplinks) {
    for (const auto& [sw, port] : {std::pair{u.sw, u.port}, std::pair{u.peer_sw, u.peer_port}})
      if (t == sw || t == SwitchPortTarget(sw, port)) ports.push_back(SwitchPort(sw, port));
  }
  if (ports.empty()) {
    std::string example;
    if (!inv_.uplinks.empty())
      example = " (e.g. " + SwitchPortTarget(inv_.uplinks[0].sw, inv_.uplinks[0].port) + " or " +
                inv_.uplinks[0].sw + ")";
    return NotFoundError("inventory " + inv_.name + ": no uplink '" + t + "'" + example);
  }
  return ports;
}

StatusOr<std::vector<Port>> InventoryFabricSite::UpstreamOf(const Port& port) const {
  return FailedPreconditionError("inventory " + inv_.name + ": '" + port.name +
                                 "': a pause stall of a real switch port is not offered");
}

StatusOr<injectors::ContainerRef> InventoryFabricSite::Container(std::string_view target) const {
  return NotFoundError("the fabric agent runs no containers ('" + std::string(target) +
                       "' is its host's agent's)");
}

StatusOr<std::unique_ptr<InventoryFabricSite>> OpenInventoryFabricSite(const std::string& path) {
  FL_ASSIGN_OR_RETURN(Inventory inv, LoadInventory(path));
  if (!inv.has_switches())
    return FailedPreconditionError(path +
                                   ": --host fabric needs an inventory that lists switches "
                                   "(this one has none: there is nothing for a fabric agent)");
  return std::make_unique<InventoryFabricSite>(std::move(inv));
}

StatusOr<std::unique_ptr<InventorySite>> OpenInventorySite(const std::string& path,
                                                           const std::string& host,
                                                           const std::string& mgmt_ifname) {
  InventoryOptions options;
  options.open_switch_drivers = false;  // a host's agent never acts on a switch
  FL_ASSIGN_OR_RETURN(Inventory inv, LoadInventory(path, options));
  if (!inv.FindHost(host)) {
    std::string names;
    for (const auto& h : inv.hosts) names += (names.empty() ? "" : ", ") + h.name;
    return NotFoundError(path + ": no host '" + host + "' (hosts: " + names + ")");
  }
  return std::make_unique<InventorySite>(std::move(inv), host, mgmt_ifname);
}

}  // namespace fl::lab
