#include "harness/lab/slurm_lab.h"

#include "harness/lab/inventory.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "common/file_util.h"
#include "common/narrate.h"
#include "harness/control/certs.h"
#include "harness/lab/lab_catalog.h"
#include "harness/lab/topology.h"
#include "injectors/injector.h"
#include "injectors/sys.h"

namespace fl::lab {
namespace {

// Bounds (docs/lab.md, "SlurmLab").
constexpr int kMaxNodes = 4096;
constexpr int kMaxRanksPerNode = 64;
constexpr size_t kMaxNics = 16;
constexpr Nanos kSlurmMaxAgentWait = 3600 * kNsPerSec;
constexpr Nanos kMaxAllocationWait = 24 * 3600 * kNsPerSec;
// How long a Slurm client command may take (squeue, scontrol, scancel).
constexpr Nanos kSlurmToolTimeout = 30 * kNsPerSec;
// How long a cancelled job or step may stay in squeue (completing).
constexpr Nanos kCancelWait = 60 * kNsPerSec;

// A node name that can be a target name ("<node>.nic0") and an agent's name: the rules of
// inventory host names.
bool IsNodeName(std::string_view s) {
  return IsHostName(s) && s != "fabric" && s.rfind("rank", 0) != 0;
}

bool IsDigits(std::string_view s) {
  return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
}

std::string Join(const std::vector<std::string>& v, const char* sep = ",") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t nl = text.find('\n', i);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(i, nl - i);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) out.push_back(line);
    i = nl + 1;
  }
  return out;
}

std::string LastLine(const std::string& text) {
  auto lines = Lines(text);
  return lines.empty() ? std::string("(no output)") : lines.back();
}

// "IP:PORT" with an IPv4 address agents can dial (not 0.0.0.0) and a port 0..65535.
bool ParseListen(const std::string& listen, std::string* ip) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) return false;
  std::string digits = listen.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 || !IsDigits(digits) || std::stoi(digits) > 65535)
    return false;
  in_addr a;
  *ip = listen.substr(0, colon);
  return inet_pton(AF_INET, ip->c_str(), &a) == 1 && a.s_addr != 0;
}

// The environment of every Slurm client this lab runs: the clean one plus SLURM_CONF (a
// cluster configured outside /etc/slurm). The allocation's own SLURM_* variables are not
// passed: the job id and nodes are given as options.
std::vector<std::string> SlurmEnv() {
  std::vector<std::string> extra;
  if (const char* conf = std::getenv("SLURM_CONF"); conf && *conf)
    extra.push_back(std::string("SLURM_CONF=") + conf);
  return CleanEnvironment(extra);
}

std::string DescribeExit(const ExitStatus& e) {
  return e.term_signal ? "signal " + std::to_string(e.term_signal)
                       : "exit " + std::to_string(e.exit_code);
}

}  // namespace

// ---- the scenario section -------------------------------------------------------------

StatusOr<SlurmLabConfig> ParseSlurmSectionNode(const YamlDoc& doc, const YAML::Node& s) {
  FL_RETURN_IF_ERROR(doc.ExpectMap(s, "slurm"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(s,
                                   {"name", "partition", "nodes", "ranks_per_node", "nics",
                                    "coordinator", "agent_wait", "allocation_wait"},
                                   "slurm"));
  SlurmLabConfig c;
  c.source = doc.name();
  c.text = doc.text();
  FL_ASSIGN_OR_RETURN(c.name, doc.GetOr<std::string>(s, "name", "slurm"));
  if (!IsValidLabName(c.name))
    return doc.Error(s["name"], "slurm lab name must be 1-10 characters [a-z0-9]");
  FL_ASSIGN_OR_RETURN(c.partition, doc.GetOr<std::string>(s, "partition", ""));
  if (doc.Has(s, "partition") && !IsSafeName(c.partition))
    return doc.Error(s["partition"], "'" + c.partition + "' is not a partition name");

  if (!doc.Has(s, "nodes"))
    return doc.Error(s, "slurm needs 'nodes': a node count (nodes: 4) or a list ([gpu01, gpu02])");
  const YAML::Node nodes = s["nodes"];
  if (nodes.IsSequence()) {
    if (nodes.size() == 0 || nodes.size() > static_cast<size_t>(kMaxNodes))
      return doc.Error(nodes, "nodes lists 1 to " + std::to_string(kMaxNodes) + " nodes");
    std::set<std::string> seen;
    for (const auto& n : nodes) {
      FL_ASSIGN_OR_RETURN(std::string name, doc.As<std::string>(n, "node name"));
      if (!IsNodeName(name))
        return doc.Error(
            n, "node name '" + name + "' must be 1-32 chars [a-z0-9_-], not 'fabric' or rank*");
      if (!seen.insert(name).second) return doc.Error(n, "node '" + name + "' appears twice");
      c.nodes.push_back(name);
    }
    c.node_count = static_cast<int>(c.nodes.size());
  } else {
    FL_ASSIGN_OR_RETURN(c.node_count, doc.AsBounded<int>(nodes, "nodes", 1, kMaxNodes));
  }
  FL_ASSIGN_OR_RETURN(c.ranks_per_node,
                      doc.GetBoundedOr<int>(s, "ranks_per_node", 1, 1, kMaxRanksPerNode));

  if (!doc.Has(s, "nics"))
    return doc.Error(s, "slurm needs 'nics': the interface names of each node, rail order");
  FL_ASSIGN_OR_RETURN(const YAML::Node nics, doc.GetList(s, "nics", 1, kMaxNics, "interfaces"));
  std::set<std::string> ifnames;
  for (const auto& n : nics) {
    FL_ASSIGN_OR_RETURN(std::string ifname, doc.As<std::string>(n, "interface name"));
    if (!IsSafeName(ifname, 15)) return doc.Error(n, "'" + ifname + "' is not an interface name");
    if (!ifnames.insert(ifname).second)
      return doc.Error(n, "interface '" + ifname + "' appears twice");
    c.nics.push_back({"nic" + std::to_string(c.nics.size()), ifname});
  }

  if (!doc.Has(s, "coordinator"))
    return doc.Error(s, "slurm needs 'coordinator: {listen, token_file}'");
  const YAML::Node co = s["coordinator"];
  FL_RETURN_IF_ERROR(doc.ExpectMap(co, "coordinator"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(co, {"listen", "token_file", "tls_dir"}, "coordinator"));
  FL_ASSIGN_OR_RETURN(c.listen, doc.Get<std::string>(co, "listen"));
  std::string ip;
  if (!ParseListen(c.listen, &ip))
    return doc.Error(co["listen"],
                     "listen wants IPv4:PORT with an address the nodes reach (port 0: the "
                     "kernel picks), got '" +
                         c.listen + "'");
  FL_ASSIGN_OR_RETURN(std::string token, doc.Get<std::string>(co, "token_file"));
  c.token_file = PathBeside(token, c.source);
  FL_ASSIGN_OR_RETURN(std::string tls, doc.GetOr<std::string>(co, "tls_dir", ""));
  c.tls_dir = tls.empty() ? harness::DefaultTlsDir(c.token_file) : PathBeside(tls, c.source);

  FL_ASSIGN_OR_RETURN(c.agent_wait_ns, doc.GetDurationIn(s, "agent_wait", c.agent_wait_ns,
                                                         kNsPerSec, kSlurmMaxAgentWait));
  FL_ASSIGN_OR_RETURN(
      c.allocation_wait_ns,
      doc.GetDurationIn(s, "allocation_wait", c.allocation_wait_ns, kNsPerSec, kMaxAllocationWait));
  return c;
}

StatusOr<SlurmLabConfig> ParseSlurmSection(std::string_view text, const std::string& source) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, source));
  return ParseSlurmSection(doc);
}

StatusOr<SlurmLabConfig> ParseSlurmSection(const YamlDoc& doc) {
  const YAML::Node& root = doc.root();
  FL_RETURN_IF_ERROR(doc.ExpectMap(root, "slurm section"));
  if (doc.Has(root, "lab")) {
    const YAML::Node lab = root["lab"];
    if (!doc.Has(lab, "slurm")) return doc.Error(lab, "lab has no 'slurm' section");
    return ParseSlurmSectionNode(doc, lab["slurm"]);
  }
  if (doc.Has(root, "slurm") && root.size() == 1) return ParseSlurmSectionNode(doc, root["slurm"]);
  return ParseSlurmSectionNode(doc, root);
}

// ---- the catalog ----------------------------------------------------------------------

// ---- SlurmLab -------------------------------------------------------------------------

StatusOr<std::unique_ptr<SlurmLab>> SlurmLab::Create(SlurmLabConfig c) {
  const std::string where = c.source.empty() ? "slurm lab" : c.source;
  if (!IsValidLabName(c.name))
    return InvalidArgumentError(where + ": lab name '" + c.name + "' must be 1-10 chars [a-z0-9]");
  if (!c.nodes.empty()) {
    if (c.node_count != 0 && c.node_count != static_cast<int>(c.nodes.size()))
      return InvalidArgumentError(where + ": node_count " + std::to_string(c.node_count) + " but " +
                                  std::to_string(c.nodes.size()) + " nodes listed");
    c.node_count = static_cast<int>(c.nodes.size());
    std::set<std::string> seen;
    for (const auto& n : c.nodes)
      if (!IsNodeName(n) || !seen.insert(n).second)
        return InvalidArgumentError(where + ": node '" + n + "' is not a valid, unique name");
  }
  if (Status st = CheckBounds("node count", c.node_count, 1, kMaxNodes); !st.ok())
    return st.Prepend(where);
  if (Status st = CheckBounds("ranks_per_node", c.ranks_per_node, 1, kMaxRanksPerNode); !st.ok())
    return st.Prepend(where);
  if (c.nics.empty() || c.nics.size() > kMaxNics)
    return InvalidArgumentError(where + ": a slurm lab needs 1 to 16 NICs per node");
  for (const auto& n : c.nics)
    if (!IsSafeName(n.ifname, 15) || !IsNodeName(n.name))
      return InvalidArgumentError(where + ": NIC '" + n.name + "' (" + n.ifname +
                                  ") is not a valid name and interface");
  std::string ip;
  if (!ParseListen(c.listen, &ip))
    return InvalidArgumentError(where + ": coordinator listen '" + c.listen +
                                "' is not IPv4:PORT with an address the nodes reach");
  if (c.token_file.empty()) return InvalidArgumentError(where + ": a slurm lab needs a token_file");
  for (const auto& [node, addrs] : c.nic_addresses)
    if (addrs.size() != c.nics.size())
      return InvalidArgumentError(where + ": node " + node + " has " +
                                  std::to_string(addrs.size()) + " NIC addresses for " +
                                  std::to_string(c.nics.size()) + " NICs");
  return std::unique_ptr<SlurmLab>(new SlurmLab(std::move(c)));
}

SlurmLab::SlurmLab(SlurmLabConfig config) : cfg_(std::move(config)) { RebuildCatalog(); }

SlurmLab::~SlurmLab() {
  if (Status st = StopAgents(Deadline::After(10 * kNsPerSec)); !st.ok())
    std::fprintf(stderr, "[agents] %s\n", st.ToUserString().c_str());
  // A destructor cannot return it; Teardown logs what it cannot release.
  if (owns_allocation_) Teardown().IgnoreError();
}

std::vector<std::string> SlurmLab::HostNames() const {
  if (!nodes_.empty()) return nodes_;
  if (!cfg_.nodes.empty()) return cfg_.nodes;
  std::vector<std::string> placeholders;
  for (int i = 0; i < cfg_.node_count; ++i) placeholders.push_back("node" + std::to_string(i));
  return placeholders;
}

void SlurmLab::RebuildCatalog() {
  std::vector<std::string> nic_names;
  for (const auto& n : cfg_.nics) nic_names.push_back(n.name);
  catalog_ = HostSideFaultCatalog(HostNames(), nic_names, cfg_.ranks_per_node);
}

std::vector<JobHost> SlurmLab::hosts() const {
  std::vector<JobHost> out;
  for (const auto& name : HostNames()) {
    JobHost h{name, cfg_.ranks_per_node, {}};
    auto it = cfg_.nic_addresses.find(name);
    if (it != cfg_.nic_addresses.end()) {
      h.nics = it->second;
    } else {
      for (const auto& n : cfg_.nics) h.nics.push_back(n.ifname);
    }
    out.push_back(std::move(h));
  }
  return out;
}

std::vector<std::string> SlurmLab::agent_names() const { return nodes_; }

StatusOr<RunResult> SlurmLab::Tool(const std::vector<std::string>& argv, Nanos timeout) const {
  RunOptions o;
  o.env = SlurmEnv();
  o.timeout = timeout;
  return Run(argv, o);
}

StatusOr<std::vector<std::string>> SlurmLab::Hostnames(const std::string& nodelist) const {
  FL_ASSIGN_OR_RETURN(RunResult r,
                      Tool({"scontrol", "show", "hostnames", nodelist}, kSlurmToolTimeout));
  if (r.exit_code != 0)
    return UnavailableError("slurm: scontrol show hostnames " + nodelist + ": " +
                            LastLine(r.err + r.out));
  std::vector<std::string> names = Lines(r.out);
  if (names.empty()) return UnavailableError("slurm: no nodes in '" + nodelist + "'");
  return names;
}

bool SlurmLab::JobListed(const std::string& id) const {
  auto r = Tool({"squeue", "-h", "-j", id, "-o", "%i"}, kSlurmToolTimeout);
  if (!r.ok()) return true;  // unknown: keep waiting (bounded by the caller)
  if (r->exit_code != 0) return r->err.find("Invalid job id") == std::string::npos;
  for (const auto& line : Lines(r->out))
    if (line == id) return true;
  return false;
}

StatusOr<std::string> SlurmLab::Allocate(const LabRun& run) {
  const std::string job_name = "faultline-" + (IsSafeName(run.run_id) ? run.run_id : "run");
  const int64_t wait_s = std::max<int64_t>(1, cfg_.allocation_wait_ns / kNsPerSec);
  std::vector<std::string> argv = {"salloc",
                                   "--no-shell",
                                   "-N",
                                   std::to_string(cfg_.node_count),
                                   "--immediate=" + std::to_string(wait_s),
                                   "-J",
                                   job_name};
  if (!cfg_.partition.empty()) argv.insert(argv.end(), {"-p", cfg_.partition});
  if (!cfg_.nodes.empty()) argv.insert(argv.end(), {"-w", Join(cfg_.nodes)});
  Narrate("[provision] slurm: asking for %d node(s)%s%s (up to %lld s)", cfg_.node_count,
          cfg_.partition.empty() ? "" : " in partition ", cfg_.partition.c_str(),
          static_cast<long long>(wait_s));
  auto r = Tool(argv, cfg_.allocation_wait_ns + 30 * kNsPerSec);
  if (!r.ok()) {
    // salloc was killed while it waited: a job it queued under our name must not stay.
    Tool({"scancel", "-n", job_name}, kSlurmToolTimeout).status().IgnoreError();
    Status st = r.status();
    return st.Prepend("slurm: salloc");
  }
  // "salloc: Granted job allocation 123" (after "Pending job allocation 123" when it waited).
  auto id_after = [&](const std::string& marker) -> std::string {
    auto p = r->err.find(marker);
    if (p == std::string::npos) return "";
    p += marker.size();
    auto e = r->err.find_first_not_of("0123456789", p);
    return r->err.substr(p, e == std::string::npos ? std::string::npos : e - p);
  };
  std::string id = id_after("Granted job allocation ");
  if (r->exit_code != 0 || id.empty()) {
    std::string queued = id.empty() ? id_after("job allocation ") : id;
    // Best effort for a request still queued; the salloc error below is the answer.
    if (!queued.empty()) Tool({"scancel", queued}, kSlurmToolTimeout).status().IgnoreError();
    // --immediate ran out: salloc says "Unable to allocate resources: Connection timed out".
    bool waited = r->err.find("timed out") != std::string::npos;
    return UnavailableError(
        "slurm refused the allocation" +
        (waited ? " (not granted within allocation_wait, " + std::to_string(wait_s) + " s)"
                : std::string()) +
        " (" + Join(argv, " ") + "): " + LastLine(r->err + r->out));
  }
  return id;
}

Status SlurmLab::Provision(const LabRun& run) {
  if (!job_id_.empty()) return OkStatus();
  run_id_ = run.run_id;
  step_name_ = "faultline-agents-" + (IsSafeName(run.run_id) ? run.run_id : std::string("run"));
  std::vector<std::string> allocated;
  const char* env_job = std::getenv("SLURM_JOB_ID");
  if (env_job && *env_job) {
    // Inside an allocation (sbatch, salloc): use its nodes; it is not ours to cancel.
    if (!IsDigits(env_job))
      return FailedPreconditionError(std::string("slurm: SLURM_JOB_ID '") + env_job +
                                     "' is not a job id");
    job_id_ = env_job;
    owns_allocation_ = false;
    const char* list = std::getenv("SLURM_JOB_NODELIST");
    if (!list || !*list) list = std::getenv("SLURM_NODELIST");
    std::string nodelist = list ? list : "";
    if (nodelist.empty()) {
      auto q = Tool({"squeue", "-h", "-j", job_id_, "-o", "%N"}, kSlurmToolTimeout);
      if (q.ok() && q->exit_code == 0 && !Lines(q->out).empty()) nodelist = Lines(q->out).front();
    }
    if (nodelist.empty()) {
      job_id_.clear();
      return FailedPreconditionError("slurm: allocation " + std::string(env_job) +
                                     " has no node list (SLURM_JOB_NODELIST unset, squeue "
                                     "does not list it)");
    }
    auto names = Hostnames(nodelist);
    if (!names.ok()) {
      job_id_.clear();
      return names.status();
    }
    allocated = std::move(*names);
    Narrate("[provision] slurm: inside allocation %s (%s)", job_id_.c_str(),
            Join(allocated).c_str());
  } else {
    FL_ASSIGN_OR_RETURN(job_id_, Allocate(run));
    owns_allocation_ = true;
    auto q = Tool({"squeue", "-h", "-j", job_id_, "-o", "%N"}, kSlurmToolTimeout);
    StatusOr<std::vector<std::string>> names = UnavailableError(
        "slurm: squeue does not list allocation " + job_id_ + " that salloc granted");
    if (q.ok() && q->exit_code == 0 && !Lines(q->out).empty())
      names = Hostnames(Lines(q->out).front());
    if (!names.ok()) {
      Status st = names.status();
      // The hostname error is the one to report; Teardown logs what it cannot release.
      Teardown().IgnoreError();
      return st;
    }
    allocated = std::move(*names);
    Narrate("[provision] slurm: allocation %s granted (%s)", job_id_.c_str(),
            Join(allocated).c_str());
  }

  // The nodes this run uses: the listed ones (all in the allocation), or the first N.
  Status problem;
  std::vector<std::string> use;
  if (!cfg_.nodes.empty()) {
    std::set<std::string> have(allocated.begin(), allocated.end());
    for (const auto& n : cfg_.nodes)
      if (!have.count(n) && problem.ok())
        problem = FailedPreconditionError("slurm: node " + n + " is not in allocation " + job_id_ +
                                          " (" + Join(allocated) + ")");
    use = cfg_.nodes;
  } else if (static_cast<int>(allocated.size()) < cfg_.node_count) {
    problem = FailedPreconditionError("slurm: allocation " + job_id_ + " has " +
                                      std::to_string(allocated.size()) +
                                      " node(s), the lab needs " + std::to_string(cfg_.node_count));
  } else {
    use.assign(allocated.begin(), allocated.begin() + cfg_.node_count);
  }
  for (const auto& n : use)
    if (problem.ok() && !IsNodeName(n))
      problem = FailedPreconditionError("slurm: node name '" + n +
                                        "' cannot name targets and agents (1-32 chars "
                                        "[a-z0-9_-], not 'fabric' or rank*)");
  if (!problem.ok()) {
    if (owns_allocation_) {
      // The naming problem is the one to report; Teardown logs what it cannot release.
      Teardown().IgnoreError();
    } else {
      job_id_.clear();
    }
    return problem;
  }
  nodes_ = std::move(use);
  RebuildCatalog();
  return OkStatus();
}

Status SlurmLab::CheckFault(const std::string& kind,
                            const std::map<std::string, std::string>& params) const {
  return CheckHostSideFault(kind, params);
}

StatusOr<ControlPlane> SlurmLab::Control(const LabRun& run) {
  // The command line wins over the lab file; the agents' argv follows (AgentArgv).
  if (run.no_tls)
    cfg_.tls_dir.clear();
  else if (!run.tls_dir.empty())
    cfg_.tls_dir = run.tls_dir;
  return ControlPlane{cfg_.listen, cfg_.token_file, cfg_.tls_dir};
}

Rendezvous SlurmLab::RendezvousFor(const LabRun&) const {
  std::string ip;
  ParseListen(cfg_.listen, &ip);  // checked in Create
  Rendezvous r;
  r.kind = Rendezvous::Kind::kTcp;
  r.listen = ip + ":0";
  return r;
}

std::vector<std::string> SlurmLab::AgentArgv(const AgentLaunch& launch) const {
  std::string nics;
  for (const auto& nic : cfg_.nics) nics += (nics.empty() ? "" : ",") + nic.ifname;
  std::vector<std::string> agent = {launch.bin_dir + "/faultline-agent", "--coordinator",
                                    launch.coordinator, "--token-file", launch.token_file};
  if (cfg_.tls_dir.empty()) {
    agent.push_back("--no-tls");
  } else {
    agent.insert(agent.end(), {"--tls-dir", cfg_.tls_dir});
  }
  // No --host: one argv for every node; the agent takes its name from SLURMD_NODENAME. No
  // --run-dir: the coordinator's run directory need not exist on the nodes (the agent picks
  // a node-local one, as for an inventory host).
  agent.insert(agent.end(),
               {"--slurm-nics", nics, "--slurm-ranks", std::to_string(cfg_.ranks_per_node)});
  if (!launch.policy_path.empty()) agent.insert(agent.end(), {"--policy", launch.policy_path});
  return agent;
}

std::vector<std::string> SlurmLab::AgentStepArgv(const AgentLaunch& launch) const {
  const std::string n = std::to_string(nodes_.size());
  std::vector<std::string> argv = {"srun",
                                   "--jobid=" + job_id_,
                                   "--overlap",
                                   "--ntasks-per-node=1",
                                   "--ntasks=" + n,
                                   "-N",
                                   n,
                                   "-w",
                                   Join(nodes_),
                                   "--kill-on-bad-exit=0",
                                   "-J",
                                   step_name_};
  std::vector<std::string> agent = AgentArgv(launch);
  if (cfg_.agent_argv_hook) agent = cfg_.agent_argv_hook(std::move(agent));
  argv.insert(argv.end(), agent.begin(), agent.end());
  return argv;
}

Status SlurmLab::StartAgents(const AgentLaunch& launch) {
  if (job_id_.empty() || nodes_.empty())
    return FailedPreconditionError("slurm: StartAgents before Provision");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (srun_pid_ >= 0) return FailedPreconditionError("slurm: the agents' step already runs");
  }
  ProcessSpec spec;
  spec.argv = AgentStepArgv(launch);
  spec.env = SlurmEnv();
  // srun and the agents' output (srun forwards every task's stdout and stderr).
  if (!launch.run_dir.empty()) {
    spec.out = {Stdio::kFile, launch.run_dir + "/agents-srun.out"};
    spec.err = {Stdio::kFile, launch.run_dir + "/agents-srun.err"};
  } else {
    spec.out.kind = Stdio::kNull;
  }
  spec.in.kind = Stdio::kNull;
  // Its own process group: a Ctrl-C at the terminal reaches the coordinator, which stops the
  // agents in order; StopAgents signals the group.
  spec.new_process_group = true;
  FL_ASSIGN_OR_RETURN(Process proc, Spawn(spec));
  Narrate("[agents] srun step %s on %zu node(s) of job %s (%s)", step_name_.c_str(), nodes_.size(),
          job_id_.c_str(), Join(nodes_).c_str());
  std::lock_guard<std::mutex> lock(mu_);
  srun_pid_ = proc.pid();
  srun_exit_.reset();
  stopping_ = false;
  lost_reported_ = 0;
  return OkStatus();
}

std::optional<Lab::LostAgent> SlurmLab::PollLostAgent() {
  std::lock_guard<std::mutex> lock(mu_);
  if (srun_pid_ < 0 || stopping_) return std::nullopt;
  if (!srun_exit_) {
    auto e = WaitExit(srun_pid_, Deadline::After(0));
    if (!e.ok()) return std::nullopt;  // still running
    srun_exit_ = *e;
  }
  // Exit 0: every agent ended normally (shut down by the coordinator, or by a signal after
  // reverting): not a loss. Anything else ended the whole step.
  if (srun_exit_->Code() == 0 || lost_reported_ >= nodes_.size()) return std::nullopt;
  LostAgent lost;
  lost.name = nodes_[lost_reported_++];
  lost.how = "srun step " + step_name_ + " ended (" + DescribeExit(*srun_exit_) + ")";
  return lost;
}

Status SlurmLab::CancelSteps() {
  if (job_id_.empty()) return OkStatus();
  auto listed = [&] {
    std::vector<std::string> ids;
    auto r = Tool({"squeue", "-h", "-s", "-j", job_id_, "-o", "%i %j"}, kSlurmToolTimeout);
    if (!r.ok() || r->exit_code != 0) return ids;
    for (const auto& line : Lines(r->out)) {
      auto sp = line.find(' ');
      if (sp != std::string::npos && line.substr(sp + 1) == step_name_)
        ids.push_back(line.substr(0, sp));
    }
    return ids;
  };
  std::vector<std::string> steps = listed();
  if (steps.empty()) return OkStatus();
  // Each scancel is checked by the listing after it: the wait below says what is left.
  for (const auto& id : steps) Tool({"scancel", id}, kSlurmToolTimeout).status().IgnoreError();
  if (!WaitUntil([&] { return listed().empty(); }, Deadline::After(kCancelWait), 200 * kNsPerMs))
    return DeadlineExceededError("slurm: step " + step_name_ + " of job " + job_id_ +
                                 " still listed after scancel");
  return OkStatus();
}

Status SlurmLab::StopAgents(Deadline deadline) {
  int pid;
  bool reaped;
  Status result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (srun_pid_ < 0) return OkStatus();
    stopping_ = true;  // PollLostAgent no longer reaps: only this thread waits from here
    pid = srun_pid_;
    reaped = srun_exit_.has_value();
  }
  if (!reaped) {
    auto e = WaitExit(pid, deadline);
    ExitStatus ended;
    if (e.ok()) {
      ended = *e;
    } else {
      // srun forwards SIGTERM to the tasks and cancels the step; SIGKILL after the grace.
      ended = Stop(pid, 10 * kNsPerSec, /*group=*/true);
      result = DeadlineExceededError("slurm: the agents' step outlived its deadline: srun ended (" +
                                     DescribeExit(ended) + ")");
    }
    std::lock_guard<std::mutex> lock(mu_);
    srun_exit_ = ended;
  }
  // A step whose srun was killed stays until cancelled.
  if (Status c = CancelSteps(); !c.ok() && result.ok()) result = c;
  std::lock_guard<std::mutex> lock(mu_);
  srun_pid_ = -1;
  return result;
}

Status SlurmLab::Teardown() {
  if (Status st = StopAgents(Deadline::After(10 * kNsPerSec)); !st.ok())
    std::fprintf(stderr, "[agents] %s\n", st.ToUserString().c_str());
  if (job_id_.empty()) return OkStatus();
  if (!owns_allocation_) {  // the caller's allocation stays
    job_id_.clear();
    return OkStatus();
  }
  const std::string id = job_id_;
  auto r = Tool({"scancel", id}, kSlurmToolTimeout);
  if (!r.ok()) {
    Status st = r.status();
    return st.Prepend("slurm: scancel " + id);
  }
  if (!WaitUntil([&] { return !JobListed(id); }, Deadline::After(kCancelWait), 200 * kNsPerMs))
    return DeadlineExceededError("slurm: allocation " + id + " is still in squeue " +
                                 std::to_string(kCancelWait / kNsPerSec) + " s after scancel");
  Narrate("[teardown] slurm: allocation %s cancelled", id.c_str());
  job_id_.clear();
  owns_allocation_ = false;
  return OkStatus();
}

// ---- opened from an inventory, and a node's site ----------------------------------------

StatusOr<std::unique_ptr<SlurmLab>> SlurmLabOfInventory(const Inventory& inv) {
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
  return SlurmLab::Create(std::move(c));
}

StatusOr<std::unique_ptr<Site>> OpenSlurmNodeSite(const std::string& host,
                                                  const std::vector<std::string>& nics, int ranks,
                                                  const std::string& mgmt) {
  // Its NICs by interface name, no file on the node: an inventory of one host.
  Inventory inv;
  inv.name = "slurm";
  inv.source = "--slurm-nics";
  InventoryHost h;
  h.name = host;
  h.ranks = ranks;
  if (h.ranks < 1 || h.ranks > 64)
    return InvalidArgumentError("--slurm-ranks must be 1..64, not " + std::to_string(h.ranks));
  for (size_t i = 0; i < nics.size(); ++i) {
    if (!injectors::IsSafeName(nics[i], 15))
      return InvalidArgumentError("--slurm-nics: '" + nics[i] + "' is not an interface name");
    InventoryNic nic;
    nic.name = "nic" + std::to_string(i);
    nic.ifname = nics[i];
    h.nics.push_back(std::move(nic));
  }
  inv.hosts.push_back(h);
  return std::unique_ptr<Site>(std::make_unique<InventorySite>(std::move(inv), host, mgmt));
}

}  // namespace fl::lab
