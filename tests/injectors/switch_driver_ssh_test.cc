// The ssh-template driver with the real OpenSSH client against a real sshd on 127.0.0.1 (a
// throwaway host key, client key and config in a temp directory): the option set is one that
// OpenSSH accepts, host keys are checked (pinned and from a known_hosts file), a wrong host key
// or client key is Unavailable, and quoted words reach the remote shell intact. Root-gated
// because sshd needs its privilege-separation directory (/run/sshd, created if missing, as the
// openssh-server package does) and root to log in as root.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/file_util.h"
#include "common/process.h"
#include "injectors/switch/ssh_template/ssh_template_driver.h"
#include "injectors/switch/switch_driver.h"
#include "injectors/switch_drivers.h"
#include "tests/test_util.h"

namespace fl::injectors {
namespace {

namespace fs = std::filesystem;
using fl::testing::FreeTcpPort;

bool CanConnect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  close(fd);
  return ok;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class LocalSshd {
 public:
  LocalSshd() {
    std::string templ = (fs::temp_directory_path() / "fl-sshd-XXXXXX").string();
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    REQUIRE(mkdtemp(buf.data()) != nullptr);
    dir = buf.data();
    for (const char* k : {"host", "client", "stranger", "otherhost"}) {
      auto r = Run(
          {"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", k, "-f", dir + "/" + k});
      REQUIRE(r.ok());
      REQUIRE(r->exit_code == 0);
    }
    host_pub = KeyOf("host");
    other_host_pub = KeyOf("otherhost");
    std::ofstream(dir + "/authorized_keys") << Slurp(dir + "/client.pub");
    port = FreeTcpPort("127.0.0.1");
    REQUIRE(port > 0);
    std::ofstream(dir + "/sshd_config")
        << "ListenAddress 127.0.0.1:" << port << "\n"
        << "HostKey " << dir << "/host\n"
        << "AuthorizedKeysFile " << dir << "/authorized_keys\n"
        << "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        << "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\n"
        << "LogLevel ERROR\n";
    if (!fs::exists("/run/sshd")) fs::create_directories("/run/sshd");
    ProcessSpec spec;
    spec.argv = {"/usr/sbin/sshd", "-D", "-e", "-f", dir + "/sshd_config"};
    spec.new_process_group = true;
    spec.err = {Stdio::kFile, dir + "/sshd.log"};
    auto p = Spawn(spec);
    REQUIRE(p.ok());
    pid = p->pid();
    bool up =
        WaitUntil([&] { return CanConnect(port); }, Deadline::After(10 * kNsPerSec), 10 * kNsPerMs);
    INFO(Slurp(dir + "/sshd.log"));
    REQUIRE(up);
  }
  ~LocalSshd() {
    if (pid > 0) Stop(pid, kNsPerSec, true);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  std::string KeyOf(const std::string& name) {
    // "ssh-ed25519 AAAA... comment" -> "ssh-ed25519 AAAA..."
    std::string pub = Trim(Slurp(dir + "/" + name + ".pub"));
    size_t sp = pub.find(' ', pub.find(' ') + 1);
    return sp == std::string::npos ? pub : pub.substr(0, sp);
  }
  static std::string Slurp(const std::string& p) {
    auto r = ReadFile(p);
    return r.ok() ? *r : std::string();
  }

  SwitchConn Conn() const {
    SwitchConn c;
    c.name = "local";
    c.address = "127.0.0.1";
    c.port = port;
    c.user = "root";
    c.key_file = dir + "/client";
    c.host_key = host_pub;
    c.connect_timeout = 5 * kNsPerSec;
    c.preset = dir + "/local.yaml";
    // The "switch" is this machine's shell: the state of port pN is the file DIR/state_pN.
    c.preset_text =
        "name: local\nport_pattern: 'p[0-9]'\nquoting: posix\noperations:\n"
        "  port_down:\n"
        "    commands: [[sh, -c, 'echo \"admin down\" > " +
        dir +
        "/state_{port}']]\n"
        "    readback: [cat, '" +
        dir +
        "/state_{port}']\n"
        "    expect: '^admin down$'\n"
        "  port_up:\n"
        "    commands: [[sh, -c, 'echo \"admin up\" > " +
        dir +
        "/state_{port}']]\n"
        "    readback: [cat, '" +
        dir +
        "/state_{port}']\n"
        "    expect: '^admin up$'\n"
        "  port_state:\n"
        "    command: [cat, '" +
        dir +
        "/state_{port}']\n"
        "    pattern: '^admin (\\w+)$'\n"
        "    admin_group: 1\n"
        "    oper_group: 1\n"
        "  drop_add:\n"
        "    commands: [[sh, -c, 'printf \"%s\\n\" \"ACL_RULE|{rule}|DROP_ALL\" > " +
        dir +
        "/acl_{rule}']]\n"
        "    readback: [cat, '" +
        dir +
        "/acl_{rule}']\n"
        "    expect: '^ACL_RULE\\|{rule}\\|DROP_ALL$'\n"
        "  drop_remove:\n"
        "    commands: [[rm, -f, '" +
        dir +
        "/acl_{rule}']]\n"
        "    readback: [sh, -c, 'cat " +
        dir +
        "/acl_{rule} 2>/dev/null; true']\n"
        "    expect_absent: 'DROP_ALL'\n";
    return c;
  }

  std::string dir;
  std::string host_pub, other_host_pub;
  int port = 0;
  int pid = -1;
};

Deadline Soon() { return Deadline::After(20 * kNsPerSec); }

TEST_CASE("switch driver over real OpenSSH: host keys, refusals, quoting", "[.root][integration]") {
  LocalSshd sshd;

  // A pinned host key (a temporary known_hosts file, gone afterwards).
  auto d = OpenSwitchDriver(sshd.Conn());
  REQUIRE(d.ok());
  Status s = (*d)->SetPortAdmin("p1", false, Soon());
  INFO(s.ToString() << "\nsshd: " << LocalSshd::Slurp(sshd.dir + "/sshd.log"));
  REQUIRE(s.ok());
  auto st = (*d)->ReadPort("p1", Soon());
  REQUIRE(st.ok());
  CHECK_FALSE(st->admin_up);
  REQUIRE((*d)->SetPortAdmin("p1", true, Soon()).ok());
  st = (*d)->ReadPort("p1", Soon());
  REQUIRE(st.ok());
  CHECK(st->admin_up);

  // Words with | " > and spaces reach the remote shell as one word each.
  s = (*d)->AddDrop("p1", SwitchStage::kIngress, "FL_q_0", Soon());
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(Trim(LocalSshd::Slurp(sshd.dir + "/acl_FL_q_0")) == "ACL_RULE|FL_q_0|DROP_ALL");
  REQUIRE((*d)->RemoveDrop("p1", SwitchStage::kIngress, "FL_q_0", Soon()).ok());
  CHECK_FALSE(fs::exists(sshd.dir + "/acl_FL_q_0"));

  // The same through a known_hosts file.
  SwitchConn kh = sshd.Conn();
  kh.host_key = "";
  kh.known_hosts = sshd.dir + "/known_hosts";
  std::ofstream(kh.known_hosts) << "[127.0.0.1]:" << sshd.port << " " << sshd.host_pub << "\n";
  auto dk = OpenSwitchDriver(kh);
  REQUIRE(dk.ok());
  CHECK((*dk)->ReadPort("p1", Soon()).ok());

  // Another host key: refused, never learnt.
  SwitchConn wrong = sshd.Conn();
  wrong.host_key = sshd.other_host_pub;
  auto dw = OpenSwitchDriver(wrong);
  REQUIRE(dw.ok());
  auto r = (*dw)->ReadPort("p1", Soon());
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(r.status().message().find("switch local (root@127.0.0.1:") != std::string::npos);
  CHECK(r.status().message().find("exit 255") != std::string::npos);

  // A key the switch does not know.
  SwitchConn stranger = sshd.Conn();
  stranger.key_file = sshd.dir + "/stranger";
  auto ds = OpenSwitchDriver(stranger);
  REQUIRE(ds.ok());
  r = (*ds)->ReadPort("p1", Soon());
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(r.status().message().find("Permission denied") != std::string::npos);

  // Nothing listening.
  SwitchConn closed = sshd.Conn();
  closed.port = FreeTcpPort("127.0.0.1");
  auto dc = OpenSwitchDriver(closed);
  REQUIRE(dc.ok());
  r = (*dc)->ReadPort("p1", Soon());
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(r.status().message().find("Connection refused") != std::string::npos);
}

}  // namespace
}  // namespace fl::injectors
