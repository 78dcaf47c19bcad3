// Unit tests of the ssh-template switch driver against a fake OpenSSH client: a shell script
// that records its argv and the remote command, and answers with canned output chosen by a
// substring of the remote command. No network, no switch.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/file_util.h"
#include "injectors/switch/ssh_template/internal.h"
#include "injectors/switch/ssh_template/ssh_template_driver.h"
#include "injectors/switch/switch_driver.h"
#include "injectors/switch_drivers.h"

namespace fl::injectors {
namespace {

namespace fs = std::filesystem;

std::string SourceFile(const std::string& rel) { return std::string(FL_SOURCE_DIR) + "/" + rel; }

std::string Slurp(const std::string& path) {
  auto r = ReadFile(path);
  return r.ok() ? *r : std::string();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A temp directory with the fake ssh and its rules.
class FakeSsh {
 public:
  FakeSsh() {
    std::string templ = (fs::temp_directory_path() / "fl-fake-ssh-XXXXXX").string();
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    REQUIRE(mkdtemp(buf.data()) != nullptr);
    dir_ = buf.data();
    fs::create_directory(dir_ + "/rules");
    // clang-format off
    std::string script = R"SH(#!/bin/sh
D=')SH" + dir_ + R"SH('
printf '%s\n' "$0" >> "$D/argv"
for a in "$@"; do printf '%s\n' "$a" >> "$D/argv"; done
printf '%s\n' '----' >> "$D/argv"
for a in "$@"; do
  case "$a" in
    UserKnownHostsFile=*) cat "${a#UserKnownHostsFile=}" >> "$D/kh" 2>/dev/null ;;
  esac
done
seen=0; cmd=""
for a in "$@"; do
  if [ $seen = 2 ]; then cmd="$cmd${cmd:+ }$a"; fi
  if [ $seen = 1 ]; then seen=2; fi
  if [ $seen = 0 ] && [ "$a" = "--" ]; then seen=1; fi
done
printf '%s\n' "$cmd" >> "$D/cmds"
for r in "$D"/rules/*; do
  [ -d "$r" ] || continue
  m=$(cat "$r/match")
  e=$(cat "$r/exit")
  case "$cmd" in
    *"$m"*)
      if [ -f "$r/times" ]; then
        n=$(cat "$r/times")
        [ "$n" -gt 0 ] || continue
        echo $((n - 1)) > "$r/times"
      fi
      if [ -f "$r/sleep" ]; then sleep "$(cat "$r/sleep")"; fi
      cat "$r/out"; cat "$r/err" >&2; exit "$e" ;;
  esac
done
exit 0
)SH";
    // clang-format on
    std::ofstream(dir_ + "/ssh") << script;
    chmod((dir_ + "/ssh").c_str(), 0755);
  }
  ~FakeSsh() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The first rule (in the order added) whose match is a substring of the remote command wins.
  // times > 0: the rule answers only its first `times` matches; sleep_s: it sleeps first.
  void Rule(const std::string& match, int exit_code, const std::string& out,
            const std::string& err = "", int times = 0, int sleep_s = 0) {
    char name[16];
    snprintf(name, sizeof name, "%03d", rules_++);
    std::string r = dir_ + "/rules/" + name;
    fs::create_directory(r);
    std::ofstream(r + "/match") << match;
    std::ofstream(r + "/exit") << exit_code;
    std::ofstream(r + "/out") << out;
    std::ofstream(r + "/err") << err;
    if (times > 0) std::ofstream(r + "/times") << times;
    if (sleep_s > 0) std::ofstream(r + "/sleep") << sleep_s;
  }

  std::string path() const { return dir_ + "/ssh"; }
  std::vector<std::string> Cmds() const { return Lines(Slurp(dir_ + "/cmds")); }
  std::vector<std::string> Argv() const {  // of the first call
    std::vector<std::string> a;
    for (const auto& l : Lines(Slurp(dir_ + "/argv"))) {
      if (l == "----") break;
      a.push_back(l);
    }
    return a;
  }
  std::string KnownHostsSeen() const { return Slurp(dir_ + "/kh"); }

 private:
  std::string dir_;
  int rules_ = 0;
};

SwitchConn Conn(const FakeSsh& ssh, const std::string& preset = "sonic") {
  SwitchConn c;
  c.name = "leaf1";
  c.address = "198.19.3.201";
  c.user = "admin";
  c.key_file = "/etc/faultline/switch_key";
  c.known_hosts = "/etc/faultline/switch_known_hosts";
  c.ssh = ssh.path();
  c.preset = SourceFile("configs/switches/" + preset + ".yaml");
  c.preset_text = Slurp(c.preset);
  c.connect_timeout = 3 * kNsPerSec;
  return c;
}

std::unique_ptr<SwitchDriver> Open(const SwitchConn& c) {
  auto d = OpenSwitchDriver(c);
  INFO(d.status().ToString());
  REQUIRE(d.ok());
  return std::move(d).value();
}

Deadline Soon(Nanos ns = 3 * kNsPerSec) { return Deadline::After(ns); }

bool Contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

const char* kStatusHeader =
    "  Interface    Lanes    Speed    MTU    FEC    Alias    Vlan    Oper    Admin    Type    "
    "Asym PFC\n"
    "-----------  -------  -------  -----  -----  -------  ------  ------  -------  ------  "
    "----------\n";

std::string StatusRow(const std::string& port, const std::string& oper, const std::string& admin) {
  return "  " + port + "        0       1G   1500    N/A     etp1  routed    " + oper + "       " +
         admin + "     N/A         N/A\n";
}

TEST_CASE("switch driver: ssh-template is registered", "[unit]") {
  auto names = SwitchDriverNames();
  CHECK(std::find(names.begin(), names.end(), "ssh-template") != names.end());
}

TEST_CASE("switch driver: posix quoting", "[unit]") {
  CHECK(PosixShellQuote("Ethernet12") == "Ethernet12");
  CHECK(PosixShellQuote("--stage") == "--stage");
  CHECK(PosixShellQuote("ACL_RULE|FL_a_0|DROP_ALL") == "'ACL_RULE|FL_a_0|DROP_ALL'");
  CHECK(PosixShellQuote("it's") == "'it'\\''s'");
  CHECK(PosixShellQuote("") == "''");
  CHECK(PosixShellQuote("a b") == "'a b'");
}

TEST_CASE("switch driver: the ssh argv is built exactly", "[unit]") {
  FakeSsh ssh;
  ssh.Rule("show interfaces status", 0,
           std::string(kStatusHeader) + StatusRow("Ethernet12", "down", "down"));
  SwitchConn c = Conn(ssh);
  c.port = 2222;
  c.jump = "ops@bastion.example.net:2200";
  auto d = Open(c);
  Status s = d->SetPortAdmin("Ethernet12", false, Soon());
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::vector<std::string> want = {ssh.path(),
                                   "-F",
                                   "/dev/null",
                                   "-o",
                                   "BatchMode=yes",
                                   "-o",
                                   "ConnectTimeout=3",
                                   "-o",
                                   "StrictHostKeyChecking=yes",
                                   "-o",
                                   "UserKnownHostsFile=/etc/faultline/switch_known_hosts",
                                   "-o",
                                   "GlobalKnownHostsFile=/dev/null",
                                   "-o",
                                   "IdentitiesOnly=yes",
                                   "-o",
                                   "PasswordAuthentication=no",
                                   "-o",
                                   "LogLevel=ERROR",
                                   "-i",
                                   "/etc/faultline/switch_key",
                                   "-p",
                                   "2222",
                                   "-l",
                                   "admin",
                                   "-J",
                                   "ops@bastion.example.net:2200",
                                   "--",
                                   "198.19.3.201",
                                   "sudo",
                                   "config",
                                   "interface",
                                   "shutdown",
                                   "Ethernet12"};
  CHECK(ssh.Argv() == want);
  CHECK(ssh.Cmds() == std::vector<std::string>{"sudo config interface shutdown Ethernet12",
                                               "show interfaces status Ethernet12"});
}

TEST_CASE("switch driver: a drop rule is added with quoted words and verified", "[unit]") {
  FakeSsh ssh;
  ssh.Rule("show acl rule FL_a_0", 0,
           "Table    Rule      Priority    Action    Match\n"
           "-------  --------  ----------  --------  -------\n"
           "FL_a_0   DROP_ALL  9999        DROP      N/A\n");
  auto d = Open(Conn(ssh));
  Status s = d->AddDrop("Ethernet4", SwitchStage::kEgress, "FL_a_0", Soon());
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(ssh.Cmds() ==
        std::vector<std::string>{
            "sudo config acl add table FL_a_0 L3 --description faultline --stage egress --ports "
            "Ethernet4",
            "sudo sonic-db-cli CONFIG_DB hset 'ACL_RULE|FL_a_0|DROP_ALL' PRIORITY 9999 "
            "PACKET_ACTION DROP",
            "show acl rule FL_a_0"});
}

TEST_CASE("switch driver: bad arguments are refused before anything runs", "[unit]") {
  FakeSsh ssh;
  auto d = Open(Conn(ssh));
  Status s = d->SetPortAdmin("Ethernet1; reboot", false, Soon());
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(Contains(s.message(), "port_pattern"));
  s = d->AddDrop("Ethernet1", SwitchStage::kIngress, "two words", Soon());
  CHECK(s.code() == Code::kInvalidArgument);
  s = d->AddDrop("Ethernet1", SwitchStage::kIngress, std::string(33, 'a'), Soon());
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(d->ReadPort("eth0", Soon()).status().code() == Code::kInvalidArgument);
  CHECK(d->CheckPortName("Ethernet12").ok());
  CHECK(ssh.Cmds().empty());

  for (auto mutate : std::vector<std::function<void(SwitchConn&)>>{
           [](SwitchConn& c) { c.jump = "-oProxyCommand=x"; },
           [](SwitchConn& c) { c.jump = "ops@-oProxyCommand=x"; },
           [](SwitchConn& c) { c.user = "-oProxyCommand=x"; },
           [](SwitchConn& c) { c.user = "a b"; },
           [](SwitchConn& c) { c.address = "-oProxyCommand=x"; },
           [](SwitchConn& c) { c.address = "host;reboot"; },
           [](SwitchConn& c) { c.ssh = "ssh"; },
           [](SwitchConn& c) { c.known_hosts = ""; },
           [](SwitchConn& c) {
             c.known_hosts = "";
             c.host_key = "ssh-ed25519 AAAA\nevil";
           },
       }) {
    SwitchConn c = Conn(ssh);
    mutate(c);
    auto bad = OpenSwitchDriver(c);
    CHECK(bad.status().code() == Code::kInvalidArgument);
  }
  CHECK(ssh.Cmds().empty());
}

TEST_CASE("switch driver: ssh exit 255 is Unavailable naming the switch and command", "[unit]") {
  FakeSsh ssh;
  ssh.Rule("shutdown", 255, "", "admin@198.19.3.201: Permission denied (publickey).\n");
  auto d = Open(Conn(ssh));
  Status s = d->SetPortAdmin("Ethernet12", false, Soon());
  CHECK(s.code() == Code::kUnavailable);
  CHECK(Contains(s.message(), "switch leaf1 (admin@198.19.3.201)"));
  CHECK(Contains(s.message(), "`sudo config interface shutdown Ethernet12`"));
  CHECK(Contains(s.message(), "Permission denied (publickey)"));
}

TEST_CASE("switch driver: a failing command is Internal naming the switch and command", "[unit]") {
  FakeSsh ssh;
  ssh.Rule("startup", 1, "", "Error: Interface name is invalid!\n");
  auto d = Open(Conn(ssh));
  Status s = d->SetPortAdmin("Ethernet12", true, Soon());
  CHECK(s.code() == Code::kInternal);
  CHECK(Contains(s.message(), "switch leaf1 (admin@198.19.3.201)"));
  CHECK(Contains(s.message(), "`sudo config interface startup Ethernet12`: exit 1"));
  CHECK(Contains(s.message(), "Interface name is invalid"));
}

TEST_CASE("switch driver: a read-back that never matches is FailedPrecondition", "[unit]") {
  FakeSsh ssh;
  // The port stays admin up after the shutdown.
  ssh.Rule("show interfaces status", 0,
           std::string(kStatusHeader) + StatusRow("Ethernet12", "up", "up"));
  auto d = Open(Conn(ssh));
  // Room for three read-backs 200 ms apart even when each fake ssh takes a few hundred ms (the
  // sanitizer build beside the fuzzers in CI: 700 ms let only one read-back in).
  Status s = d->SetPortAdmin("Ethernet12", false, Soon(2 * kNsPerSec));
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK(Contains(s.message(), "read-back `show interfaces status Ethernet12` did not match /"));
  CHECK(Contains(s.message(), "\\s+down\\b/"));
  CHECK(Contains(s.message(), "got: "));
  CHECK(Contains(s.message(), "routed    up"));
  // It was retried (state may lag), not read once.
  CHECK(ssh.Cmds().size() >= 3);
}

TEST_CASE("switch driver: a read-back that lags is retried until it matches", "[unit]") {
  FakeSsh ssh;
  ssh.Rule("show interfaces status", 0,
           std::string(kStatusHeader) + StatusRow("Ethernet12", "up", "up"), "", 2);
  ssh.Rule("show interfaces status", 0,
           std::string(kStatusHeader) + StatusRow("Ethernet12", "down", "down"));
  auto d = Open(Conn(ssh));
  Status s = d->SetPortAdmin("Ethernet12", false, Soon());
  INFO(s.ToString());
  CHECK(s.ok());
  CHECK(ssh.Cmds().size() == 4);  // the command, then three read-backs
}

TEST_CASE("switch driver: a switch that does not answer is DeadlineExceeded", "[unit]") {
  FakeSsh ssh;
  ssh.Rule("shutdown", 0, "", "", 0, 30);
  auto d = Open(Conn(ssh));
  Nanos t0 = MonoNowNs();
  Status s = d->SetPortAdmin("Ethernet12", false, Soon(300 * kNsPerMs));
  CHECK(s.code() == Code::kDeadlineExceeded);
  CHECK(Contains(s.message(), "switch leaf1"));
  CHECK(Contains(s.message(), "`sudo config interface shutdown Ethernet12`"));
  CHECK(MonoNowNs() - t0 < 5 * kNsPerSec);
}

TEST_CASE("switch driver: without user, key or jump their options are left out", "[unit]") {
  FakeSsh ssh;
  SwitchConn c = Conn(ssh);
  c.user = "";
  c.key_file = "";
  auto argv = BuildSshArgv(c, "/k", {"show", "version"});
  REQUIRE(argv.ok());
  std::vector<std::string> tail(argv->end() - 6, argv->end());
  CHECK(tail == std::vector<std::string>{"-p", "22", "--", "198.19.3.201", "show", "version"});
  for (const auto& a : *argv) {
    CHECK(a != "-l");
    CHECK(a != "-i");
    CHECK(a != "-J");
  }
}

TEST_CASE("switch driver: an add failing half way runs the remove commands", "[unit]") {
  FakeSsh ssh;
  ssh.Rule("hset", 1, "", "Could not connect to Redis server\n");
  auto d = Open(Conn(ssh));
  Status s = d->AddDrop("Ethernet4", SwitchStage::kIngress, "FL_b_1", Soon());
  CHECK(s.code() == Code::kInternal);
  CHECK(Contains(s.message(), "hset"));
  CHECK(Contains(s.message(), "undone"));
  auto cmds = ssh.Cmds();
  REQUIRE(cmds.size() == 4);
  CHECK(Contains(cmds[0], "config acl add table FL_b_1"));
  CHECK(cmds[2] == "sudo sonic-db-cli CONFIG_DB del 'ACL_RULE|FL_b_1|DROP_ALL'");
  CHECK(cmds[3] == "sudo config acl remove table FL_b_1");
}

TEST_CASE("switch driver: removing a rule that is not there is OK", "[unit]") {
  FakeSsh ssh;
  ssh.Rule("acl remove table", 1, "", "Error: Table FL_c_0 doesn't exist\n");
  ssh.Rule("show acl table", 0,
           "Name    Type    Binding    Description    Stage    Status\n"
           "------  ------  ---------  -------------  -------  --------\n");
  auto d = Open(Conn(ssh));
  Status s = d->RemoveDrop("Ethernet4", SwitchStage::kIngress, "FL_c_0", Soon());
  INFO(s.ToString());
  CHECK(s.ok());
}

TEST_CASE("switch driver: unsupported operations name the preset", "[unit]") {
  FakeSsh ssh;
  auto d = Open(Conn(ssh));
  CHECK_FALSE(d->Supports(SwitchOp::kRateAdd));
  CHECK(d->Supports(SwitchOp::kDropAdd));
  CHECK(d->Supports(SwitchOp::kCounters));
  Status s = d->AddRateLimit("Ethernet4", SwitchStage::kEgress, 1'000'000'000, "FL_d_0", Soon());
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK(Contains(s.message(), "sonic preset"));
  CHECK(Contains(s.message(), "rate_add"));
}

TEST_CASE("switch driver: port state, counters and PFC watchdog parse SONiC output", "[unit]") {
  FakeSsh ssh;
  ssh.Rule("show interfaces status", 0,
           std::string(kStatusHeader) + StatusRow("Ethernet1", "up", "up") +
               StatusRow("Ethernet12", "down", "up"));
  ssh.Rule("show interfaces counters -i Ethernet12", 0,
           "      IFACE    STATE    RX_OK     RX_BPS    RX_UTIL    RX_ERR    RX_DRP    RX_OVR    "
           "TX_OK     TX_BPS    TX_UTIL    TX_ERR    TX_DRP    TX_OVR\n"
           "-----------  -------  -------  ---------  ---------  --------  --------  --------  "
           "-------  ---------  ---------  --------  --------  --------\n"
           " Ethernet12        U    1,234   0.00 B/s      0.00%         0         5         0  "
           "    567  12.50 KB/s      0.01%         0         7         0\n");
  ssh.Rule("show pfc counters", 0,
           "  Port Rx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7\n"
           "-----------  ------  ------  ------  ------  ------  ------  ------  ------\n"
           "  Ethernet1       9       9       9       9       9       9       9       9\n"
           " Ethernet12       0       1       2   1,003       4       5       6       7\n"
           "\n"
           "  Port Tx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7\n"
           "-----------  ------  ------  ------  ------  ------  ------  ------  ------\n"
           "  Ethernet1       9       9       9       9       9       9       9       9\n"
           " Ethernet12      10     N/A      12      13      14      15      16      17\n");
  ssh.Rule("show pfcwd config", 0,
           "Changed polling interval to 200ms\n"
           "     PORT    ACTION    DETECTION TIME    RESTORATION TIME\n"
           "---------  --------  ----------------  ------------------\n"
           "Ethernet12      drop               400                 800\n");
  auto d = Open(Conn(ssh));

  auto st = d->ReadPort("Ethernet12", Soon());
  REQUIRE(st.ok());
  CHECK(st->admin_up);
  CHECK_FALSE(st->oper_up);
  st = d->ReadPort("Ethernet1", Soon());
  REQUIRE(st.ok());
  CHECK(st->oper_up);
  auto missing = d->ReadPort("Ethernet99", Soon());
  CHECK(missing.status().code() == Code::kFailedPrecondition);

  auto c = d->ReadCounters("Ethernet12", Soon());
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  CHECK_FALSE(c->has_octets);
  CHECK(c->has_packets);
  CHECK(c->has_drops);
  CHECK(c->in_packets == 1234);
  CHECK(c->out_packets == 567);
  CHECK(c->in_drops == 5);
  CHECK(c->out_drops == 7);
  CHECK(c->pfc_rx.size() == 8);
  CHECK(c->pfc_rx.at(3) == 1003);
  CHECK(c->pfc_tx.size() == 7);  // N/A for priority 1
  CHECK(c->pfc_tx.count(1) == 0);
  CHECK(c->pfc_tx.at(7) == 17);
  auto cmds = ssh.Cmds();
  CHECK(std::count(cmds.begin(), cmds.end(), "show pfc counters") == 1);  // both tables, one run

  auto w = d->ReadPfcWatchdog("Ethernet12", Soon());
  REQUIRE(w.ok());
  CHECK(w->enabled);
  CHECK(w->action == "drop");
  CHECK(w->detection_ns == 400 * kNsPerMs);
  CHECK(w->restoration_ns == 800 * kNsPerMs);
  w = d->ReadPfcWatchdog("Ethernet1", Soon());
  REQUIRE(w.ok());
  CHECK_FALSE(w->enabled);
}

TEST_CASE("switch driver: the EOS and NVUE presets read port state", "[unit]") {
  FakeSsh ssh;
  ssh.Rule("show interfaces Ethernet3/1", 0,
           "Ethernet3/1 is administratively down, line protocol is down (disabled)\n"
           "  Hardware is Ethernet, address is 001c.7300.0001\n");
  ssh.Rule("show interfaces Ethernet4", 0,
           "Ethernet4 is down, line protocol is notpresent (notconnect)\n");
  ssh.Rule("ip -o link show swp7", 0,
           "9: swp7: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 9216 qdisc pfifo_fast state DOWN "
           "mode DEFAULT group default qlen 1000\\    link/ether 44:38:39:00:00:07 brd "
           "ff:ff:ff:ff:ff:ff\n");
  ssh.Rule("ip -o link show swp8", 0,
           "10: swp8: <BROADCAST,MULTICAST> mtu 9216 qdisc pfifo_fast state DOWN mode DEFAULT\n");
  auto eos = Open(Conn(ssh, "eos"));
  auto st = eos->ReadPort("Ethernet3/1", Soon());
  INFO(st.status().ToString());
  REQUIRE(st.ok());
  CHECK_FALSE(st->admin_up);
  CHECK_FALSE(st->oper_up);
  st = eos->ReadPort("Ethernet4", Soon());
  REQUIRE(st.ok());
  CHECK(st->admin_up);
  CHECK_FALSE(st->oper_up);
  CHECK(eos->CheckPortName("swp1").code() == Code::kInvalidArgument);
  auto nv = Open(Conn(ssh, "nvue"));
  st = nv->ReadPort("swp7", Soon());
  INFO(st.status().ToString());
  REQUIRE(st.ok());
  CHECK(st->admin_up);
  CHECK_FALSE(st->oper_up);
  st = nv->ReadPort("swp8", Soon());
  REQUIRE(st.ok());
  CHECK_FALSE(st->admin_up);
  // The port_down read-back: swp8 has no UP flag, swp7 has (LOWER_UP alone would not count).
  CHECK(nv->SetPortAdmin("swp8", false, Soon()).ok());
  // 2 s: room for the two commands under a loaded sanitizer build (about 180 ms each there),
  // then the read-back retries until the deadline and reports the mismatch.
  CHECK(nv->SetPortAdmin("swp7", false, Soon(2 * kNsPerSec)).code() == Code::kFailedPrecondition);
  // EOS gets its CLI lines as one word, unquoted; NVUE's words are quoted for bash.
  auto cmds = ssh.Cmds();
  REQUIRE(cmds.size() > 6);
  CHECK(cmds[0] == "show interfaces Ethernet3/1");
  CHECK(cmds[4] == "nv set interface swp8 link state down");
  CHECK(cmds[5] == "nv config apply -y");
}

TEST_CASE("switch driver: a pinned host key goes to a temporary known_hosts file", "[unit]") {
  FakeSsh ssh;
  ssh.Rule("show interfaces status", 0,
           std::string(kStatusHeader) + StatusRow("Ethernet0", "up", "up"));
  SwitchConn c = Conn(ssh);
  c.known_hosts = "";
  c.host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests0123456789abcdefABCDEF";
  c.port = 2222;
  auto d = Open(c);
  REQUIRE(d->ReadPort("Ethernet0", Soon()).ok());
  CHECK(ssh.KnownHostsSeen() == "[198.19.3.201]:2222 " + c.host_key + "\n");
  std::string file;
  for (const auto& a : ssh.Argv())
    if (a.rfind("UserKnownHostsFile=", 0) == 0) file = a.substr(19);
  REQUIRE_FALSE(file.empty());
  CHECK_FALSE(fs::exists(file));  // removed afterwards
}

TEST_CASE("switch driver: every shipped preset opens", "[unit]") {
  FakeSsh ssh;
  int n = 0;
  for (const auto& e : fs::directory_iterator(SourceFile("configs/switches"))) {
    if (e.path().extension() != ".yaml") continue;
    SwitchConn c = Conn(ssh, e.path().stem().string());
    auto d = OpenSwitchDriver(c);
    INFO(e.path().string() << ": " << d.status().ToString());
    CHECK(d.ok());
    if (d.ok()) {
      CHECK((*d)->Supports(SwitchOp::kPortDown));
      CHECK((*d)->Supports(SwitchOp::kPortUp));
      CHECK((*d)->Supports(SwitchOp::kDropAdd));
      CHECK((*d)->Supports(SwitchOp::kDropRemove));
    }
    ++n;
  }
  CHECK(n >= 3);
  CHECK(ssh.Cmds().empty());  // opening never touches the network
}

TEST_CASE("switch driver: a conn with only the preset's path reads it at open", "[unit]") {
  FakeSsh ssh;
  SwitchConn c = Conn(ssh);
  c.preset_text = "";
  auto d = OpenSwitchDriver(c);
  INFO(d.status().ToString());
  REQUIRE(d.ok());
  CHECK((*d)->conn().preset_text == Slurp(c.preset));
  c.preset = "/nonexistent/preset.yaml";
  CHECK_FALSE(OpenSwitchDriver(c).ok());
  c.preset = "";
  CHECK(OpenSwitchDriver(c).status().code() == Code::kInvalidArgument);
}

TEST_CASE("switch driver: a preset's rate limit gets the rate in its units", "[unit]") {
  FakeSsh ssh;
  SwitchConn c = Conn(ssh);
  c.preset = "/x/rate.yaml";
  const std::string head =
      "name: r\nport_pattern: 'Ethernet[0-9]+'\nquoting: posix\n"
      "stage_names: {ingress: in, egress: out}\noperations:\n";
  c.preset_text = head +
                  "  rate_add:\n"
                  "    commands: [[shape, '{port}', '{stage}', '{mbps}mbit', '{kbps}', '{bps}']]\n"
                  "    readback: [show, shape, '{port}']\n"
                  "    expect: '{port} {mbps}'\n"
                  "  rate_remove:\n"
                  "    commands: [[unshape, '{port}', '{rule}']]\n"
                  "    readback: [show, shape, '{port}']\n"
                  "    expect_absent: '{port} \\d'\n";
  ssh.Rule("show shape", 0, "Ethernet3 2500\n", "", 1);
  ssh.Rule("show shape", 0, "Ethernet3 none\n");
  auto d = Open(c);
  CHECK(d->Supports(SwitchOp::kRateAdd));
  CHECK_FALSE(d->Supports(SwitchOp::kDropAdd));
  Status s = d->AddRateLimit("Ethernet3", SwitchStage::kEgress, 2'500'000'000ULL, "FL_r_0", Soon());
  INFO(s.ToString());
  CHECK(s.ok());
  s = d->RemoveRateLimit("Ethernet3", SwitchStage::kEgress, "FL_r_0", Soon());
  INFO(s.ToString());
  CHECK(s.ok());
  CHECK(ssh.Cmds() == std::vector<std::string>{"shape Ethernet3 out 2500mbit 2500000 2500000000",
                                               "show shape Ethernet3", "unshape Ethernet3 FL_r_0",
                                               "show shape Ethernet3"});
  // Below the template's unit, and zero: refused before anything runs.
  CHECK(d->AddRateLimit("Ethernet3", SwitchStage::kEgress, 500'000, "FL_r_1", Soon()).code() ==
        Code::kInvalidArgument);
  CHECK(d->AddRateLimit("Ethernet3", SwitchStage::kEgress, 0, "FL_r_1", Soon()).code() ==
        Code::kInvalidArgument);
  CHECK(ssh.Cmds().size() == 4);
  // A removal is not told the rate.
  c.preset_text = head +
                  "  rate_add: {commands: [[a]], readback: [b], expect: c}\n"
                  "  rate_remove: {commands: [[a, '{kbps}']], readback: [b], expect_absent: c}\n";
  Status bad = OpenSwitchDriver(c).status();
  CHECK(Contains(bad.message(), "{kbps} has no value in rate_remove"));
}

TEST_CASE("switch driver: preset errors say where", "[unit]") {
  FakeSsh ssh;
  SwitchConn c = Conn(ssh);
  c.preset = "/x/my.yaml";
  auto open_with = [&](const std::string& text) {
    c.preset_text = text;
    return OpenSwitchDriver(c).status();
  };
  const std::string head = "name: t\nport_pattern: 'swp[0-9]+'\nquoting: posix\noperations:\n";
  Status s = open_with(head + "  port_dwn: {}\n");
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(Contains(s.message(), "/x/my.yaml:5:3"));
  s = open_with(head +
                "  port_state:\n    command: [show, '{port}']\n    pattern: '({port}) (up'\n"
                "    admin_group: 1\n    oper_group: 1\n");
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(Contains(s.message(), "/x/my.yaml:7:"));
  s = open_with(head + "  port_state:\n    command: [show, '{prot}']\n    pattern: 'x'\n");
  CHECK(Contains(s.message(), "unknown placeholder {prot}"));
  CHECK(Contains(s.message(), "/x/my.yaml:6:"));
  s = open_with(head +
                "  port_down: {commands: [[a, '{rule}']], readback: [b], expect: c}\n"
                "  port_up: {commands: [[a]], readback: [b], expect: c}\n");
  CHECK(Contains(s.message(), "{rule} has no value in port_down"));
  s = open_with(head + "  port_down: {commands: [[a]], readback: [b], expect: c}\n");
  CHECK(Contains(s.message(), "go together"));
  s = open_with("name: t\nport_pattern: '[a-'\nquoting: posix\noperations: {}\n");
  CHECK(Contains(s.message(), "/x/my.yaml:2:"));
  s = open_with("name: t\nport_pattern: 'a'\nquoting: maybe\noperations: {}\n");
  CHECK(Contains(s.message(), "/x/my.yaml:3:"));
  s = open_with("name: [unclosed\n");
  CHECK(s.code() == Code::kInvalidArgument);

  // Lists: required, lists, and of bounded length.
  const std::string up = "  port_up: {commands: [[a]], readback: [b], expect: c}\n";
  auto down = [&](const std::string& commands) {
    return open_with(head + "  port_down: {" + commands + "readback: [b], expect: c}\n" + up);
  };
  CHECK(down("").message() == "/x/my.yaml:5:14: missing required key 'commands'");
  CHECK(down("commands: a, ").message() == "/x/my.yaml:5:25: commands must be a list");
  CHECK(down("commands: [], ").message() == "/x/my.yaml:5:25: commands must list 1 to 16 commands");
  std::string seventeen = "commands: [[a]";
  for (int i = 0; i < 16; ++i) seventeen += ", [a]";
  CHECK(Contains(down(seventeen + "], ").message(), "commands must list 1 to 16 commands"));

  const std::string read = "{command: [show]}";  // the count is checked before any read
  auto counters = [&](const std::string& body) {
    return open_with(head + "  counters: " + body + "\n");
  };
  CHECK(counters("{}").message() == "/x/my.yaml:5:13: missing required key 'reads'");
  CHECK(counters("{reads: []}").message() == "/x/my.yaml:5:21: reads must list 1 to 8 commands");
  std::string nine = "{reads: [" + read;
  for (int i = 0; i < 8; ++i) nine += ", " + read;
  CHECK(Contains(counters(nine + "]}").message(), "reads must list 1 to 8 commands"));
  CHECK(counters("{reads: [{command: [show]}]}").message() ==
        "/x/my.yaml:5:22: missing required key 'matches'");
  CHECK(counters("{reads: [{command: [show], matches: []}]}").message() ==
        "/x/my.yaml:5:49: matches must list 1 to 16 patterns");
}

TEST_CASE("switch driver: presets are found by name or path", "[unit]") {
  auto p = ResolveSwitchPreset("sonic", "");
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  CHECK(p->front() == '/');
  CHECK(Contains(*p, "configs/switches/sonic.yaml"));
  auto q = ResolveSwitchPreset("switches/eos.yaml", SourceFile("configs"));
  REQUIRE(q.ok());
  CHECK(Contains(*q, "configs/switches/eos.yaml"));
  CHECK(ResolveSwitchPreset("no_such_preset", "").status().code() == Code::kInvalidArgument);
  CHECK(ResolveSwitchPreset("missing/x.yaml", "/nonexistent").status().code() ==
        Code::kInvalidArgument);
}

TEST_CASE("switch driver: a preset's regular expression with a huge count is refused", "[unit]") {
  // fuzz_switch_preset found libstdc++'s regex compiler overflowing a long on a 19-digit
  // count; counts above 1000 and back-references of more than 3 digits never reach it.
  for (const char* bad :
       {"a{6666666666666666666}", "a{1,6666666666666666666}", "a{1001}", "(x)\\12345"}) {
    INFO(bad);
    auto re = ssh_template::CompileRegex(bad, false);
    REQUIRE_FALSE(re.ok());
    CHECK(re.status().code() == Code::kInvalidArgument);
    CHECK_THAT(re.status().message(), Catch::Contains("bad regular expression"));
  }
  for (const char* good : {"a{2,1000}", "(x)\\1", "[{99999}]", "\\{99999\\}", "up\\s+(\\d+)"})
    CHECK(ssh_template::CompileRegex(good, false).ok());
}

}  // namespace
}  // namespace fl::injectors
