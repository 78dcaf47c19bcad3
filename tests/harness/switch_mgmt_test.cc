// The local lab's switch management plane (switch_control: ssh): the shim's tokenizer and
// command errors ([unit]); and, root-gated, a lab whose ToR is reached with the real OpenSSH
// client through the real sshd: port admin state, a drop ACL, refused keys and commands, and
// a teardown that leaves no sshd, namespace, key directory or cgroup.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <sstream>

#include "common/file_util.h"
#include "harness/lab/local_lab.h"
#include "harness/lab/switch_shim.h"
#include "harness/lab/topology.h"
#include "injectors/netlink.h"
#include "injectors/sys.h"
#include "injectors/tc_nft.h"
#include "tests/injectors/lab_testing.h"

namespace fl::lab {
namespace {

using Words = std::vector<std::string>;

TEST_CASE("switch shim: the tokenizer splits like a POSIX shell and refuses metacharacters",
          "[unit]") {
  auto ok = [](std::string_view line) {
    auto w = TokenizeCommand(line);
    REQUIRE(w.ok());
    return *w;
  };
  CHECK(ok("sudo config interface shutdown Ethernet0") ==
        Words{"sudo", "config", "interface", "shutdown", "Ethernet0"});
  CHECK(ok("  show   acl\ttable  ") == Words{"show", "acl", "table"});
  CHECK(ok("sonic-db-cli CONFIG_DB hset 'ACL_RULE|t1|DROP_ALL' PRIORITY 9999") ==
        Words{"sonic-db-cli", "CONFIG_DB", "hset", "ACL_RULE|t1|DROP_ALL", "PRIORITY", "9999"});
  CHECK(ok("a\\ b 'c d'\"e\"") == Words{"a b", "c de"});
  CHECK(ok("\"x\\\"y\\\\z\\n\"") == Words{"x\"y\\z\\n"});
  CHECK(ok("'it'\\''s' '' a#b") == Words{"it's", "", "a#b"});
  CHECK(ok("'; | & $ ` < > ( )'") == Words{"; | & $ ` < > ( )"});
  CHECK(ok("\\;\\|") == Words{";|"});
  CHECK(ok("").empty());
  for (const char* bad :
       {"show acl table; reboot", "a | b", "a && b", "a & b", "echo $HOME", "echo `id`",
        "echo $(id)", "a > f", "a < f", "(a)", "a)", "\"$x\"", "\"`id`\"", "'unterminated",
        "\"unterminated", "trailing\\", "# comment", "a\nb", "a\rb"}) {
    auto w = TokenizeCommand(bad);
    INFO(bad);
    CHECK(w.status().code() == Code::kInvalidArgument);
  }
  CHECK(TokenizeCommand("a;b").status().message().find("character 2 (';')") == 0);
}

TEST_CASE("switch shim: unknown commands, ports and keys are errors on stderr, exit 1", "[unit]") {
  testing::ScopedStateDir dir;
  const std::string state = dir.path() + "/tor0.json";
  REQUIRE(WriteFileAtomic(state, ShimStateJson("tor0", {{"Ethernet0", "h0", "1G", 1500},
                                                        {"Ethernet4", "h1", "1G", 1500}}))
              .ok());
  auto err = [&](const std::string& cmd) {
    ShimResult r = RunShimCommand("tor0", state, cmd);
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("Error: ", 0) == 0);
    return r.err;
  };
  CHECK(err("show version").find("unknown command 'show version'") != std::string::npos);
  CHECK(err("sudo reboot").find("unknown command 'reboot'") != std::string::npos);
  CHECK(err("").find("takes commands only") != std::string::npos);
  CHECK(err("sudo").find("takes commands only") != std::string::npos);
  CHECK(err("show interfaces status Ethernet99").find("Ethernet99 does not exist") !=
        std::string::npos);
  CHECK(err("config interface shutdown Ethernet8").find("Ethernet0, Ethernet4") !=
        std::string::npos);
  CHECK(err("show acl table; id").find("refused command") != std::string::npos);
  CHECK(err("config acl add table t1 L3 --stage egress --ports Ethernet9").find("Ethernet9") !=
        std::string::npos);
  CHECK(err("config acl add table t1 L3 --stage sideways").find("ingress or egress") !=
        std::string::npos);
  CHECK(err("config acl add table 'a b' L3").find("[A-Za-z0-9_-]") != std::string::npos);
  CHECK(err("sonic-db-cli CONFIG_DB hset 'ACL_RULE|t9|DROP_ALL' PRIORITY 1")
            .find("t9 does not "
                  "exist") != std::string::npos);
  CHECK(err("sonic-db-cli CONFIG_DB hset 'PORT|Ethernet0' admin_status down").find("ACL_RULE") !=
        std::string::npos);
  CHECK(err("sonic-db-cli APPL_DB del 'ACL_RULE|t1|R'").find("usage") != std::string::npos);
  // Empty listings print their headers; removing what is not there is fine.
  ShimResult t = RunShimCommand("tor0", state, "show acl table");
  CHECK(t.exit_code == 0);
  CHECK(t.out.rfind("Name  Type  Binding  Description  Stage  Status\n----", 0) == 0);
  CHECK(RunShimCommand("tor0", state, "show acl rule").out.rfind("Table  Rule  Priority", 0) == 0);
  CHECK(RunShimCommand("tor0", state, "sudo sonic-db-cli CONFIG_DB del 'ACL_RULE|t1|R'").out ==
        "0\n");
}

TEST_CASE("topology: switch_control netlink|ssh, and the switches' management addresses",
          "[unit]") {
  auto t = ParseTopology("name: a\nhosts: 2\nswitch_control: ssh\n", "lab.yaml");
  REQUIRE(t.ok());
  CHECK(t->switch_control == SwitchControl::kSsh);
  CHECK(ParseTopology("name: a\nhosts: 2\n", "lab.yaml")->switch_control ==
        SwitchControl::kNetlink);
  auto bad = ParseTopology("name: a\nhosts: 2\nswitch_control: telnet\n", "lab.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "lab.yaml:3:17: switch_control must be netlink or ssh, not 'telnet'");
  // 64 pods x 8 rails + a spine: more switches than management addresses.
  auto many = ParseTopology(
      "name: a\nhosts: 64\nnics_per_host: 8\nhosts_per_tor: 1\nspines: 1\nswitch_control: ssh\n",
      "lab.yaml");
  REQUIRE_FALSE(many.ok());
  CHECK(many.status().message().find("lab.yaml:6:17: ") == 0);
  CHECK(many.status().message().find("at most 150 switches, this topology has 513") !=
        std::string::npos);

  LabPlan p = PlanLab(*t, "x", 3);
  std::vector<std::string> mgmt;
  for (const auto& l : p.links)
    if (l.kind == LinkKind::kMgmt) mgmt.push_back(l.a_node + "=" + l.a_addr);
  CHECK(mgmt == Words{"h0=198.19.3.1/24", "h1=198.19.3.2/24", "tor0=198.19.3.100/24"});
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  CHECK(SwitchPorts(p, "tor0") == Pairs{{"Ethernet0", "h0"}, {"Ethernet4", "h1"}});
  CHECK(SwitchPorts(p, "h0").empty());

  auto spine = ParseTopology(
      "name: a\nhosts: 2\nhosts_per_tor: 1\nspines: 1\nswitch_control: ssh\n", "lab.yaml");
  REQUIRE(spine.ok());
  LabPlan ps = PlanLab(*spine, "x", 0);
  CHECK(SwitchPorts(ps, "tor0p1") == Pairs{{"Ethernet0", "h1"}, {"Ethernet4", "up0"}});
  CHECK(SwitchPorts(ps, "spine0") == Pairs{{"Ethernet0", "tor0p0"}, {"Ethernet4", "tor0p1"}});
  int switch_mgmt = 0;
  for (const auto& l : ps.links) switch_mgmt += l.kind == LinkKind::kMgmt && l.host < 0;
  CHECK(switch_mgmt == 3);  // tor0p0, tor0p1, spine0
}

// ---- root: the real SSH path ----------------------------------------------------------

// Pids whose command line mentions needle (the lab's management directory).
std::vector<int> PidsMentioning(const std::string& needle) {
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline");
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (s.find(needle) != std::string::npos) pids.push_back(pid);
  }
  closedir(d);
  return pids;
}

bool HasLine(const std::string& text, const std::string& pattern) {
  std::istringstream in(text);
  std::regex re(pattern);
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, re)) return true;
  return false;
}

TEST_CASE("lab switch_control ssh: a ToR driven over real SSH, and nothing left after teardown",
          "[.root][integration]") {
  testing::ScopedStateDir state;
  auto tl = testing::TestLab::Up(
      "name: x\nhosts: 2\ngpus_per_host: 1\nnics_per_host: 1\nlink: {rate: 1gbit}\n"
      "switch_control: ssh\n");
  REQUIRE(tl.ok());
  LocalLab& lab = (*tl)->lab();
  const std::string mgmt_dir = lab.MgmtDir();

  // What inventories and tests learn: address, key, known_hosts, port names.
  auto d = lab.Describe();
  REQUIRE(d.ok());
  CHECK(d->switch_control == "ssh");
  std::string tor_addr;
  for (const auto& n : d->nodes)
    if (n.name == "tor0") {
      tor_addr = n.mgmt_addr.substr(0, n.mgmt_addr.find('/'));
      for (const auto& p : n.ports)
        if (p.ifname == "h1") CHECK(p.sw_port == "Ethernet4");
    }
  REQUIRE(tor_addr.rfind("198.19.", 0) == 0);
  CHECK(tor_addr.ends_with(".100"));
  struct stat st;
  REQUIRE(stat(mgmt_dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(stat(d->ssh_key.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  // The Fabric: switch ports keep their kernel names and carry the switch's connection.
  auto ports = lab.fabric().HostLinks("tor0.h0", injectors::PortSide::kSwitch);
  REQUIRE(ports.ok());
  REQUIRE(ports->size() == 1);
  const injectors::Port& port = ports->front();
  CHECK(port.ifname == "h0");
  CHECK(port.netns == lab.NetnsOf("tor0"));
  REQUIRE(port.sw != nullptr);
  CHECK(port.sw_port == "Ethernet0");
  CHECK(port.sw->name == "tor0");
  CHECK(port.sw->driver == "ssh-template");
  CHECK(port.sw->address == tor_addr);
  CHECK(port.sw->user == "root");
  CHECK(port.sw->key_file == d->ssh_key);
  CHECK(port.sw->known_hosts == d->known_hosts);
  auto host_side = lab.fabric().HostLinks("h0", injectors::PortSide::kHost);
  REQUIRE(host_side.ok());
  CHECK(host_side->front().sw == nullptr);

  auto ssh = [&](const std::string& key, const std::string& cmd) {
    injectors::CommandOptions o;
    o.timeout = 15 * kNsPerSec;
    auto r = injectors::RunCommand({"/usr/bin/ssh",
                                    "-F",
                                    "/dev/null",
                                    "-i",
                                    key,
                                    "-o",
                                    "IdentitiesOnly=yes",
                                    "-o",
                                    "BatchMode=yes",
                                    "-o",
                                    "StrictHostKeyChecking=yes",
                                    "-o",
                                    "UserKnownHostsFile=" + d->known_hosts,
                                    "-o",
                                    "GlobalKnownHostsFile=/dev/null",
                                    "-o",
                                    "ConnectTimeout=5",
                                    "-p",
                                    "22",
                                    "-l",
                                    "root",
                                    tor_addr,
                                    cmd},
                                   o);
    REQUIRE(r.ok());
    return *r;
  };
  const std::string key = d->ssh_key;
  const std::string h0 = lab.NetnsOf("h0"), h1 = lab.NetnsOf("h1");
  const std::string h1_addr = *lab.AddressOf("h1", "nic0");
  auto carrier = [&] {
    auto s = injectors::GetLink(h0, "nic0");
    return s.ok() && s->carrier;
  };
  const std::string row = R"(^\s*Ethernet0\s+\S+\s+\S+\s+\d+\s+\S+\s+\S+\s+\S+\s+)";

  auto show = ssh(key, "show interfaces status Ethernet0");
  INFO(show.err);
  CHECK(show.exit_code == 0);
  CHECK(show.out.rfind("  Interface    Lanes    Speed    MTU    FEC    Alias    Vlan    Oper    "
                       "Admin    Type    Asym PFC\n",
                       0) == 0);
  CHECK(HasLine(show.out,
                "^  Ethernet0        0       1G   1500    N/A     etp1  routed      up  "
                "     up     N/A         N/A$"));
  CHECK(HasLine(show.out, row + "up\\s+up\\b"));
  CHECK_FALSE(HasLine(show.out, "Ethernet4"));
  CHECK(HasLine(ssh(key, "show interfaces status").out, R"(^\s*Ethernet4\s)"));

  // Port admin state: the host's NIC loses its carrier, and gets it back.
  auto down = ssh(key, "sudo config interface shutdown Ethernet0");
  CHECK(down.exit_code == 0);
  CHECK(WaitUntil([&] { return !carrier(); }, Deadline::After(3 * kNsPerSec)));
  CHECK(HasLine(ssh(key, "show interfaces status Ethernet0").out, row + "down\\s+down\\b"));
  CHECK(ssh(key, "sudo config interface startup Ethernet0").exit_code == 0);
  CHECK(WaitUntil([&] { return carrier(); }, Deadline::After(3 * kNsPerSec)));
  CHECK(HasLine(ssh(key, "show interfaces status Ethernet0").out, row + "up\\s+up\\b"));

  // A drop ACL: traffic stops while the carrier stays up; removing it restores traffic.
  REQUIRE(testing::TcpWorks(h0, h1, h1_addr, 5 * kNsPerSec).ok());
  CHECK(ssh(key,
            "sudo config acl add table fl_t1 L3 --description faultline --stage ingress "
            "--ports Ethernet0")
            .exit_code == 0);
  auto hset = ssh(key,
                  "sudo sonic-db-cli CONFIG_DB hset 'ACL_RULE|fl_t1|DROP_ALL' PRIORITY 9999 "
                  "PACKET_ACTION DROP");
  INFO(hset.err);
  CHECK(hset.exit_code == 0);
  CHECK(injectors::NftTableExists(lab.NetnsOf("tor0"), "bridge", "flsonic_fl_t1").value_or(false));
  CHECK(carrier());
  CHECK_FALSE(testing::TcpWorks(h0, h1, h1_addr, 1 * kNsPerSec).ok());
  CHECK(HasLine(ssh(key, "show acl rule fl_t1").out, R"(^fl_t1\s+DROP_ALL\s+9999\s+DROP\b)"));
  CHECK(HasLine(ssh(key, "show acl table fl_t1").out,
                R"(^fl_t1\s+L3\s+Ethernet0\s+faultline\s+ingress\b)"));
  CHECK(ssh(key, "sudo sonic-db-cli CONFIG_DB del 'ACL_RULE|fl_t1|DROP_ALL'").out == "1\n");
  CHECK(ssh(key, "sudo config acl remove table fl_t1").exit_code == 0);
  CHECK_FALSE(HasLine(ssh(key, "show acl table fl_t1").out, R"(^fl_t1\s)"));
  CHECK_FALSE(
      injectors::NftTableExists(lab.NetnsOf("tor0"), "bridge", "flsonic_fl_t1").value_or(true));
  CHECK(testing::TcpWorks(h0, h1, h1_addr, 5 * kNsPerSec).ok());
  // Egress: what the switch sends out of Ethernet4 (to h1).
  CHECK(ssh(key, "sudo config acl add table fl_t2 L3 --stage egress --ports Ethernet4").exit_code ==
        0);
  CHECK(ssh(key, "sudo sonic-db-cli CONFIG_DB hset 'ACL_RULE|fl_t2|DROP_ALL' PACKET_ACTION DROP")
            .out == "1\n");
  CHECK_FALSE(testing::TcpWorks(h0, h1, h1_addr, 1 * kNsPerSec).ok());
  CHECK(HasLine(ssh(key, "show acl table").out, R"(^fl_t2\s+L3\s+Ethernet4\s+egress\b)"));
  CHECK(ssh(key, "sudo config acl remove table fl_t2").exit_code == 0);
  CHECK(ssh(key, "show acl rule").out.find("fl_t2") == std::string::npos);
  CHECK(testing::TcpWorks(h0, h1, h1_addr, 5 * kNsPerSec).ok());

  // Counters (the preset's patterns): packets seen on Ethernet0; PFC all 0; no watchdog.
  auto counters = ssh(key, "show interfaces counters -i Ethernet0");
  CHECK(counters.exit_code == 0);
  CHECK(counters.out.rfind("      IFACE    STATE    RX_OK     RX_BPS    RX_UTIL    RX_ERR", 0) ==
        0);
  std::smatch m;
  const std::regex counter_row(
      R"(\s*Ethernet0\s+U\s+([\d,]+)\s+\S+\s+\S*B/s\s+(?:\S+/s\s+)?\S+%\s+\S+\s+([\d,]+)\s+\S+\s+([\d,]+)\s+\S+\s+\S*B/s\s+(?:\S+/s\s+)?\S+%\s+\S+\s+([\d,]+))");
  REQUIRE(std::regex_search(counters.out, m, counter_row));
  CHECK(m[1].str() != "0");
  CHECK(m[3].str() != "0");
  auto pfc = ssh(key, "show pfc counters");
  CHECK(pfc.exit_code == 0);
  CHECK(pfc.out.find("  Port Rx    PFC0") == 0);
  CHECK(pfc.out.find("\n\n  Port Tx    PFC0") != std::string::npos);
  CHECK(HasLine(pfc.out, R"(^Ethernet4(\s+0){8}$)"));
  auto wd = ssh(key, "show pfcwd config");
  CHECK(wd.exit_code == 0);
  CHECK(HasLine(wd.out, R"(^\s+PORT\s+ACTION\s+DETECTION TIME\s+RESTORATION TIME$)"));
  CHECK_FALSE(HasLine(wd.out, "Ethernet0"));

  // Refusals: an unknown command, an unknown port, shell syntax, a key the switch does not know.
  auto unknown = ssh(key, "show version");
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("Error:") != std::string::npos);
  CHECK(ssh(key, "show interfaces status Ethernet99").exit_code == 1);
  auto inject = ssh(key, "show interfaces status; touch " + state.path() + "/pwned");
  CHECK(inject.exit_code == 1);
  CHECK(access((state.path() + "/pwned").c_str(), F_OK) != 0);
  const std::string other = state.path() + "/other_key";
  REQUIRE(
      injectors::RunChecked({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other})
          .ok());
  auto refused = ssh(other, "show interfaces status");
  CHECK(refused.exit_code == 255);
  CHECK(refused.out.empty());

  // Teardown: no sshd, namespace, key directory or cgroup is left.
  CHECK_FALSE(PidsMentioning(mgmt_dir).empty());
  const std::string cgroup = lab.CgroupDir();
  REQUIRE(lab.Teardown().ok());
  CHECK(PidsMentioning(mgmt_dir).empty());
  for (const auto& ns : injectors::ListNetns()) CHECK(ns.rfind(lab.plan().prefix, 0) != 0);
  CHECK(access(mgmt_dir.c_str(), F_OK) != 0);
  CHECK(access(cgroup.c_str(), F_OK) != 0);
}

TEST_CASE("lab switch_control ssh: a provisioning failure removes what was built",
          "[.root][integration]") {
  testing::ScopedStateDir state;
  setenv("FAULTLINE_SWITCH_SHIM", "/nonexistent/faultline-switch-shim", 1);
  auto t = ParseTopology("name: x\nhosts: 2\nswitch_control: ssh\n", "<test>");
  REQUIRE(t.ok());
  auto lab = LocalLab::Create(*t, testing::UniqueLabName());
  REQUIRE(lab.ok());
  Status s = (*lab)->Provision();
  unsetenv("FAULTLINE_SWITCH_SHIM");
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK(s.message().find("faultline-switch-shim") != std::string::npos);
  for (const auto& ns : injectors::ListNetns()) CHECK(ns.rfind((*lab)->plan().prefix, 0) != 0);
  CHECK(access((*lab)->MgmtDir().c_str(), F_OK) != 0);
  CHECK(LocalLab::List().empty());
}

}  // namespace
}  // namespace fl::lab
