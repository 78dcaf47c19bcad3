// OpenLab and OpenSite: the only place that tells the kinds of lab apart.
#include "harness/lab/lab.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdlib>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/unique_fd.h"
#include "common/yaml_util.h"
#include "harness/control/certs.h"
#include "harness/lab/inventory.h"
#include "harness/lab/local_lab.h"
#include "harness/lab/slurm_lab.h"
#include "harness/lab/topology.h"
#include "injectors/journal.h"
#include "injectors/sys.h"

namespace fl::lab {
namespace {

// The agent side of a LocalLab host (or of its switch-side "fabric" agent).
class LocalSite : public Site {
 public:
  LocalSite(std::unique_ptr<LocalLab> lab, std::string host)
      : lab_(std::move(lab)), host_(std::move(host)) {}
  const std::string& host() const override { return host_; }
  const injectors::Fabric& fabric() const override { return *lab_; }
  int ranks() const override { return host_ == "fabric" ? 0 : lab_->topology().gpus_per_host; }
  StatusOr<injectors::ContainerInfo> StartRank(int local_rank,
                                               const std::vector<std::string>& argv) override {
    if (host_ == "fabric") return FailedPreconditionError("the fabric agent runs no ranks");
    return lab_->StartContainer(host_, local_rank, argv);
  }
  std::vector<std::string> WorkerDirs() const override { return {injectors::StateDir()}; }
  void Close() override {}  // the lab's cgroup folder goes with the lab
  bool disposable() const override { return true; }

 private:
  std::unique_ptr<LocalLab> lab_;
  std::string host_;
};

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

// An inventory whose agents srun starts: a SlurmLab on its hosts (the nodes), their NICs by
// the inventory's addresses.
StatusOr<std::unique_ptr<Lab>> SlurmLabOfInventory(const Inventory& inv) {
  SlurmLabConfig c;
  c.source = inv.source;
  c.text = inv.text;
  c.name = inv.name;
  c.node_count = static_cast<int>(inv.hosts.size());
  c.ranks_per_node = inv.hosts.front().ranks;
  for (const auto& n : inv.hosts.front().nics) c.nics.push_back({n.name, n.ifname});
  for (const auto& h : inv.hosts) {
    c.nodes.push_back(h.name);
    for (size_t i = 0; i < h.nics.size(); ++i) {
      if (h.nics[i].ifname != c.nics[i].ifname)
        return InvalidArgumentError(
            inv.source +
            ": launcher: slurm starts every agent with one command line, so every "
            "host needs the same interface names; " +
            h.name + "." + h.nics[i].name + " is " + h.nics[i].ifname + ", not " +
            c.nics[i].ifname);
      c.nic_addresses[h.name].push_back(h.nics[i].address);
    }
  }
  c.listen = inv.listen;
  c.token_file = inv.token_file;
  c.tls_dir = harness::DefaultTlsDir(inv.token_file);
  c.agent_wait_ns = inv.agent_wait_ns;
  FL_ASSIGN_OR_RETURN(auto lab, SlurmLab::Create(std::move(c)));
  return std::unique_ptr<Lab>(std::move(lab));
}

StatusOr<std::unique_ptr<Lab>> SlurmLabOfScenario(const std::string& text,
                                                  const std::string& path) {
  FL_ASSIGN_OR_RETURN(SlurmLabConfig c, ParseSlurmSection(text, path));
  FL_ASSIGN_OR_RETURN(auto lab, SlurmLab::Create(std::move(c)));
  return std::unique_ptr<Lab>(std::move(lab));
}

}  // namespace

std::string DefaultAgentFor(const std::string& target, const std::vector<JobHost>& hosts) {
  for (const auto& h : hosts)
    if (target == h.name || target.rfind(h.name + ".", 0) == 0) return h.name;
  if (target.rfind("rank", 0) == 0) {
    int r = std::atoi(target.c_str() + 4);
    for (const auto& h : hosts) {
      if (r < h.ranks) return h.name;
      r -= h.ranks;
    }
  }
  return "fabric";
}

std::string Lab::AgentFor(const std::string& /*kind*/, const std::string& target) const {
  return DefaultAgentFor(target, hosts());
}

StatusOr<std::unique_ptr<Lab>> OpenLab(const LabSource& source, const std::string& lab_name) {
  if (!source.slurm_yaml.empty()) return SlurmLabOfScenario(source.slurm_yaml, source.path);
  std::string text = source.text;
  if (text.empty()) {
    auto t = ReadInputFile(source.path, InputKind::kLabFile);
    if (!t.ok())
      return InvalidArgumentError((source.where.empty() ? "" : source.where + ": ") +
                                  "cannot read lab file " + source.path + ": " +
                                  t.status().message());
    text = *t;
  }
  // An inventory names its coordinator; a topology describes hosts to build.
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, source.path));
  if (doc.root().IsMap() && doc.Has(doc.root(), "coordinator")) {
    FL_ASSIGN_OR_RETURN(Inventory inv, ParseInventory(text, source.path));
    if (inv.launcher == "slurm") return SlurmLabOfInventory(inv);
    return std::unique_ptr<Lab>(std::make_unique<InventoryLab>(std::move(inv)));
  }
  // A stored run's inline slurm section is its scenario's text (a replay).
  if (doc.root().IsMap() && doc.Has(doc.root(), "lab"))
    return SlurmLabOfScenario(text, source.path);
  FL_ASSIGN_OR_RETURN(Topology topo, ParseTopology(text, source.path));
  FL_ASSIGN_OR_RETURN(auto local, LocalLab::Create(topo, lab_name));
  return std::unique_ptr<Lab>(std::move(local));
}

std::string SiteOptions::DefaultHost() const {
  if (!host.empty()) return host;
  const char* node = slurm_nics.empty() ? nullptr : std::getenv("SLURMD_NODENAME");
  return node ? node : "";
}

void AddSiteFlags(CLI::App& app, SiteOptions* o) {
  app.add_option("--lab", o->local_lab, "the local lab whose host (or fabric) this agent acts on");
  app.add_option("--inventory", o->inventory,
                 "or: the inventory file of real hosts (configs/inventories/*.yaml); this agent\n"
                 "acts on --host's NICs in its own network namespace and runs ranks in cgroups;\n"
                 "with --host fabric it is the fabric agent, acting on the inventory's switches\n"
                 "over SSH (their switch_ports must be in its --policy)")
      ->check(CLI::ExistingFile);
  app.add_option("--slurm-nics", o->slurm_nics,
                 "or: a node of a Slurm lab (started by srun): its data NICs by interface name,\n"
                 "rail order; --host defaults to $SLURMD_NODENAME")
      ->delimiter(',');
  app.add_option("--slurm-ranks", o->slurm_ranks, "with --slurm-nics: ranks on this node");
}

StatusOr<std::unique_ptr<Site>> OpenSite(const SiteOptions& o) {
  int named = !o.local_lab.empty() + !o.inventory.empty() + !o.slurm_nics.empty();
  if (named > 1)
    return InvalidArgumentError("an agent serves one lab: --lab, --inventory or --slurm-nics");
  if (named == 0)
    return InvalidArgumentError(
        "the agent needs --lab, --inventory or --slurm-nics to know "
        "where it runs");
  const std::string host = o.DefaultHost();
  if (host.empty()) return InvalidArgumentError("the agent needs --host");
  if (!o.local_lab.empty()) {
    FL_ASSIGN_OR_RETURN(auto lab, LocalLab::Open(o.local_lab));
    return std::unique_ptr<Site>(std::make_unique<LocalSite>(std::move(lab), host));
  }
  const std::string mgmt = o.coordinator.empty() ? "" : RouteInterface(o.coordinator);
  if (!o.inventory.empty()) {
    if (host == "fabric") {  // the switch-side agent of an inventory with switches
      FL_ASSIGN_OR_RETURN(auto fabric, OpenInventoryFabricSite(o.inventory));
      return std::unique_ptr<Site>(std::move(fabric));
    }
    FL_ASSIGN_OR_RETURN(auto site, OpenInventorySite(o.inventory, host, mgmt));
    return std::unique_ptr<Site>(std::move(site));
  }
  // A Slurm node of a `lab: {slurm: ...}` lab: its NICs by interface name, no file on it.
  Inventory inv;
  inv.name = "slurm";
  inv.source = "--slurm-nics";
  InventoryHost h;
  h.name = host;
  h.ranks = o.slurm_ranks;
  if (h.ranks < 1 || h.ranks > 64)
    return InvalidArgumentError("--slurm-ranks must be 1..64, not " + std::to_string(h.ranks));
  for (size_t i = 0; i < o.slurm_nics.size(); ++i) {
    if (!injectors::IsSafeName(o.slurm_nics[i], 15))
      return InvalidArgumentError("--slurm-nics: '" + o.slurm_nics[i] +
                                  "' is not an interface name");
    InventoryNic nic;
    nic.name = "nic" + std::to_string(i);
    nic.ifname = o.slurm_nics[i];
    h.nics.push_back(std::move(nic));
  }
  inv.hosts.push_back(h);
  return std::unique_ptr<Site>(std::make_unique<InventorySite>(std::move(inv), host, mgmt));
}

}  // namespace fl::lab
