// Root-gated LocalLab tests: up -> TCP over a rail -> down leaves the machine exactly as
// before (namespaces, links, qdiscs, nft tables, cgroups, processes); two labs coexist; the
// CLI's up/status/exec/down; bad input creates nothing.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/json_util.h"
#include "common/process.h"
#include "harness/lab/fault_spec.h"
#include "harness/lab/local_lab.h"
#include "injectors/journal.h"
#include "injectors/sys.h"
#include "tests/child_process.h"
#include "tests/injectors/lab_testing.h"
#include "tests/test_util.h"

namespace fl::lab {
namespace {

using injectors::RunChecked;

void ListCgroups(const std::string& dir, const std::string& rel, int depth,
                 std::set<std::string>* out) {
  if (depth == 0) return;
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
    std::string r = rel + "/" + e->d_name;
    out->insert("cgroup " + r);
    ListCgroups(dir + "/" + e->d_name, r, depth - 1, out);
  }
  closedir(d);
}

std::set<int> ChildPids() {
  std::set<int> pids;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto p = s.rfind(')');
    if (p == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    if (sscanf(s.c_str() + p + 2, "%c %d", &state, &ppid) == 2 && ppid == getpid() && state != 'Z')
      pids.insert(pid);
  }
  closedir(d);
  return pids;
}

// Everything a lab could leave behind in the root namespace and the cgroup tree. Objects of
// other labs (another test process's "fl-..." names) are left out so that concurrent runs
// do not disturb the comparison; our own names are always in.
std::set<std::string> Snapshot(const std::string& our_prefix) {
  std::set<std::string> s;
  for (const auto& ns : injectors::ListNetns()) s.insert("netns " + ns);
  auto links = RunChecked({"ip", "-o", "link", "show"});
  REQUIRE(links.ok());
  std::istringstream li(*links);
  for (std::string line; std::getline(li, line);) {
    auto a = line.find(": "), b = line.find(':', a + 2);
    std::string name = line.substr(a + 2, b - a - 2);
    s.insert("link " + name.substr(0, name.find('@')));
  }
  auto qd = RunChecked({"tc", "qdisc", "show"});
  REQUIRE(qd.ok());
  std::istringstream qi(*qd);
  for (std::string line; std::getline(qi, line);) s.insert("qdisc " + line);
  auto nft = RunChecked({"nft", "list", "tables"});
  REQUIRE(nft.ok());
  std::istringstream ni(*nft);
  for (std::string line; std::getline(ni, line);) s.insert("nft " + line);
  auto cg = injectors::Cgroup2Root();
  REQUIRE(cg.ok());
  ListCgroups(*cg, "", 4, &s);
  for (int pid : ChildPids()) s.insert("child " + std::to_string(pid));
  std::set<std::string> filtered;
  for (const auto& e : s) {
    bool other_lab = e.find("fl-") != std::string::npos && e.find(our_prefix) == std::string::npos;
    if (!other_lab) filtered.insert(e);
  }
  return filtered;
}

TEST_CASE("lab: up then TCP over a rail then down leaves the machine exactly as before",
          "[.root][serial][integration]") {
  testing::ScopedStateDir state;
  auto topo = LoadTopology(std::string(FL_SOURCE_DIR) + "/configs/labs/rail4.yaml");
  REQUIRE(topo.ok());
  auto lab = LocalLab::Create(*topo, testing::UniqueLabName());
  REQUIRE(lab.ok());
  LabGuard guard(lab->get());
  const std::string prefix = (*lab)->plan().prefix;
  auto before = Snapshot(prefix);

  REQUIRE((*lab)->Provision().ok());
  auto during = Snapshot(prefix);
  CHECK(during.size() > before.size());
  CHECK(during.count("netns " + prefix + "h3") == 1);
  CHECK(during.count("link " + (*lab)->plan().root_mgmt_if) == 1);

  // TCP between two hosts over the same rail (rail 1), and the management network.
  CHECK(testing::TcpWorks((*lab)->NetnsOf("h0"), (*lab)->NetnsOf("h3"),
                          *(*lab)->AddressOf("h3", "nic1"), 5 * kNsPerSec)
            .ok());
  CHECK(testing::TcpWorks(
            (*lab)->NetnsOf("h1"), (*lab)->NetnsOf("h2"),
            "198.19." + std::to_string(std::stoi((*lab)->plan().root_mgmt_addr.substr(7))) + ".3",
            5 * kNsPerSec)
            .ok());
  // Rails are separate networks: h0's rail-0 NIC cannot reach rail 1.
  auto off_rail = (*lab)->RunInHost(
      "h0", {"ip", "route", "get", *(*lab)->AddressOf("h3", "nic1"), "oif", "nic0"}, 5 * kNsPerSec);
  REQUIRE(off_rail.ok());
  CHECK(off_rail->out.find("via") == std::string::npos);  // no gateway: not routed

  // Describe: hosts, NICs, links and rates, read back from the kernel.
  auto d = (*lab)->Describe();
  REQUIRE(d.ok());
  int shaped_ports = 0;
  for (const auto& n : d->nodes)
    for (const auto& p : n.ports) {
      CHECK(p.admin_up);
      CHECK(p.carrier);
      if (p.shaped_bps == 1000000000) ++shaped_ports;
    }
  CHECK(shaped_ports == 16);  // both ends of 8 host links

  // A process left running inside a host and a container: down must remove both.
  auto c = (*lab)->StartContainer("h1", 1, {"sleep", "60"});
  REQUIRE(c.ok());
  pid_t stray = fork();
  if (stray == 0) {
    int fd = open(("/run/netns/" + (*lab)->NetnsOf("h2")).c_str(), O_RDONLY);
    setns(fd, CLONE_NEWNET);
    execlp("sleep", "sleep", "60", nullptr);
    _exit(127);
  }
  REQUIRE(WaitUntil(
      [&] {
        char buf[64] = {};
        ssize_t n =
            readlink(("/proc/" + std::to_string(stray) + "/ns/net").c_str(), buf, sizeof buf);
        struct stat st;
        stat(("/run/netns/" + (*lab)->NetnsOf("h2")).c_str(), &st);
        return n > 0 && std::string(buf, n) == "net:[" + std::to_string(st.st_ino) + "]";
      },
      Deadline::After(3 * kNsPerSec)));

  REQUIRE((*lab)->Teardown().ok());
  int status = 0;
  CHECK(waitpid(c->init_pid, &status, 0) == c->init_pid);
  CHECK(waitpid(stray, &status, 0) == stray);
  CHECK(WTERMSIG(status) == SIGKILL);
  auto after = Snapshot(prefix);
  std::vector<std::string> added, removed;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(added));
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(),
                      std::back_inserter(removed));
  INFO("left behind: " << ::Catch::Detail::stringify(added));
  INFO("went missing: " << ::Catch::Detail::stringify(removed));
  CHECK(added.empty());
  CHECK(removed.empty());
  CHECK(LocalLab::List().empty());
  CHECK((*lab)->Teardown().ok());  // idempotent
}

TEST_CASE("lab: two labs coexist and each topology comes up", "[.root][integration]") {
  testing::ScopedStateDir state;
  std::vector<std::unique_ptr<LocalLab>> labs;
  struct Down {
    std::vector<std::unique_ptr<LocalLab>>* labs;
    ~Down() {
      for (auto& l : *labs) l->Teardown().IgnoreError();
    }
  } down{&labs};
  for (const char* f : {"hpn4", "spine4"}) {
    auto t = LoadTopology(std::string(FL_SOURCE_DIR) + "/configs/labs/" + f + ".yaml");
    REQUIRE(t.ok());
    auto l = LocalLab::Create(*t, testing::UniqueLabName());
    REQUIRE(l.ok());
    labs.push_back(std::move(*l));
    REQUIRE(labs.back()->Provision().ok());
  }
  CHECK(labs[0]->plan().root_mgmt_addr != labs[1]->plan().root_mgmt_addr);
  // HPN: each NIC port reaches the same plane of another host.
  CHECK(testing::TcpWorks(labs[0]->NetnsOf("h0"), labs[0]->NetnsOf("h1"),
                          *labs[0]->AddressOf("h1", "nic1b"), 5 * kNsPerSec)
            .ok());
  // Two-tier: across pods through the spine.
  CHECK(testing::TcpWorks(labs[1]->NetnsOf("h0"), labs[1]->NetnsOf("h3"),
                          *labs[1]->AddressOf("h3", "nic0"), 5 * kNsPerSec)
            .ok());
  // Same addresses in both labs, no interference: they live in different namespaces.
  CHECK(*labs[0]->AddressOf("h1", "nic0a") == *labs[1]->AddressOf("h1", "nic0"));
  CHECK(LocalLab::List().size() == 2);
}

int RunCli(const std::vector<std::string>& args, std::string* out) {
  std::vector<std::string> argv = {FL_FAULTLINE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  injectors::CommandOptions o;
  o.timeout = 30 * kNsPerSec;
  auto r = injectors::RunCommand(argv, o);
  REQUIRE(r.ok());
  if (out) *out = r->out + r->err;
  return r->exit_code;
}

// Two `faultline lab up` at the same moment, each with its own state directory, so neither sees
// the other's state file: only the root namespace tells them apart, and the management address
// that shows a lab's subnet comes seconds after its choice (LocalLab::Provision's lock).
TEST_CASE("lab: two labs brought up at the same moment take different management subnets",
          "[.root][integration]") {
  testing::TempDir dir_a("fl_mgmt_a"), dir_b("fl_mgmt_b");
  const std::string name_a = testing::UniqueLabName(), name_b = testing::UniqueLabName();
  const std::string topo = std::string(FL_SOURCE_DIR) + "/configs/labs/rail4.yaml";
  auto cli = [&](const std::string& state, std::vector<std::string> args) {
    std::vector<std::string> argv = {FL_FAULTLINE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    injectors::CommandOptions o;
    o.timeout = 60 * kNsPerSec;
    o.env = CleanEnvironment({"FAULTLINE_STATE_DIR=" + state});
    return injectors::RunCommand(argv, o);
  };
  struct Down {
    std::function<void()> f;
    ~Down() { f(); }
  } down{[&] {
    cli(dir_a.path(), {"lab", "down", name_a}).status().IgnoreError();  // best effort
    cli(dir_b.path(), {"lab", "down", name_b}).status().IgnoreError();  // best effort
  }};
  StatusOr<injectors::CommandResult> up_a = UnavailableError("not run"), up_b = up_a;
  std::thread ta([&] { up_a = cli(dir_a.path(), {"lab", "up", topo, "--name", name_a}); });
  std::thread tb([&] { up_b = cli(dir_b.path(), {"lab", "up", topo, "--name", name_b}); });
  ta.join();
  tb.join();
  REQUIRE(up_a.ok());
  REQUIRE(up_b.ok());
  INFO(up_a->out << up_a->err << up_b->out << up_b->err);
  REQUIRE(up_a->exit_code == 0);
  REQUIRE(up_b->exit_code == 0);
  auto index = [](const std::string& state, const std::string& name) {
    auto j = LoadJsonFile(state + "/labs/" + name + ".json", InputKind::kLabState);
    REQUIRE(j.ok());
    return j->value("mgmt_index", -1);
  };
  const int ma = index(dir_a.path(), name_a), mb = index(dir_b.path(), name_b);
  CHECK(ma >= 0);
  CHECK(mb >= 0);
  CHECK(ma != mb);
  for (const auto& [state, name] : {std::pair{dir_a.path(), name_a}, {dir_b.path(), name_b}}) {
    auto r = cli(state, {"lab", "down", name});
    REQUIRE(r.ok());
    CHECK(r->exit_code == 0);
  }
}

TEST_CASE("lab CLI: up status exec down", "[.root][integration]") {
  testing::ScopedStateDir state;
  std::string name = testing::UniqueLabName();
  std::string out;
  struct Down {
    std::string name;
    ~Down() { RunCli({"lab", "down", name}, nullptr); }
  } down{name};
  REQUIRE(
      RunCli({"lab", "up", std::string(FL_SOURCE_DIR) + "/configs/labs/rail4.yaml", "--name", name},
             &out) == 0);
  REQUIRE(RunCli({"lab", "status", name}, &out) == 0);
  CHECK(out.find("h3.nic1") != std::string::npos);
  CHECK(out.find("tor1.h3") != std::string::npos);
  CHECK(out.find("1 Gbit/s") != std::string::npos);
  CHECK(RunCli({"lab", "exec", name, "h2", "--", "ip", "-o", "addr", "show", "dev", "nic1"},
               &out) == 0);
  CHECK(out.find("198.18.2.3/24") != std::string::npos);
  CHECK(RunCli({"lab", "exec", name, "h2", "--", "false"}, &out) == 1);
  CHECK(
      RunCli({"lab", "up", std::string(FL_SOURCE_DIR) + "/configs/labs/rail4.yaml", "--name", name},
             &out) == 3);
  CHECK(out.find("already up") != std::string::npos);
  REQUIRE(RunCli({"lab", "down", name}, &out) == 0);
  CHECK_FALSE(injectors::NetnsExists("fl-" + name + "-h0"));
  CHECK(RunCli({"lab", "status", name}, &out) == 2);
}

TEST_CASE("lab: a bad topology or fault spec creates nothing", "[.root][serial][integration]") {
  testing::ScopedStateDir state;
  char path[] = "/tmp/fl_badtopo_XXXXXX.yaml";
  int fd = mkstemps(path, 5);
  REQUIRE(fd >= 0);
  std::string text = "name: bad\nhosts: 2\nlink: {rate: 1gbit, mtu: 99999}\n";
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  auto before = injectors::ListNetns();
  std::string out;
  CHECK(RunCli({"lab", "up", path}, &out) == 2);
  CHECK(out.find(std::string(path) + ":3:") != std::string::npos);
  CHECK(out.find("mtu must be between") != std::string::npos);
  unlink(path);
  CHECK(injectors::ListNetns() == before);
  CHECK(LocalLab::List().empty());

  // A fault spec with an unknown target, against a running lab.
  auto l = testing::TestLab::Up(testing::kSmallRail);
  REQUIRE(l.ok());
  injectors::InjectorRegistry reg("injector");
  REQUIRE(injectors::RegisterBuiltinInjectors(reg).ok());
  auto doc = YamlDoc::Parse("kind: tor_port_down\ntarget: tor0.h9\n", "fault.yaml");
  REQUIRE(doc.ok());
  auto spec = ParseFaultSpec(*doc, doc->root(), reg, &(*l)->lab().fabric());
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.status().message().find("fault.yaml:2:9: ") == 0);
  CHECK(spec.status().message().find("unknown link target 'tor0.h9'") != std::string::npos);
  CHECK(injectors::FaultJournal().List()->empty());
}

TEST_CASE("lab CLI: inject reverts on SIGTERM and SIGHUP as on Ctrl-C", "[.root][integration]") {
  testing::ScopedStateDir state;
  std::string name = testing::UniqueLabName();
  std::string out;
  struct Down {
    std::string name;
    ~Down() { RunCli({"lab", "down", name}, nullptr); }
  } down{name};
  REQUIRE(
      RunCli({"lab", "up", std::string(FL_SOURCE_DIR) + "/configs/labs/rail4.yaml", "--name", name},
             &out) == 0);
  const std::string ns = "fl-" + name + "-h0";
  auto nic_up = [&] {
    return std::system(("ip -n " + ns + " -o link show nic0 | grep -q 'state UP'").c_str()) == 0;
  };
  REQUIRE(nic_up());
  for (int sig : {SIGTERM, SIGHUP, SIGINT}) {
    testing::ChildProcess::Options o;
    o.out = state.path() + "/inject.log";
    testing::ChildProcess inject(
        {FL_FAULTLINE_BIN, "lab", "inject", name, "nic_port_flap", "--target", "h0.nic0"}, o);
    INFO(strsignal(sig));
    // Held until a signal (no --for).
    REQUIRE(WaitUntil([&] { return !nic_up(); }, Deadline::After(30 * kNsPerSec), 20 * kNsPerMs));
    // The journal entry is written before the fault is applied: wait for the print that
    // follows verification, so the signal does not land before the hold.
    REQUIRE(WaitUntil(
        [&] { return ReadFile(o.out).value_or("").find("verified present") != std::string::npos; },
        Deadline::After(30 * kNsPerSec), 10 * kNsPerMs));
    kill(inject.pid(), sig);
    CHECK(inject.Wait(Deadline::After(30 * kNsPerSec)) == 130);
    CHECK(nic_up());
    auto left = injectors::FaultJournal().List();
    REQUIRE(left.ok());
    CHECK(left->empty());
  }
}

}  // namespace
}  // namespace fl::lab
