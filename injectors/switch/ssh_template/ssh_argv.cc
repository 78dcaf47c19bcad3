// The OpenSSH client's command line for a switch, and the checks of the connection fields that
// go into it (internal.h, ssh_template_driver.h).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/file_util.h"
#include "common/name_chars.h"
#include "injectors/switch/ssh_template/internal.h"
#include "injectors/switch/ssh_template/ssh_template_driver.h"

namespace fl::injectors {
namespace ssh_template {
namespace {

Status CheckHostName(std::string_view h, std::string_view what, bool allow_colon) {
  if (h.empty() || h.size() > 253)
    return InvalidArgumentError(std::string(what) + " is empty or too long");
  if (h.front() == '-')
    return InvalidArgumentError(std::string(what) + " '" + std::string(h) + "' starts with '-'");
  if (!AllNameChars(h, allow_colon ? ".-:" : ".-"))
    return InvalidArgumentError(std::string(what) + " '" + std::string(h) +
                                "' has a character outside [A-Za-z0-9.-" +
                                (allow_colon ? ":" : "") + "]");
  return OkStatus();
}

Status CheckUser(std::string_view u, std::string_view what) {
  if (u.size() > 64) return InvalidArgumentError(std::string(what) + " is too long");
  if (!u.empty() && u.front() == '-')
    return InvalidArgumentError(std::string(what) + " '" + std::string(u) + "' starts with '-'");
  if (!AllNameChars(u, "._-"))
    return InvalidArgumentError(std::string(what) + " '" + std::string(u) +
                                "' has a character outside [A-Za-z0-9._-]");
  return OkStatus();
}

Status CheckJump(std::string_view j) {
  if (j.empty()) return OkStatus();
  if (j.front() == '-')
    return InvalidArgumentError("jump '" + std::string(j) + "' starts with '-'");
  std::string_view host = j;
  if (size_t at = j.find('@'); at != std::string_view::npos) {
    FL_RETURN_IF_ERROR(CheckUser(j.substr(0, at), "jump user"));
    if (at == 0) return InvalidArgumentError("jump '" + std::string(j) + "': empty user");
    host = j.substr(at + 1);
  }
  if (size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    std::string_view port = host.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !AllNameChars(port, "") ||
        std::find_if(port.begin(), port.end(), [](char c) { return c < '0' || c > '9'; }) !=
            port.end())
      return InvalidArgumentError("jump '" + std::string(j) + "': bad port");
    int p = std::atoi(std::string(port).c_str());
    if (p < 1 || p > 65535) return InvalidArgumentError("jump '" + std::string(j) + "': bad port");
    host = host.substr(0, colon);
  }
  return CheckHostName(host, "jump host", false);
}

Status CheckAbsPath(const std::string& p, std::string_view what) {
  if (p.empty() || p.front() != '/')
    return InvalidArgumentError(std::string(what) + " '" + p + "' must be an absolute path");
  for (char c : p)
    if (c == '\n' || c == '\0' || c == '\r')
      return InvalidArgumentError(std::string(what) + " has a control character");
  return OkStatus();
}

Status CheckHostKey(const std::string& k) {
  // "TYPE BASE64" (an optional comment is not wanted here).
  size_t sp = k.find(' ');
  if (sp == std::string::npos || sp == 0 || sp + 1 >= k.size())
    return InvalidArgumentError("host_key must be 'TYPE BASE64' (e.g. 'ssh-ed25519 AAAA...')");
  if (!AllNameChars(k.substr(0, sp), "-@.") || !AllNameChars(k.substr(sp + 1), "+/="))
    return InvalidArgumentError("host_key must be 'TYPE BASE64' (e.g. 'ssh-ed25519 AAAA...')");
  return OkStatus();
}

}  // namespace

Status CheckConn(const SwitchConn& c) {
  FL_RETURN_IF_ERROR(CheckHostName(c.address, "address", true));
  if (c.port < 1 || c.port > 65535) return InvalidArgumentError("port must be 1..65535");
  FL_RETURN_IF_ERROR(CheckUser(c.user, "user"));
  FL_RETURN_IF_ERROR(CheckJump(c.jump));
  FL_RETURN_IF_ERROR(CheckAbsPath(c.ssh, "ssh"));
  if (!c.key_file.empty()) FL_RETURN_IF_ERROR(CheckAbsPath(c.key_file, "key_file"));
  if (c.known_hosts.empty() && c.host_key.empty())
    return InvalidArgumentError(
        "neither known_hosts nor host_key is set: the switch's host key cannot be checked");
  if (!c.known_hosts.empty()) FL_RETURN_IF_ERROR(CheckAbsPath(c.known_hosts, "known_hosts"));
  if (!c.host_key.empty()) FL_RETURN_IF_ERROR(CheckHostKey(c.host_key));
  if (c.connect_timeout < kNsPerSec) return InvalidArgumentError("connect_timeout must be >= 1s");
  return OkStatus();
}

TempKnownHosts::~TempKnownHosts() {
  if (!path_.empty()) unlink(path_.c_str());
}

Status TempKnownHosts::Write(const SwitchConn& c) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = (tmp != nullptr && tmp[0] == '/') ? tmp : "/tmp";
  std::string templ = dir + "/fl-known-hosts-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  int fd = mkstemp(buf.data());
  if (fd < 0) return ErrnoStatus(errno, "mkstemp " + templ);
  path_ = buf.data();
  std::string host = c.port == 22 ? c.address : "[" + c.address + "]:" + std::to_string(c.port);
  std::string line = host + " " + c.host_key + "\n";
  Status s = WriteAll(fd, line, "write " + path_);
  close(fd);
  return s;
}

}  // namespace ssh_template

StatusOr<std::vector<std::string>> BuildSshArgv(const SwitchConn& c,
                                                const std::string& known_hosts_file,
                                                const std::vector<std::string>& remote_words) {
  using namespace ssh_template;  // the checks above
  FL_RETURN_IF_ERROR(CheckHostName(c.address, "address", true));
  FL_RETURN_IF_ERROR(CheckUser(c.user, "user"));
  FL_RETURN_IF_ERROR(CheckJump(c.jump));
  FL_RETURN_IF_ERROR(CheckAbsPath(c.ssh, "ssh"));
  FL_RETURN_IF_ERROR(CheckAbsPath(known_hosts_file, "known_hosts"));
  if (c.port < 1 || c.port > 65535) return InvalidArgumentError("port must be 1..65535");
  Nanos ct = std::max<Nanos>(c.connect_timeout, kNsPerSec);
  std::vector<std::string> a = {
      c.ssh,
      "-F",
      "/dev/null",
      "-o",
      "BatchMode=yes",
      "-o",
      "ConnectTimeout=" + std::to_string((ct + kNsPerSec - 1) / kNsPerSec),
      "-o",
      "StrictHostKeyChecking=yes",
      "-o",
      "UserKnownHostsFile=" + known_hosts_file,
      "-o",
      "GlobalKnownHostsFile=/dev/null",
      "-o",
      "IdentitiesOnly=yes",
      "-o",
      "PasswordAuthentication=no",
      "-o",
      "LogLevel=ERROR"};
  if (!c.key_file.empty()) {
    FL_RETURN_IF_ERROR(CheckAbsPath(c.key_file, "key_file"));
    a.insert(a.end(), {"-i", c.key_file});
  }
  a.insert(a.end(), {"-p", std::to_string(c.port)});
  if (!c.user.empty()) a.insert(a.end(), {"-l", c.user});
  if (!c.jump.empty()) a.insert(a.end(), {"-J", c.jump});
  a.push_back("--");
  a.push_back(c.address);
  a.insert(a.end(), remote_words.begin(), remote_words.end());
  return a;
}

}  // namespace fl::injectors
