// The fixture of the "real hosts are local-lab namespaces" tests, tested by itself: the unit
// file and diff logic ([unit]), and on a real 2-host lab ([.root]) supervised agents that are
// restarted after kill -9, snapshots that see an nft table come and go, and PFC frames counted
// on the switch side of a host link.
#include "tests/harness/site_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "common/file_util.h"
#include "harness/control/certs.h"
#include "harness/lab/inventory.h"
#include "harness/lab/local_lab.h"
#include "injectors/pfc.h"
#include "injectors/sys.h"
#include "injectors/tc_nft.h"
#include "tests/injectors/lab_testing.h"

namespace fl::testing {
namespace {

TEST_CASE("site fixture: the agent's command from a systemd unit's ExecStart", "[unit]") {
  auto exec = UnitExecStart(
      "[Unit]\nDescription=x\n[Service]\nRestart=always\n"
      "ExecStart=-/usr/local/bin/faultline-agent --coordinator ${COORD} \\\n"
      "  --token-file=/etc/faultline/token --host %H --no-tls \"--connect-timeout\" 3600\n");
  REQUIRE(exec.ok());
  CHECK(*exec == std::vector<std::string>{"/usr/local/bin/faultline-agent", "--coordinator",
                                          "${COORD}", "--token-file=/etc/faultline/token", "--host",
                                          "%H", "--no-tls", "--connect-timeout", "3600"});
  auto argv = UnitCommandWith(*exec, "/b/faultline-agent",
                              {{"--coordinator", "1.2.3.4:5"},
                               {"--host", "h0"},
                               {"--token-file", "/t/token"},
                               {"--journal-dir", "/t/j"}});
  // Ours replace the unit's values; the unit's own settings stay; ours it lacks are appended.
  CHECK(argv == std::vector<std::string>{"/b/faultline-agent", "--coordinator", "1.2.3.4:5",
                                         "--token-file", "/t/token", "--host", "h0", "--no-tls",
                                         "--connect-timeout", "3600", "--journal-dir", "/t/j"});
  // A value only the site knows (a variable, a path of its own) is dropped with its flag.
  auto site = UnitCommandWith(
      {"a", "--tls-dir", "${TLS}", "--worker", "/usr/lib/w", "--policy", "/p", "--x", "7"}, "b",
      {{"--policy", "/mine"}});
  CHECK(site == std::vector<std::string>{"b", "--policy", "/mine", "--x", "7"});
  CHECK(UnitExecStart("[Service]\nRestart=always\n").status().code() == Code::kNotFound);
}

TEST_CASE("site fixture: the inventory it writes, plain and for Slurm", "[unit]") {
  InventoryFixtureOptions o;
  o.ranks_per_host = 2;
  const std::vector<InventoryHostNics> hosts = {
      {"h0", {{"nic0", "198.18.0.1"}, {"nic1", "198.18.2.1"}}},
      {"h1", {{"nic0", "198.18.0.2"}, {"nic1", "198.18.2.2"}}}};
  const std::string text = InventoryYaml(o, "t1", "198.19.3.254:4000", "/x/token", hosts);
  INFO(text);
  auto inv = lab::ParseInventory(text, "inv.yaml");
  REQUIRE(inv.ok());
  CHECK(inv->name == "t1");
  CHECK(inv->listen == "198.19.3.254:4000");
  CHECK(inv->token_file == "/x/token");
  CHECK(inv->world_size() == 4);
  REQUIRE(inv->hosts.size() == 2);
  REQUIRE(inv->hosts[1].nics.size() == 2);
  CHECK(inv->hosts[1].nics[1].name == "nic1");
  CHECK(inv->hosts[1].nics[1].ifname == "nic1");
  CHECK(inv->hosts[1].nics[1].address == "198.18.2.2");
  CHECK(text.find("launcher") == std::string::npos);
  o.slurm_launcher = true;
  CHECK(InventoryYaml(o, "t1", "a:1", "/t", hosts).find("\nlauncher: slurm\n") !=
        std::string::npos);
}

TEST_CASE("site fixture: Diff names what appeared and what went away", "[unit]") {
  HostSnapshot a;
  NodeState h0;
  h0.node = "h0";
  LinkState nic;
  nic.ifname = "nic0";
  nic.admin_up = nic.carrier = true;
  nic.qdiscs.push_back({"tbf", "1:", "root", "{\"rate\":125000000}"});
  h0.links.push_back(nic);
  a.nodes.push_back(h0);
  CHECK(Diff(a, a).empty());
  HostSnapshot b = a;
  b.nodes[0].nft_tables.push_back("netdev fl_bh");
  b.nodes[0].links[0].carrier = false;
  b.nodes[0].links[0].qdiscs[0] = {"mq", "1:", "root", ""};
  b.cgroups.push_back("inv-t1-h0/rank0");
  auto d = Diff(a, b);
  INFO(FormatDiff(d));
  CHECK(std::set<std::string>(d.begin(), d.end()) ==
        std::set<std::string>{"+ h0: nft table netdev fl_bh", "+ h0 nic0: link up, carrier down",
                              "+ h0 nic0: qdisc mq at root", "+ cgroup faultline/inv-t1-h0/rank0",
                              "- h0 nic0: link up, carrier up",
                              "- h0 nic0: qdisc tbf at root {\"rate\":125000000}"});
  b.errors.push_back("h0: nft: exit 1");
  CHECK(Diff(a, b).back() == "! cannot read: h0: nft: exit 1");
}

TEST_CASE("site fixture: a qdisc tree rebuilt with new handles is the same tree", "[unit]") {
  auto snap = [](const std::string& root, const std::string& q2_options) {
    HostSnapshot s;
    NodeState n;
    n.node = "h0";
    LinkState l;
    l.ifname = "ens1";
    // A real NIC's tree: mq at the root, a child per queue, listed in any order.
    l.qdiscs = {{"fq_codel", "0:", root + "2", q2_options},
                {"mq", root, "root", ""},
                {"fq_codel", "0:", root + "1", "{}"},
                {"ingress", "ffff:", "ingress", ""}};
    n.links.push_back(l);
    s.nodes.push_back(n);
    return s;
  };
  const HostSnapshot before = snap("8001:", "{\"limit\":10240}");
  const std::vector<std::string> facts = before.Facts();
  CHECK(std::count(facts.begin(), facts.end(),
                   "h0 ens1: qdisc fq_codel at root/2 {\"limit\":10240}") == 1);
  CHECK(std::count(facts.begin(), facts.end(), "h0 ens1: qdisc ingress at ingress") == 1);
  CHECK(Diff(before, snap("8005:", "{\"limit\":10240}")).empty());
  CHECK(Diff(before, snap("8005:", "{\"limit\":10240}"), {.exact_handles = true}).size() == 6);
  auto changed = Diff(before, snap("8005:", "{\"limit\":99}"));
  INFO(FormatDiff(changed));
  CHECK(changed ==
        std::vector<std::string>{"+ h0 ens1: qdisc fq_codel at root/2 {\"limit\":99}",
                                 "- h0 ens1: qdisc fq_codel at root/2 {\"limit\":10240}"});
  // Within a tolerance, numbers that tc rounded are the same; a real change is not.
  CHECK(Diff(before, snap("8005:", "{\"limit\":10200}"), {.tolerance = 0.01}).empty());
  CHECK(Diff(before, snap("8005:", "{\"limit\":10200}")).size() == 2);
  CHECK(Diff(before, snap("8005:", "{\"limit\":99}"), {.tolerance = 0.01}).size() == 2);
}

// Accepts TCP connections on addr:port and closes them, counting them by peer address: the
// agents dial it and retry, as they would before their coordinator is up.
class DummyListener {
 public:
  DummyListener(const std::string& addr, int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
    ok_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
          listen(fd_, 16) == 0;
    if (ok_) thread_ = std::thread([this] { Loop(); });
  }
  ~DummyListener() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return ok_; }
  int from(const std::string& peer) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(peer);
    return it == peers_.end() ? 0 : it->second;
  }
  size_t peers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return peers_.size();
  }

 private:
  void Loop() {
    while (!stop_.load()) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      sockaddr_in peer{};
      socklen_t len = sizeof peer;
      int c = accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
      if (c < 0) continue;
      char buf[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &peer.sin_addr, buf, sizeof buf);
      close(c);
      std::lock_guard<std::mutex> lock(mu_);
      ++peers_[buf];
    }
  }
  int fd_ = -1;
  bool ok_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::map<std::string, int> peers_;
};

// A host's management address as its agent dials from it.
std::string MgmtAddrOf(const lab::LocalLab& l, const std::string& host) {
  auto d = l.Describe();
  if (!d.ok()) return "";
  for (const auto& n : d->nodes)
    if (n.name == host) return n.mgmt_addr.substr(0, n.mgmt_addr.find('/'));
  return "";
}

TEST_CASE(
    "site fixture: a 2-host inventory lab, supervised agents restarted after kill -9, snapshots "
    "that see an nft table, PFC frames counted on the switch side, nothing left behind",
    "[.root][integration]") {
  ScopedStateDir state;  // the lab's state file
  InventoryFixtureOptions o;
  o.hosts = 2;
  o.ranks_per_host = 2;
  o.nics_per_host = 2;
  o.connect_timeout_s = 600;     // they keep dialling for the whole test
  o.stop_grace = 2 * kNsPerSec;  // and are stuck dialling when stopped
  std::string name, dir;
  {
    auto made = InventoryFixture::Create(o);
    REQUIRE(made.ok());
    InventoryFixture& fx = **made;
    name = fx.name();
    dir = fx.dir();
    REQUIRE(fx.hosts() == std::vector<std::string>{"h0", "h1"});

    // The files: an inventory the project's own parser accepts, with the hosts' NICs by
    // ifname and address and the coordinator on the root's management address; the lab's
    // certificates for the coordinator and each host.
    auto inv = lab::LoadInventory(fx.inventory_path());
    INFO(ReadFile(fx.inventory_path()).value_or(""));
    REQUIRE(inv.ok());
    CHECK(inv->name == fx.name());
    CHECK(inv->listen == fx.listen());
    CHECK(inv->token_file == fx.token_path());
    REQUIRE(inv->hosts.size() == 2);
    CHECK(inv->hosts[1].ranks == 2);
    REQUIRE(fx.nics_of("h1") == std::vector<std::string>{"nic0", "nic1"});
    REQUIRE(inv->hosts[1].nics.size() == 2);
    CHECK(inv->hosts[1].nics[1].ifname == "nic1");
    CHECK(inv->hosts[1].nics[1].address == fx.address_of("h1", "nic1"));
    CHECK(!fx.address_of("h1", "nic1").empty());
    CHECK(harness::LoadTlsMaterial(fx.tls_dir(), harness::CertRole::kCoordinator, "coord").ok());
    for (const auto& h : fx.hosts())
      CHECK(harness::LoadTlsMaterial(fx.tls_dir(), harness::CertRole::kAgent, h).ok());
    const std::string policy = ReadFile(fx.policy_path()).value_or("");
    for (const auto& k : HostSideFaultKinds()) CHECK(policy.find(k) != std::string::npos);
    auto argv = fx.AgentArgv("h0");
    CHECK(std::find(argv.begin(), argv.end(), fx.journal_dir("h0")) != argv.end());

    const HostSnapshot pristine = fx.Snapshot();
    INFO(FormatDiff(pristine.errors));
    CHECK(pristine.errors.empty());
    CHECK(pristine.processes.empty());
    const std::vector<std::string> facts = pristine.Facts();
    CHECK(std::count(facts.begin(), facts.end(), "h0 nic0: link up, carrier up") == 1);
    CHECK(std::count(facts.begin(), facts.end(), "h1 mgmt0: link up, carrier up") == 1);

    // Agents under supervision dial the (dummy) coordinator from their own namespaces.
    DummyListener listener(fx.mgmt_addr(), fx.port());
    REQUIRE(listener.ok());
    REQUIRE(fx.StartAgents().ok());
    const std::string h0_mgmt = MgmtAddrOf(fx.lab(), "h0"), h1_mgmt = MgmtAddrOf(fx.lab(), "h1");
    bool dialled =
        WaitUntil([&] { return listener.from(h0_mgmt) > 0 && listener.from(h1_mgmt) > 0; },
                  Deadline::After(30 * kNsPerSec), 20 * kNsPerMs);
    INFO(fx.AgentLogText("h0") + fx.AgentLogText("h1"));
    REQUIRE(dialled);
    auto running = fx.Snapshot();
    CHECK(running.processes.size() == 2);

    // kill -9: the supervisor starts a new instance with a log of its own, which dials again.
    const pid_t first = fx.agent_pid("h0");
    REQUIRE(first > 0);
    REQUIRE(fx.KillAgent("h0", SIGKILL).ok());
    REQUIRE(fx.WaitAgentRestarts("h0", 1, Deadline::After(30 * kNsPerSec)));
    CHECK(fx.agent_pid("h0") != first);
    CHECK(fx.agent_exits("h0") == std::vector<int>{-SIGKILL});
    CHECK(fx.agent_logs("h0").size() == 2);
    CHECK(fx.agent_restarts("h1") == 0);
    const int dials = listener.from(h0_mgmt);
    CHECK(WaitUntil([&] { return listener.from(h0_mgmt) > dials; }, Deadline::After(30 * kNsPerSec),
                    20 * kNsPerMs));

    // A deliberate change in a host namespace is in the diff, and gone once undone.
    const HostSnapshot before = fx.Snapshot();
    injectors::CommandOptions in_h1;
    in_h1.netns = fx.netns_of("h1");
    REQUIRE(
        injectors::RunChecked({"/usr/sbin/nft", "add", "table", "inet", "fl_fixture_probe"}, in_h1)
            .ok());
    auto d = Diff(before, fx.Snapshot());
    INFO(FormatDiff(d));
    CHECK(d == std::vector<std::string>{"+ h1: nft table inet fl_fixture_probe"});
    REQUIRE(injectors::RunChecked({"/usr/sbin/nft", "delete", "table", "inet", "fl_fixture_probe"},
                                  in_h1)
                .ok());
    auto undone = Diff(before, fx.Snapshot());
    INFO(FormatDiff(undone));
    CHECK(undone.empty());

    // PFC frames from h0's NIC arrive on the ToR's port of that link, not on h1's port.
    auto h0_far = fx.SwitchSideOf("h0", "nic0");
    auto h1_far = fx.SwitchSideOf("h1", "nic0");
    REQUIRE(h0_far.ok());
    REQUIRE(h1_far.ok());
    auto cap = PfcCapture::Start(h0_far->netns, h0_far->ifname);
    REQUIRE(cap.ok());
    auto other = PfcCapture::Start(h1_far->netns, h1_far->ifname);
    REQUIRE(other.ok());
    injectors::PfcFrame frame;
    frame.class_enable = 1 << 3;
    frame.quanta[3] = 0xffff;
    auto gen = injectors::PfcGenerator::Start(fx.netns_of("h0"), "nic0", frame, 1000);
    REQUIRE(gen.ok());
    CHECK((*cap)->WaitCount(100, Deadline::After(10 * kNsPerSec)));
    (*gen)->Stop();
    // What was sent has arrived once the capture has drained its socket.
    CHECK(WaitUntil([&] { return (*cap)->count() >= (*gen)->sent(); },
                    Deadline::After(5 * kNsPerSec), 5 * kNsPerMs));
    (*cap)->Stop();
    (*other)->Stop();
    CHECK((*cap)->count() == (*gen)->sent());
    CHECK((*cap)->last_class_enable() == (1 << 3));
    CHECK((*other)->count() == 0);

    // Stopped agents leave nothing behind (they were stuck dialling: SIGKILL after the grace).
    // (An agent still dialling does not end on SIGTERM before its --connect-timeout: killed.)
    fx.StopAgents().IgnoreError();
    CHECK(fx.agent_pid("h0") == -1);
    auto after = Diff(pristine, fx.Snapshot());
    INFO(FormatDiff(after));
    CHECK(after.empty());
  }
  // The fixture's teardown: no namespace, cgroup, process or state file of its lab remains.
  auto left = RemainsOf(name, dir);
  INFO(FormatDiff(left));
  CHECK(left.empty());
}

// Runs argv in netns; fails the test when it does not succeed.
void InNs(const std::string& netns, const std::vector<std::string>& argv) {
  injectors::CommandOptions o;
  o.netns = netns;
  auto r = injectors::RunChecked(argv, o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
}

// Lines of d that start with prefix.
size_t CountPrefixed(const std::vector<std::string>& d, const std::string& prefix) {
  return std::count_if(d.begin(), d.end(),
                       [&](const std::string& l) { return l.rfind(prefix, 0) == 0; });
}

TEST_CASE("site fixture: Snapshot sees each trace a host-side fault can leave, and its undoing",
          "[.root][integration]") {
  ScopedStateDir state;
  InventoryFixtureOptions o;
  o.hosts = 2;
  o.ranks_per_host = 1;
  o.nics_per_host = 2;
  auto made = InventoryFixture::Create(o);
  REQUIRE(made.ok());
  InventoryFixture& fx = **made;
  const std::string ns = fx.netns_of("h0");
  const HostSnapshot pristine = fx.Snapshot();
  REQUIRE(pristine.errors.empty());
  auto diff_now = [&] { return Diff(pristine, fx.Snapshot()); };
  double tolerance = 0;  // exact, but after the qdisc section

  SECTION("a link taken down") {
    InNs(ns, {"/usr/sbin/ip", "link", "set", "nic1", "down"});
    auto d = diff_now();
    InNs(ns, {"/usr/sbin/ip", "link", "set", "nic1", "up"});
    INFO(FormatDiff(d));
    // The switch's end of the link loses its carrier with it.
    const std::string far = fx.SwitchSideOf("h0", "nic1")->netns.substr(fx.netns_of("").size());
    CHECK(std::set<std::string>(d.begin(), d.end()) ==
          std::set<std::string>{
              "+ h0 nic1: link down, carrier down", "- h0 nic1: link up, carrier up",
              "+ " + far + " h0: link up, carrier down", "- " + far + " h0: link up, carrier up"});
  }
  SECTION("a netdev nft table (blackhole, loss)") {
    InNs(ns, {"/usr/sbin/nft", "add", "table", "netdev", "fl_probe"});
    auto d = diff_now();
    InNs(ns, {"/usr/sbin/nft", "delete", "table", "netdev", "fl_probe"});
    CHECK(d == std::vector<std::string>{"+ h0: nft table netdev fl_probe"});
  }
  SECTION("a root qdisc replaced (throttle), then restored as the injectors restore it") {
    auto saved = injectors::ReadRootQdisc(ns, "nic1");
    REQUIRE(saved.ok());
    REQUIRE(injectors::SetTbf(ns, "nic1", 200'000'000, 64 * 1024).ok());
    auto d = diff_now();
    INFO(FormatDiff(d));
    CHECK(CountPrefixed(d, "+ h0 nic1: qdisc tbf at root ") == 1);
    CHECK(CountPrefixed(d, "- h0 nic1: qdisc tbf at root ") == 1);
    CHECK(d.size() == 2);
    REQUIRE(injectors::RestoreRootQdisc(ns, "nic1", *saved).ok());
    // tc rounds what it is given back: the restored tbf is the same within 1 %, not exactly.
    auto restored = diff_now();
    INFO(FormatDiff(restored));
    CHECK(Diff(pristine, fx.Snapshot(), {.tolerance = 0.01}).empty());
    tolerance = 0.01;
  }
  SECTION("a clsact qdisc with an ingress filter") {
    InNs(ns, {"/usr/sbin/tc", "qdisc", "add", "dev", "nic1", "clsact"});
    // (u32 without an action: this kernel may lack cls_matchall and act_gact.)
    InNs(ns, {"/usr/sbin/tc", "filter", "add", "dev", "nic1", "ingress", "u32", "match", "u32", "0",
              "0", "flowid", "1:1"});
    auto d = diff_now();
    InNs(ns, {"/usr/sbin/tc", "qdisc", "del", "dev", "nic1", "clsact"});
    INFO(FormatDiff(d));
    CHECK(CountPrefixed(d, "+ h0 nic1: qdisc clsact at clsact") == 1);
    CHECK(CountPrefixed(d, "+ h0 nic1: filter ingress: ") >= 1);
    CHECK(CountPrefixed(d, "- ") == 0);
  }
  SECTION("a rank's cgroup and a journal entry") {
    auto root = injectors::Cgroup2Root();
    REQUIRE(root.ok());
    const std::string parent = *root + "/faultline";
    const bool made_parent = mkdir(parent.c_str(), 0755) == 0;  // else it is there already
    const std::string cg = parent + "/inv-" + fx.name() + "-h0";
    REQUIRE(mkdir(cg.c_str(), 0755) == 0);
    REQUIRE(WriteFileAtomic(fx.journal_dir("h1") + "/f1.json", "{}").ok());
    auto d = diff_now();
    rmdir(cg.c_str());
    if (made_parent) rmdir(parent.c_str());  // fails harmlessly when another test uses it now
    REQUIRE(unlink((fx.journal_dir("h1") + "/f1.json").c_str()) == 0);
    INFO(FormatDiff(d));
    CHECK(d == std::vector<std::string>{"+ cgroup faultline/inv-" + fx.name() + "-h0",
                                        "+ h1: journal entry f1.json"});
  }
  auto undone = Diff(pristine, fx.Snapshot(), {.tolerance = tolerance});
  INFO(FormatDiff(undone));
  CHECK(undone.empty());
}

}  // namespace
}  // namespace fl::testing
