#include "common/http_put.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.h"

namespace fl {
namespace {

constexpr size_t kMaxReplyBytes = 64 * 1024;

bool WaitFd(int fd, short events, const Deadline& deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    int n = poll(&p, 1, deadline.RemainingMsForPoll());
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

StatusOr<UniqueFd> Connect(const HttpUrl& url, const Deadline& deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(url.port);
  if (int rc = getaddrinfo(url.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return UnavailableError("cannot resolve " + url.host + ": " + gai_strerror(rc));
  std::string last = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    UniqueFd fd(socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) continue;
    if (connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last = std::strerror(errno);
      continue;
    }
    if (!WaitFd(fd.get(), POLLOUT, deadline)) {
      freeaddrinfo(res);
      return DeadlineExceededError("connecting to " + url.host + ":" + port + " timed out");
    }
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      last = std::strerror(err);
      continue;
    }
    freeaddrinfo(res);
    return fd;
  }
  freeaddrinfo(res);
  return UnavailableError("cannot connect to " + url.host + ":" + port + ": " + last);
}

}  // namespace

StatusOr<HttpUrl> ParseHttpUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind("https://", 0) == 0)
    return InvalidArgumentError("'" + url + "': https is not supported (plain http:// only)");
  if (url.rfind(scheme, 0) != 0) return InvalidArgumentError("'" + url + "': not an http:// URL");
  std::string rest = url.substr(scheme.size());
  HttpUrl u;
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) u.path = rest.substr(slash);
  if (authority.find('@') != std::string::npos)
    return InvalidArgumentError("'" + url + "': credentials in the URL are not supported");
  std::string port;
  if (!authority.empty() && authority[0] == '[') {  // [v6]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos) return InvalidArgumentError("'" + url + "': unclosed '['");
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return InvalidArgumentError("'" + url + "': bad host");
      port = authority.substr(close + 2);
    }
  } else {
    const size_t colon = authority.find(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) return InvalidArgumentError("'" + url + "': no host");
  if (!port.empty() || authority.find(':') != std::string::npos) {
    bool digits = !port.empty() && port.size() <= 5 &&
                  port.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535)
      return InvalidArgumentError("'" + url + "': port '" + port + "' is not 1..65535");
    u.port = std::stoi(port);
  }
  for (char c : u.path)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
      return InvalidArgumentError("'" + url + "': the path has a space or control character");
  return u;
}

StatusOr<HttpReply> HttpSend(const std::string& method, const HttpUrl& url,
                             const std::string& content_type, const std::string& body,
                             Deadline deadline) {
  FL_ASSIGN_OR_RETURN(UniqueFd fd, Connect(url, deadline));
  const bool v6 = url.host.find(':') != std::string::npos;
  std::string req =
      method + " " + url.path + " HTTP/1.1\r\nHost: " + (v6 ? "[" + url.host + "]" : url.host) +
      ":" + std::to_string(url.port) +
      "\r\nUser-Agent: faultline\r\nContent-Type: " + content_type +
      "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  size_t off = 0;
  while (off < req.size()) {
    ssize_t n = send(fd.get(), req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!WaitFd(fd.get(), POLLOUT, deadline))
        return DeadlineExceededError("sending to " + url.host + " timed out");
      continue;
    }
    return UnavailableError("sending to " + url.host + ": " + std::strerror(errno));
  }
  std::string reply;
  char buf[4096];
  for (;;) {
    if (!WaitFd(fd.get(), POLLIN, deadline)) {
      if (reply.find("\r\n") != std::string::npos) break;  // a status line is enough
      return DeadlineExceededError(url.host + " did not answer in time");
    }
    ssize_t n = recv(fd.get(), buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return UnavailableError("reading from " + url.host + ": " + std::strerror(errno));
    }
    reply.append(buf, static_cast<size_t>(n));
    if (reply.size() > kMaxReplyBytes) break;
  }
  // "HTTP/1.1 200 OK"
  HttpReply r;
  if (reply.rfind("HTTP/1.", 0) != 0 || reply.size() < 12)
    return UnavailableError(url.host + " did not answer with HTTP");
  r.status = std::atoi(reply.c_str() + 9);
  const size_t hdr_end = reply.find("\r\n\r\n");
  if (hdr_end != std::string::npos) r.body = reply.substr(hdr_end + 4, kMaxReplyBytes);
  return r;
}

}  // namespace fl
