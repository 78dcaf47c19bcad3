// Helpers shared by the tests.
#pragma once

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace fl::testing {

// A TCP port on the IPv4 address addr that is free now (the kernel's choice, released again);
// -1 when none.
inline int FreeTcpPort(const std::string& addr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
  socklen_t len = sizeof sa;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0)
    port = ntohs(sa.sin_port);
  close(fd);
  return port;
}

// A fresh directory under /tmp, removed with everything in it when the test ends.
class TempDir {
 public:
  explicit TempDir(const char* prefix = "fl_test") {
    std::string t = std::string("/tmp/") + prefix + "_XXXXXX";
    path_ = mkdtemp(t.data()) ? t : "";
  }
  ~TempDir() {
    if (path_.empty()) return;
    nftw(
        path_.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace fl::testing
