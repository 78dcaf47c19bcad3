#include "harness/control/clear_dial.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace fl::harness {
namespace {

std::string HostOf(const std::string& host_port) {
  if (!host_port.empty() && host_port[0] == '[') {
    size_t end = host_port.find(']');
    return end == std::string::npos ? host_port : host_port.substr(1, end - 1);
  }
  size_t colon = host_port.rfind(':');
  // One colon: host:port. More: a bare IPv6 address.
  if (colon != std::string::npos && host_port.find(':') == colon) return host_port.substr(0, colon);
  return host_port;
}

bool LocalV4(uint32_t addr_host_order) {
  if ((addr_host_order >> 24) == 127) return true;        // 127.0.0.0/8
  return (addr_host_order & 0xFFFE0000u) == 0xC6120000u;  // 198.18.0.0/15
}

}  // namespace

bool IsLocalOrLabAddress(const std::string& host_port) {
  const std::string host = HostOf(host_port);
  if (host.empty()) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return false;
  bool all = true;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      all &= LocalV4(ntohl(in->sin_addr.s_addr));
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
        uint32_t v4 = 0;
        std::memcpy(&v4, &in6->sin6_addr.s6_addr[12], 4);
        all &= LocalV4(ntohl(v4));
      } else {
        all &= IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) != 0;
      }
    } else {
      all = false;
    }
  }
  freeaddrinfo(res);
  return all;
}

Status CheckClearDial(const std::string& host_port, bool insecure, const std::string& who) {
  if (insecure || IsLocalOrLabAddress(host_port)) return OkStatus();
  return FailedPreconditionError(
      who + ": no TLS to " + host_port +
      ", which is neither loopback nor a lab namespace's address (198.18.0.0/15): the token "
      "would go in clear to whatever answers there. Give --tls-dir DIR (faultline certs), or "
      "--insecure to send it in clear anyway");
}

}  // namespace fl::harness
