// SlurmLab: the scenario section and the catalog ([unit]); on a real Slurm over a local lab
// (tests/harness/slurm_cluster.h) the allocation it asks for or attaches to, the agents as one
// srun step registering with a real control server, and nothing left in squeue or /proc
// afterwards ([.root][integration]).
#include "harness/lab/slurm_lab.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <set>

#include "common/file_util.h"
#include "harness/control/auth.h"
#include "harness/control/certs.h"
#include "harness/coordinator/control_server.h"
#include "tests/harness/slurm_cluster.h"
#include "tests/injectors/lab_testing.h"
#include "tests/test_util.h"

namespace fl::lab {
namespace {

// A LabRun with a run id and directory (the rest as a run driver leaves them by default).
LabRun TestRun(const std::string& id, const std::string& dir) {
  LabRun r;
  r.run_id = id;
  r.run_dir = dir;
  return r;
}

constexpr const char* kScenario =
    "name: s\n"
    "lab:\n"
    "  slurm:\n"
    "    partition: batch\n"
    "    nodes: [gpu01, gpu02]\n"
    "    ranks_per_node: 2\n"
    "    nics: [ens1f0np0, ens2f0np0]\n"
    "    coordinator: {listen: 10.0.0.254:0, token_file: /etc/fl/token}\n"
    "    agent_wait: 30s\n"
    "job: {iterations: 10}\n";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto p = s.find(from);
  REQUIRE(p != std::string::npos);
  return s.replace(p, from.size(), to);
}

std::string ErrorOf(const std::string& text) {
  auto c = ParseSlurmSection(text, "s.yaml");
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == Code::kInvalidArgument);
  return c.status().message();
}

SlurmLabConfig CountConfig() {
  SlurmLabConfig c;
  c.node_count = 2;
  c.ranks_per_node = 2;
  c.nics = {{"nic0", "ens1"}, {"nic1", "ens2"}};
  c.listen = "10.0.0.254:0";
  c.token_file = "/etc/fl/token";
  return c;
}

TEST_CASE("slurm section: every key is read, tls beside the token by default", "[unit]") {
  auto c = ParseSlurmSection(kScenario, "s.yaml");
  REQUIRE(c.ok());
  CHECK(c->source == "s.yaml");
  CHECK(c->text == kScenario);
  CHECK(c->name == "slurm");
  CHECK(c->partition == "batch");
  CHECK(c->nodes == std::vector<std::string>{"gpu01", "gpu02"});
  CHECK(c->node_count == 2);
  CHECK(c->ranks_per_node == 2);
  REQUIRE(c->nics.size() == 2);
  CHECK(c->nics[1].name == "nic1");
  CHECK(c->nics[1].ifname == "ens2f0np0");
  CHECK(c->listen == "10.0.0.254:0");
  CHECK(c->token_file == "/etc/fl/token");
  CHECK(c->tls_dir == harness::DefaultTlsDir("/etc/fl/token"));
  CHECK(c->agent_wait_ns == 30 * kNsPerSec);

  // The section alone, and {slurm: ...}, read the same; a node count instead of a list.
  auto alone = ParseSlurmSection(
      "nodes: 3\nnics: [eth1]\ncoordinator: {listen: 10.1.1.1:7070, token_file: /t, tls_dir: "
      "/tls}\nallocation_wait: 5m\n",
      "<inline>");
  REQUIRE(alone.ok());
  CHECK(alone->node_count == 3);
  CHECK(alone->nodes.empty());
  CHECK(alone->ranks_per_node == 1);
  CHECK(alone->tls_dir == "/tls");
  CHECK(alone->allocation_wait_ns == 300 * kNsPerSec);
  auto wrapped = ParseSlurmSection(
      "slurm: {nodes: 1, nics: [eth1], coordinator: {listen: 10.1.1.1:0, token_file: /t}}\n",
      "<inline>");
  REQUIRE(wrapped.ok());
  CHECK(wrapped->node_count == 1);
}

TEST_CASE("slurm section: bad input is an error at its file:line:col", "[unit]") {
  CHECK(ErrorOf(Replace(kScenario, "partition:", "partiton:")).rfind("s.yaml:4:5: ", 0) == 0);
  CHECK(ErrorOf(Replace(kScenario, "[gpu01, gpu02]", "0")).rfind("s.yaml:5:12: nodes must be", 0) ==
        0);
  CHECK(ErrorOf(Replace(kScenario, "gpu02]", "gpu01]")).find("appears twice") != std::string::npos);
  CHECK(ErrorOf(Replace(kScenario, "gpu02]", "Gpu.02]")).rfind("s.yaml:5:20: node name", 0) == 0);
  CHECK(ErrorOf(Replace(kScenario, "ranks_per_node: 2", "ranks_per_node: 65"))
            .rfind("s.yaml:6:21: ranks_per_node must be between 1 and 64", 0) == 0);
  CHECK(ErrorOf(Replace(kScenario, "ens2f0np0", "a-very-long-ifname")).rfind("s.yaml:7:23: ", 0) ==
        0);
  CHECK(ErrorOf(Replace(kScenario, "    nics: [ens1f0np0, ens2f0np0]\n", ""))
            .find("slurm needs 'nics'") != std::string::npos);
  CHECK(
      ErrorOf(Replace(kScenario, "10.0.0.254:0", "0.0.0.0:7070")).rfind("s.yaml:8:27: listen", 0) ==
      0);
  CHECK(ErrorOf(Replace(kScenario, "10.0.0.254:0", "10.0.0.254:70700")).find("listen wants") !=
        std::string::npos);
  CHECK(ErrorOf(Replace(kScenario, "token_file:", "token:")).rfind("s.yaml:8:41: ", 0) == 0);
  CHECK(ErrorOf(Replace(kScenario, "agent_wait: 30s", "agent_wait: 0s"))
            .rfind("s.yaml:9:17: agent_wait must be between", 0) == 0);
  CHECK(ErrorOf("name: s\nlab: {topology: x.yaml}\n").find("lab has no 'slurm' section") !=
        std::string::npos);
}

TEST_CASE("SlurmLab: host-side catalog, placeholders until Slurm names the nodes", "[unit]") {
  auto lab = SlurmLab::Create(CountConfig());
  REQUIRE(lab.ok());
  const auto& cat = (*lab)->catalog();
  CHECK(cat.Kinds() == std::vector<std::string>{"bandwidth_throttle", "container_kill",
                                                "link_blackhole", "nic_port_flap", "packet_loss",
                                                "pfc_storm"});
  CHECK(cat.TargetClasses("packet_loss") == std::vector<std::string>{"nic", "host", "rail"});
  CHECK(cat.TargetClasses("container_kill") == std::vector<std::string>{"container", "rank"});
  CHECK(cat.TargetClasses("tor_port_down").empty());
  CHECK(cat.Targets("host") == std::vector<std::string>{"node0", "node1"});
  CHECK(cat.Targets("nic") ==
        std::vector<std::string>{"node0.nic0", "node0.nic1", "node1.nic0", "node1.nic1"});
  CHECK(cat.Targets("rail") == std::vector<std::string>{"rail0", "rail1"});
  CHECK(cat.Targets("container").size() == 4);
  CHECK(cat.Targets("rank") == std::vector<std::string>{"rank0", "rank1", "rank2", "rank3"});
  CHECK(cat.Targets("tor_port").empty());
  CHECK((*lab)->kind() == "slurm");
  CHECK((*lab)->agent_names().empty());  // known after Provision only
  auto hosts = (*lab)->hosts();
  REQUIRE(hosts.size() == 2);
  CHECK(hosts[1].name == "node1");
  CHECK(hosts[1].ranks == 2);
  CHECK(hosts[1].nics == std::vector<std::string>{"ens1", "ens2"});
  Rendezvous r = (*lab)->RendezvousFor(TestRun("r1", "/tmp"));
  CHECK(r.kind == Rendezvous::Kind::kTcp);
  CHECK(r.listen == "10.0.0.254:0");
  auto cp = (*lab)->Control(TestRun("r1", "/tmp"));
  REQUIRE(cp.ok());
  CHECK(cp->listen == "10.0.0.254:0");
  CHECK(cp->token_file == "/etc/fl/token");
  CHECK((*lab)->StartAgents(AgentLaunch{}).code() == Code::kFailedPrecondition);
  AgentLaunch launch;
  launch.coordinator = "10.0.0.254:7070";
  launch.token_file = "/etc/fl/token";
  launch.bin_dir = "/opt/fl/bin";
  CHECK((*lab)->AgentArgv(launch) ==
        std::vector<std::string>{"/opt/fl/bin/faultline-agent", "--coordinator", "10.0.0.254:7070",
                                 "--token-file", "/etc/fl/token", "--no-tls", "--slurm-nics",
                                 "ens1,ens2", "--slurm-ranks", "2"});

  // Listed nodes (an inventory with launcher: slurm): their names, and their NIC addresses.
  SlurmLabConfig c = CountConfig();
  c.node_count = 0;
  c.nodes = {"gpu01", "gpu02"};
  c.nic_addresses["gpu02"] = {"10.0.1.2", "10.0.2.2"};
  auto named = SlurmLab::Create(c);
  REQUIRE(named.ok());
  CHECK((*named)->catalog().Targets("host") == std::vector<std::string>{"gpu01", "gpu02"});
  CHECK((*named)->catalog().Targets("container").front() == "gpu01.rank0");
  auto nh = (*named)->hosts();
  REQUIRE(nh.size() == 2);
  CHECK(nh[0].nics == std::vector<std::string>{"ens1", "ens2"});
  CHECK(nh[1].nics == std::vector<std::string>{"10.0.1.2", "10.0.2.2"});

  c.tls_dir = "/etc/fl/tls";
  launch.policy_path = "/etc/fl/policy.yaml";
  auto tls_argv = (*SlurmLab::Create(c))->AgentArgv(launch);
  const std::vector<std::string> tls_flag = {"--tls-dir", "/etc/fl/tls"};
  CHECK(std::find(tls_argv.begin(), tls_argv.end(), "--no-tls") == tls_argv.end());
  CHECK(std::search(tls_argv.begin(), tls_argv.end(), tls_flag.begin(), tls_flag.end()) !=
        tls_argv.end());
  CHECK(tls_argv.back() == "/etc/fl/policy.yaml");

  c.nic_addresses["gpu02"] = {"10.0.1.2"};
  CHECK(SlurmLab::Create(c).status().code() == Code::kInvalidArgument);
  c = CountConfig();
  c.listen = "10.0.0.254";
  CHECK(SlurmLab::Create(c).status().code() == Code::kInvalidArgument);
  c = CountConfig();
  c.nics.clear();
  CHECK(SlurmLab::Create(c).status().code() == Code::kInvalidArgument);
}

// ---- on a real Slurm ------------------------------------------------------------------

// Sets an environment variable for the scope; restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Pids of faultline-agent processes dialling `coordinator`.
std::vector<int> AgentPids(const std::string& coordinator) {
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    auto cmd = ReadFile(std::string("/proc/") + e->d_name + "/cmdline");
    if (!cmd.ok()) continue;
    // argv[0] is the agent (not srun, whose arguments name it too).
    std::string argv0 = cmd->substr(0, cmd->find('\0'));
    bool agent = argv0.size() >= 15 && argv0.compare(argv0.size() - 15, 15, "faultline-agent") == 0;
    if (agent &&
        cmd->find(std::string("\0", 1) + coordinator + std::string("\0", 1)) != std::string::npos)
      pids.push_back(pid);
  }
  closedir(d);
  return pids;
}

// Until faultline-agent has --slurm-nics/--slurm-ranks (and takes its name from
// SLURMD_NODENAME), the agents get --host from the task's environment instead.
std::function<std::vector<std::string>(std::vector<std::string>)> AgentHookIfNeeded(
    const std::string& agent) {
  auto help = Run({agent, "--help"});
  if (help.ok() && help->out.find("--slurm-nics") != std::string::npos) return nullptr;
  return [](std::vector<std::string> a) {
    std::vector<std::string> out = {"/bin/sh", "-c",
                                    "exec \"$0\" --host \"$SLURMD_NODENAME\" \"$@\""};
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == "--slurm-nics" || a[i] == "--slurm-ranks") {
        ++i;
        continue;
      }
      out.push_back(a[i]);
    }
    return out;
  };
}

// A 2-host local lab with a Slurm on it, a control server on the management network, and a
// SlurmLab config for the two nodes (by count: Slurm names them).
struct SlurmEnvFixture {
  testing::ScopedStateDir state;
  testing::TempDir run_dir{"fl_slurm_run"};
  std::unique_ptr<testing::TestLab> lab;
  std::unique_ptr<testing::SlurmCluster> cluster;
  std::optional<ScopedEnv> conf;
  std::unique_ptr<harness::ControlServer> server;
  std::string mgmt_ip, token_file, coordinator;

  void Up() {
    auto l = testing::TestLab::Up(testing::kSmallRail);
    REQUIRE(l.ok());
    lab = std::move(*l);
    auto c = testing::SlurmCluster::Start(lab->lab());
    INFO((c.ok() ? std::string() : c.status().ToString()));
    REQUIRE(c.ok());
    cluster = std::move(*c);
    conf.emplace("SLURM_CONF", cluster->conf());
    mgmt_ip =
        lab->lab().plan().root_mgmt_addr.substr(0, lab->lab().plan().root_mgmt_addr.find('/'));
    token_file = run_dir.path() + "/token";
    auto token = harness::CreateTokenFile(token_file);
    REQUIRE(token.ok());
    harness::ControlServerOptions so;
    so.listen_address = mgmt_ip + ":0";
    so.token = *token;
    so.run_id = "slurmtest";
    auto s = harness::ControlServer::Start(so);
    REQUIRE(s.ok());
    server = std::move(*s);
    coordinator = mgmt_ip + ":" + std::to_string(server->port());
  }

  SlurmLabConfig Config() const {
    SlurmLabConfig c;
    c.name = "t";
    c.node_count = 2;
    c.nics = {{"nic0", "nic0"}};
    c.listen = mgmt_ip + ":0";
    c.token_file = token_file;
    c.agent_wait_ns = 60 * kNsPerSec;
    c.allocation_wait_ns = 30 * kNsPerSec;
    c.agent_argv_hook = AgentHookIfNeeded(std::string(FL_BUILD_DIR) + "/bin/faultline-agent");
    return c;
  }

  AgentLaunch Launch() const {
    AgentLaunch a;
    a.coordinator = coordinator;
    a.token_file = token_file;
    a.run_id = "slurmtest";
    a.run_dir = run_dir.path();
    a.bin_dir = std::string(FL_BUILD_DIR) + "/bin";
    return a;
  }

  std::string SrunLog() const {
    return ReadFile(run_dir.path() + "/agents-srun.err").value_or("") +
           ReadFile(run_dir.path() + "/agents-srun.out").value_or("");
  }

  // Starts the agents, waits until both registered, shuts them down, stops the step.
  void RunAgents(SlurmLab& slurm) {
    REQUIRE(slurm.StartAgents(Launch()).ok());
    Status reg = server->WaitForAgents({"h0", "h1"}, Deadline::After(60 * kNsPerSec));
    INFO(SrunLog());
    INFO(cluster->Logs());
    REQUIRE(reg.ok());
    CHECK(AgentPids(coordinator).size() == 2);
    CHECK_FALSE(slurm.PollLostAgent().has_value());
    for (const std::string h : {"h0", "h1"}) {
      faultline::v1::CoordinatorMessage m;
      m.mutable_shutdown()->set_reason("test over");
      CHECK(server->Call(h, m, Deadline::After(10 * kNsPerSec)).ok());
    }
    // The agents exit after the Shutdown, and with them the step: srun exits 0, which is
    // no lost agent.
    CHECK(WaitUntil([&] { return AgentPids(coordinator).empty(); }, Deadline::After(15 * kNsPerSec),
                    50 * kNsPerMs));
    CHECK(WaitUntil([&] { return !ProcessAlive(slurm.agent_step_pid()); },
                    Deadline::After(15 * kNsPerSec), 50 * kNsPerMs));
    CHECK_FALSE(slurm.PollLostAgent().has_value());
    CHECK(slurm.StopAgents(Deadline::After(30 * kNsPerSec)).ok());
    CHECK(slurm.agent_step_pid() == -1);
  }
};

TEST_CASE("SlurmCluster: a task runs in each host's namespace, nothing of it stays",
          "[.root][integration]") {
  testing::ScopedStateDir state;
  auto lab = testing::TestLab::Up(testing::kSmallRail);
  REQUIRE(lab.ok());
  std::vector<int> pids;
  std::string dir;
  {
    auto c = testing::SlurmCluster::Start((*lab)->lab());
    INFO((c.ok() ? std::string() : c.status().ToString()));
    REQUIRE(c.ok());
    pids = (*c)->daemon_pids();
    dir = (*c)->dir();
    CHECK(pids.size() == 4);  // munged, slurmctld, 2 slurmd
    CHECK((*c)->nodes() == std::vector<std::string>{"h0", "h1"});
    auto r = (*c)->Client(
        {"srun", "-N", "2", "--ntasks-per-node=1", "-l", "/usr/bin/readlink", "/proc/self/ns/net"},
        60 * kNsPerSec);
    REQUIRE(r.ok());
    INFO(r->out + r->err);
    CHECK(r->exit_code == 0);
    for (const std::string h : {"h0", "h1"}) {
      struct stat st;
      REQUIRE(stat(("/run/netns/" + (*lab)->lab().NetnsOf(h)).c_str(), &st) == 0);
      CHECK(r->out.find("net:[" + std::to_string(st.st_ino) + "]") != std::string::npos);
    }
    // srun's own job completes and leaves squeue.
    CHECK(WaitUntil([&] { return (*c)->Jobs().empty(); }, Deadline::After(20 * kNsPerSec),
                    100 * kNsPerMs));
  }
  for (int pid : pids) CHECK_FALSE(ProcessAlive(pid));
  CHECK(access(dir.c_str(), F_OK) != 0);
}

TEST_CASE("SlurmLab on a real Slurm: own allocation, agents as one srun step, nothing left",
          "[.root][integration]") {
  SlurmEnvFixture env;
  env.Up();
  auto made = SlurmLab::Create(env.Config());
  REQUIRE(made.ok());
  SlurmLab& slurm = **made;
  REQUIRE(env.cluster->Jobs().empty());
  Status prov = slurm.Provision(TestRun("slurmtest", env.run_dir.path()));
  INFO(prov.ToString());
  REQUIRE(prov.ok());
  CHECK(slurm.owns_allocation());
  CHECK(env.cluster->Jobs() == std::vector<std::string>{slurm.job_id()});
  // Node names come from Slurm: the lab's hosts, in place of the placeholders.
  CHECK(slurm.agent_names() == std::vector<std::string>{"h0", "h1"});
  CHECK(slurm.catalog().Targets("nic") == std::vector<std::string>{"h0.nic0", "h1.nic0"});
  CHECK(slurm.hosts().front().name == "h0");
  auto argv = slurm.AgentStepArgv(env.Launch());
  REQUIRE(argv.size() > 12);
  CHECK(std::vector<std::string>(argv.begin(), argv.begin() + 12) ==
        std::vector<std::string>{"srun", "--jobid=" + slurm.job_id(), "--overlap",
                                 "--ntasks-per-node=1", "--ntasks=2", "-N", "2", "-w", "h0,h1",
                                 "--kill-on-bad-exit=0", "-J", "faultline-agents-slurmtest"});

  env.RunAgents(slurm);
  Status down = slurm.Teardown();
  INFO(down.ToString());
  CHECK(down.ok());
  CHECK(env.cluster->Jobs().empty());  // squeue -h lists nothing
  CHECK(slurm.Teardown().ok());        // idempotent
}

TEST_CASE("SlurmLab on a real Slurm: srun killed is a lost agent per node, the step is cancelled",
          "[.root][integration]") {
  SlurmEnvFixture env;
  env.Up();
  auto made = SlurmLab::Create(env.Config());
  REQUIRE(made.ok());
  SlurmLab& slurm = **made;
  REQUIRE(slurm.Provision(TestRun("slurmlost", env.run_dir.path())).ok());
  REQUIRE(slurm.StartAgents(env.Launch()).ok());
  INFO(env.SrunLog());
  REQUIRE(env.server->WaitForAgents({"h0", "h1"}, Deadline::After(60 * kNsPerSec)).ok());
  REQUIRE(slurm.agent_step_pid() > 0);
  kill(slurm.agent_step_pid(), SIGKILL);  // the step's srun dies; its tasks run on
  std::optional<Lab::LostAgent> lost;
  REQUIRE(WaitUntil([&] { return (lost = slurm.PollLostAgent()).has_value(); },
                    Deadline::After(10 * kNsPerSec), 20 * kNsPerMs));
  CHECK(lost->name == "h0");
  CHECK(lost->how.find("signal 9") != std::string::npos);
  auto second = slurm.PollLostAgent();
  REQUIRE(second.has_value());
  CHECK(second->name == "h1");
  CHECK_FALSE(slurm.PollLostAgent().has_value());  // once per agent
  // StopAgents cancels the orphaned step: its agents end (SIGTERM from slurmstepd).
  Status stopped = slurm.StopAgents(Deadline::After(5 * kNsPerSec));
  INFO(stopped.ToString());
  CHECK(WaitUntil([&] { return AgentPids(env.coordinator).empty(); },
                  Deadline::After(20 * kNsPerSec), 50 * kNsPerMs));
  CHECK(slurm.Teardown().ok());
  CHECK(env.cluster->Jobs().empty());
}

TEST_CASE("SlurmLab on a real Slurm: inside an allocation it attaches and leaves it",
          "[.root][integration]") {
  SlurmEnvFixture env;
  env.Up();
  auto r = env.cluster->Client(
      {"salloc", "--no-shell", "-N", "2", "-J", "fl-attach-test", "--immediate=30"},
      60 * kNsPerSec);
  REQUIRE(r.ok());
  INFO(r->err);
  const std::string marker = "Granted job allocation ";
  auto p = r->err.find(marker);
  REQUIRE(p != std::string::npos);
  std::string id = r->err.substr(p + marker.size());
  id = id.substr(0, id.find_first_not_of("0123456789"));
  auto q = env.cluster->Client({"squeue", "-h", "-j", id, "-o", "%N"});
  REQUIRE(q.ok());
  std::string nodelist = q->out.substr(0, q->out.find('\n'));
  REQUIRE_FALSE(nodelist.empty());
  {
    ScopedEnv job("SLURM_JOB_ID", id);
    ScopedEnv nodes("SLURM_JOB_NODELIST", nodelist);
    auto made = SlurmLab::Create(env.Config());
    REQUIRE(made.ok());
    SlurmLab& slurm = **made;
    Status prov = slurm.Provision(TestRun("slurmattach", env.run_dir.path()));
    INFO(prov.ToString());
    REQUIRE(prov.ok());
    CHECK_FALSE(slurm.owns_allocation());
    CHECK(slurm.job_id() == id);
    CHECK(slurm.agent_names() == std::vector<std::string>{"h0", "h1"});
    env.RunAgents(slurm);
    CHECK(slurm.Teardown().ok());
    CHECK(env.cluster->Jobs() == std::vector<std::string>{id});  // not ours to cancel
  }
  REQUIRE(env.cluster->Client({"scancel", id}).ok());
  CHECK(WaitUntil([&] { return env.cluster->Jobs().empty(); }, Deadline::After(30 * kNsPerSec),
                  100 * kNsPerMs));
}

TEST_CASE("SlurmLab on a real Slurm: a refused allocation is a clear error and leaves no job",
          "[.root][integration]") {
  SlurmEnvFixture env;
  env.Up();
  SlurmLabConfig c = env.Config();
  c.node_count = 3;  // the cluster has 2 nodes: salloc gives up after allocation_wait
  c.allocation_wait_ns = 2 * kNsPerSec;
  auto made = SlurmLab::Create(c);
  REQUIRE(made.ok());
  Status prov = (*made)->Provision(TestRun("slurmrefused", env.run_dir.path()));
  INFO(prov.ToString());
  CHECK(prov.code() == Code::kUnavailable);
  CHECK(prov.message().find("slurm refused the allocation") != std::string::npos);
  CHECK(env.cluster->Jobs().empty());
}

}  // namespace
}  // namespace fl::lab
