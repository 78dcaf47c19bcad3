// OpenLab and OpenSite over the table of lab kinds: the only place that tells the kinds of
// lab apart.
#include "harness/lab/open_lab.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdlib>

#include "common/input_file.h"
#include "common/unique_fd.h"
#include "common/yaml_util.h"
#include "harness/lab/inventory.h"
#include "harness/lab/local_lab.h"
#include "harness/lab/slurm_lab.h"
#include "harness/lab/topology.h"

namespace fl::lab {
namespace {

// The interface that carries this host's route to `address` (host:port): a UDP socket
// connected there (no packet is sent) tells the local address the kernel would use.
std::string RouteInterface(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return "";
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1)));
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr) != 1) return "";
  UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0 || connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    return "";
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) return "";
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return "";
  std::string name;
  for (ifaddrs* i = ifs; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
        reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == local.sin_addr.s_addr) {
      name = i->ifa_name;
      break;
    }
  freeifaddrs(ifs);
  return name;
}

bool IsMapWith(const YamlDoc& doc, const char* key) {
  return doc.root().IsMap() && doc.Has(doc.root(), key);
}

// An inventory with `launcher: slurm`, or a stored run's scenario with its inline section.
bool SlurmClaims(const YamlDoc& doc) {
  if (IsMapWith(doc, "lab")) return true;
  if (!IsMapWith(doc, "coordinator") || !doc.Has(doc.root(), "launcher")) return false;
  const YAML::Node l = doc.root()["launcher"];
  return l.IsScalar() && l.Scalar() == "slurm";
}

StatusOr<std::unique_ptr<Lab>> SlurmOpen(const YamlDoc& doc, const std::string&) {
  if (IsMapWith(doc, "coordinator")) {
    FL_ASSIGN_OR_RETURN(Inventory inv, ParseInventory(doc));
    FL_ASSIGN_OR_RETURN(auto lab, SlurmLabOfInventory(inv));
    return std::unique_ptr<Lab>(std::move(lab));
  }
  FL_ASSIGN_OR_RETURN(SlurmLabConfig c, ParseSlurmSection(doc));
  FL_ASSIGN_OR_RETURN(auto lab, SlurmLab::Create(std::move(c)));
  return std::unique_ptr<Lab>(std::move(lab));
}

StatusOr<std::unique_ptr<Lab>> InventoryOpen(const YamlDoc& doc, const std::string&) {
  FL_ASSIGN_OR_RETURN(Inventory inv, ParseInventory(doc));
  return std::unique_ptr<Lab>(std::make_unique<InventoryLab>(std::move(inv)));
}

StatusOr<std::unique_ptr<Lab>> LocalOpen(const YamlDoc& doc, const std::string& lab_name) {
  FL_ASSIGN_OR_RETURN(Topology topo, ParseTopology(doc));
  FL_ASSIGN_OR_RETURN(auto local, LocalLab::Create(topo, lab_name));
  return std::unique_ptr<Lab>(std::move(local));
}

StatusOr<std::unique_ptr<Site>> InventorySiteOpen(const SiteOptions& o, const std::string& host,
                                                  const std::string& mgmt) {
  if (host == "fabric") {  // the switch-side agent of an inventory with switches
    FL_ASSIGN_OR_RETURN(auto fabric, OpenInventoryFabricSite(o.inventory));
    return std::unique_ptr<Site>(std::move(fabric));
  }
  FL_ASSIGN_OR_RETURN(auto site, OpenInventorySite(o.inventory, host, mgmt));
  return std::unique_ptr<Site>(std::move(site));
}

}  // namespace

const std::vector<LabKind>& LabKinds() {
  static const std::vector<LabKind> kinds = {
      {"slurm",
       "agents started as one srun step on an allocation (inventory with launcher: "
       "slurm, or a scenario's lab: {slurm: ...})",
       SlurmClaims, SlurmOpen, [](const SiteOptions& o) { return !o.slurm_nics.empty(); },
       [](const SiteOptions& o, const std::string& host, const std::string& mgmt) {
         return OpenSlurmNodeSite(host, o.slurm_nics, o.slurm_ranks, mgmt);
       },
       nullptr},
      {"inventory", "real hosts whose agents dial in (a file with coordinator:)",
       [](const YamlDoc& doc) { return IsMapWith(doc, "coordinator"); }, InventoryOpen,
       [](const SiteOptions& o) { return !o.inventory.empty(); }, InventorySiteOpen, nullptr},
      {"local", "network namespaces on this machine (a topology)",
       [](const YamlDoc&) { return true; }, LocalOpen,
       [](const SiteOptions& o) { return !o.local_lab.empty(); },
       [](const SiteOptions& o, const std::string& host, const std::string&) {
         return OpenLocalSite(o.local_lab, host);
       },
       RemoveLeftoverLocalLab},
  };
  return kinds;
}

StatusOr<std::unique_ptr<Lab>> OpenLab(const LabSource& source, const std::string& lab_name) {
  std::string text = source.slurm_yaml.empty() ? source.text : source.slurm_yaml;
  if (text.empty()) {
    auto t = ReadInputFile(source.path, InputKind::kLabFile);
    if (!t.ok())
      return InvalidArgumentError((source.where.empty() ? "" : source.where + ": ") +
                                  "cannot read lab file " + source.path + ": " +
                                  t.status().message());
    text = *t;
  }
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, source.path));
  // An inline section is the slurm kind's whatever its keys.
  if (!source.slurm_yaml.empty()) return SlurmOpen(doc, lab_name);
  for (const LabKind& k : LabKinds())
    if (k.claims(doc)) return k.open(doc, lab_name);
  return InvalidArgumentError(source.path + ": no kind of lab claims this file");
}

StatusOr<bool> RemoveLeftoverLab(const std::string& lab_name) {
  bool any = false;
  for (const LabKind& k : LabKinds()) {
    if (!k.remove_leftovers) continue;
    FL_ASSIGN_OR_RETURN(bool removed, k.remove_leftovers(lab_name));
    any = any || removed;
  }
  return any;
}

void AddSiteFlags(CLI::App& app, SiteOptions* o) {
  app.add_option("--lab", o->local_lab, "the local lab whose host (or fabric) this agent acts on");
  app.add_option("--inventory", o->inventory,
                 "or: the inventory file of real hosts (configs/inventories/*.yaml); this agent\n"
                 "acts on --host's NICs in its own network namespace and runs ranks in cgroups;\n"
                 "with --host fabric it is the fabric agent, acting on the inventory's switches\n"
                 "over SSH (their switch_ports must be in its --policy). Until the file\n"
                 "exists (day one, before `faultline inventory discover` wrote it) the agent\n"
                 "only answers a census: it says its host's facts, and runs no rank or fault");
  app.add_option("--slurm-nics", o->slurm_nics,
                 "or: a node of a Slurm lab (started by srun): its data NICs by interface name,\n"
                 "rail order; --host defaults to $SLURMD_NODENAME")
      ->delimiter(',');
  app.add_option("--slurm-ranks", o->slurm_ranks, "with --slurm-nics: ranks on this node");
}

StatusOr<std::unique_ptr<Site>> OpenSite(const SiteOptions& o) {
  const LabKind* kind = nullptr;
  for (const LabKind& k : LabKinds()) {
    if (!k.names_site(o)) continue;
    if (kind)
      return InvalidArgumentError("an agent serves one lab: --lab, --inventory or --slurm-nics");
    kind = &k;
  }
  if (!kind)
    return InvalidArgumentError(
        "the agent needs --lab, --inventory or --slurm-nics to know "
        "where it runs");
  const std::string host = o.DefaultHost();
  if (host.empty()) return InvalidArgumentError("the agent needs --host");
  const std::string mgmt = o.coordinator.empty() ? "" : RouteInterface(o.coordinator);
  return kind->open_site(o, host, mgmt);
}

}  // namespace fl::lab
