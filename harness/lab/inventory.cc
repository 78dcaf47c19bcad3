#include "harness/lab/inventory.h"

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "common/file_util.h"
#include "common/yaml_util.h"
#include "harness/control/certs.h"
#include "harness/lab/lab_catalog.h"
#include "harness/lab/slurm_lab.h"
#include "harness/lab/topology.h"
#include "injectors/journal.h"
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
  FL_RETURN_IF_ERROR(doc.CheckKeys(n, {"name", "ifname", "address", "touch"}, "nic"));
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
  return OkStatus();
}

Status ParseHost(const YamlDoc& doc, const YAML::Node& n, InventoryHost* host) {
  FL_RETURN_IF_ERROR(doc.ExpectMap(n, "host"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(n, {"name", "ranks", "nics", "containers"}, "host"));
  FL_ASSIGN_OR_RETURN(host->name, doc.Get<std::string>(n, "name"));
  if (!IsHostName(host->name) || host->name == "fabric" || host->name.rfind("rank", 0) == 0)
    return doc.Error(n["name"], "host name '" + host->name +
                                    "' must be 1-32 chars [a-z0-9_-], not 'fabric' or rank*");
  FL_ASSIGN_OR_RETURN(host->ranks, doc.GetBoundedOr<int>(n, "ranks", 1, 1, kMaxRanksPerHost));
  if (!doc.Has(n, "nics")) return doc.Error(n, "host " + host->name + " needs 'nics'");
  const YAML::Node nics = n["nics"];
  FL_RETURN_IF_ERROR(doc.ExpectSequence(nics, "nics"));
  if (nics.size() > kMaxNicsPerHost)
    return doc.Error(nics, "a host lists at most " + std::to_string(kMaxNicsPerHost) + " NICs");
  std::set<std::string> names;
  for (const auto& x : nics) {
    InventoryNic nic;
    FL_RETURN_IF_ERROR(ParseNic(doc, x, &nic));
    if (!names.insert(nic.name).second)
      return doc.Error(x, "NIC '" + nic.name + "' appears twice on " + host->name);
    host->nics.push_back(nic);
  }
  if (host->nics.empty()) return doc.Error(nics, "host " + host->name + " needs at least one NIC");
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

bool IsHostName(std::string_view s) {
  if (s.empty() || s.size() > 32 || s[0] == '-') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  return true;
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

const InventoryHost* Inventory::FindHost(std::string_view name) const {
  for (const auto& h : hosts)
    if (h.name == name) return &h;
  return nullptr;
}

StatusOr<Inventory> ParseInventory(std::string_view text, const std::string& source) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, source));
  const YAML::Node& root = doc.root();
  FL_RETURN_IF_ERROR(doc.ExpectMap(root, "inventory"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(
      root, {"name", "coordinator", "agent_wait", "rendezvous_dir", "launcher", "hosts"},
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
  if (!doc.Has(root, "hosts")) return doc.Error(root, "inventory needs 'hosts'");
  const YAML::Node hosts = root["hosts"];
  FL_RETURN_IF_ERROR(doc.ExpectSequence(hosts, "hosts"));
  if (hosts.size() > kMaxHosts)
    return doc.Error(hosts, "an inventory lists at most " + std::to_string(kMaxHosts) + " hosts");
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
  inv.text = std::string(text);
  return inv;
}

StatusOr<Inventory> LoadInventory(const std::string& path) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::LoadFile(path));
  return ParseInventory(doc.text(), path);
}

std::vector<std::string> InventoryFaultKinds() { return HostSideFaultKinds(); }

Status CheckHostSideFault(const std::string& kind,
                          const std::map<std::string, std::string>& params) {
  if (kind != "pfc_storm") return OkStatus();
  auto it = params.find("mode");
  if (it == params.end() || it->second != "frames")
    return InvalidArgumentError(
        "pfc_storm mode=stall stalls a switch port, and real hosts give no switch access: use "
        "mode: frames (IEEE 802.1Qbb frames sent from the host's NIC toward its switch)");
  return OkStatus();
}

std::unique_ptr<harness::FaultCatalog> HostSideCatalog(const Inventory& inv) {
  auto c = std::make_unique<harness::StaticFaultCatalog>();
  static const std::set<std::string> kHostClasses = {"nic", "host", "rail", "container", "rank"};
  for (const auto& kind : InventoryFaultKinds()) {
    std::vector<std::string> classes;
    for (const auto& cls : harness::TargetClassesOfKind(kind))
      if (kHostClasses.count(cls)) classes.push_back(cls);
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
  for (auto& [cls, names] : targets) c->AddTargets(cls, std::move(names));
  return c;
}

// ---- InventoryLab ------------------------------------------------------------------------

InventoryLab::InventoryLab(Inventory inventory)
    : inv_(std::move(inventory)), catalog_(HostSideCatalog(inv_)) {}

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
  std::fprintf(stderr, "[provision] inventory %s from %s: %zu real hosts, nothing to build\n",
               inv_.name.c_str(), inv_.source.c_str(), inv_.hosts.size());
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
    ports.push_back(Port{name, "", nic.ifname, "", "", 0, 0});
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

StatusOr<std::unique_ptr<InventorySite>> OpenInventorySite(const std::string& path,
                                                           const std::string& host,
                                                           const std::string& mgmt_ifname) {
  FL_ASSIGN_OR_RETURN(Inventory inv, LoadInventory(path));
  if (!inv.FindHost(host)) {
    std::string names;
    for (const auto& h : inv.hosts) names += (names.empty() ? "" : ", ") + h.name;
    return NotFoundError(path + ": no host '" + host + "' (hosts: " + names + ")");
  }
  return std::make_unique<InventorySite>(std::move(inv), host, mgmt_ifname);
}

}  // namespace fl::lab
