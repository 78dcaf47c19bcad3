// TcpStore (the client) and the small helpers tcp_store.h declares.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "ccl_under_test/api/tcp_store.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "common/log.h"

namespace fl::ccl {

struct TcpStore::Conn {
  UniqueFd fd;
  kv::FrameReader in;
};

namespace {

// Errors not worth redialling for: the server refused us, or the request itself is wrong.
bool Permanent(const Status& s) {
  return s.code() == Code::kFailedPrecondition || s.code() == Code::kInvalidArgument;
}

int PollMs(Deadline d) { return std::max(1, d.RemainingMsForPoll()); }

Status SendAll(int fd, const std::string& data, Deadline d) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      return UnavailableError(std::string("send: ") + std::strerror(errno));
    if (d.Expired()) return DeadlineExceededError("send timed out");
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, PollMs(d));
  }
  return OkStatus();
}

StatusOr<std::string> ReadFrame(int fd, kv::FrameReader& in, uint32_t max_frame, Deadline d) {
  char buf[16 * 1024];
  while (true) {
    std::string body;
    auto r = in.Next(max_frame, &body);
    if (r == kv::FrameReader::Result::kFrame) return body;
    if (r == kv::FrameReader::Result::kMalformed)
      return UnavailableError("the server sent a malformed frame (is it a faultline kv store?)");
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      in.Append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return UnavailableError("the server closed the connection");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return UnavailableError(std::string("recv: ") + std::strerror(errno));
    if (d.Expired()) return DeadlineExceededError("no reply in time");
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, PollMs(d));
  }
}

StatusOr<sockaddr_in> Resolve(const HostPort& hp) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(hp.port);
  if (inet_pton(AF_INET, hp.host.c_str(), &sa.sin_addr) == 1) return sa;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(hp.host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res)
    return UnavailableError("cannot resolve '" + hp.host + "': " + gai_strerror(rc));
  sa.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return sa;
}

}  // namespace

StatusOr<HostPort> ParseHostPort(const std::string& addr) {
  auto colon = addr.rfind(':');
  auto bad = [&] {
    return InvalidArgumentError("'" + addr + "' is not HOST:PORT (port 0..65535)");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == addr.size() ||
      addr.size() - colon - 1 > 5)
    return bad();
  HostPort hp;
  hp.host = addr.substr(0, colon);
  uint32_t port = 0;
  for (char c : addr.substr(colon + 1)) {
    if (c < '0' || c > '9') return bad();
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port > 65535) return bad();
  hp.port = static_cast<uint16_t>(port);
  return hp;
}

StatusOr<std::string> ReadStoreToken(const std::string& path) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, InputKind::kToken));
  size_t b = text.find_first_not_of(" \t\r\n");
  size_t e = text.find_last_not_of(" \t\r\n");
  if (b == std::string::npos) return InvalidArgumentError("token file " + path + " is empty");
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH))
    FL_LOG(kWarn, "kv") << "token file " << path << " is readable by everyone (want 0600)";
  return text.substr(b, e - b + 1);
}

TcpStore::TcpStore(std::string address, std::string token)
    : TcpStore(std::move(address), std::move(token), Options{}) {}

TcpStore::TcpStore(std::string address, std::string token, Options options)
    : address_(std::move(address)), token_(std::move(token)), options_(options) {}

TcpStore::~TcpStore() = default;

std::unique_ptr<TcpStore::Conn> TcpStore::TakeIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.empty()) return nullptr;
  auto c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

void TcpStore::GiveBack(std::unique_ptr<Conn> c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < options_.max_idle) idle_.push_back(std::move(c));
}

StatusOr<std::unique_ptr<TcpStore::Conn>> TcpStore::Dial(Deadline d) {
  FL_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address_));
  FL_ASSIGN_OR_RETURN(sockaddr_in sa, Resolve(hp));
  auto c = std::make_unique<Conn>();
  c->fd = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (c->fd.get() < 0) return ErrnoStatus(errno, "socket");
  int fd = c->fd.get();
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    if (errno != EINPROGRESS)
      return UnavailableError(std::string("connect: ") + std::strerror(errno));
    pollfd p{fd, POLLOUT, 0};
    while (true) {
      int n = poll(&p, 1, PollMs(d));
      if (n > 0) break;
      if (n < 0 && errno == EINTR) continue;
      if (d.Expired()) return DeadlineExceededError("connect timed out");
    }
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return UnavailableError(std::string("connect: ") + std::strerror(err));
  }
  FL_ASSIGN_OR_RETURN(std::string body, ReadFrame(fd, c->in, kv::kMaxPreAuthFrame, d));
  auto hello = kv::Decode(body, options_.limits);
  if (!hello.ok() || hello->type != kv::Type::kHello)
    return UnavailableError("no faultline kv hello from the server" +
                            (hello.ok() ? std::string() : ": " + hello.status().message()));
  FL_ASSIGN_OR_RETURN(std::string mine, kv::RandomBytes(kv::kNonceBytes));
  FL_RETURN_IF_ERROR(SendAll(
      fd, kv::EncodeAuth(mine, kv::AuthMac(token_, kv::kClientLabel, hello->nonce, mine)), d));
  FL_ASSIGN_OR_RETURN(body, ReadFrame(fd, c->in, kv::kMaxPreAuthFrame, d));
  auto reply = kv::Decode(body, options_.limits);
  if (reply.ok() && reply->type == kv::Type::kAuthFail)
    return FailedPreconditionError(
        "the store refused our token (is the token file the same as the coordinator's?)");
  if (!reply.ok() || reply->type != kv::Type::kAuthOk)
    return UnavailableError("bad authentication reply from the server");
  if (!kv::MacEqual(reply->mac, kv::AuthMac(token_, kv::kServerLabel, hello->nonce, mine)))
    return FailedPreconditionError(
        "the server did not prove that it holds the token (a different token, or not our "
        "coordinator's store)");
  return c;
}

StatusOr<kv::Message> TcpStore::RoundTrip(const std::string& frame, Deadline deadline,
                                          Nanos reply_within) {
  Status last = UnavailableError("not tried");
  Nanos backoff = 10 * kNsPerMs;
  do {
    // Each attempt gets at least half a second, so an operation started at its deadline
    // still asks the server once.
    Deadline io = deadline.Remaining() >= kNsPerSec / 2 ? deadline : Deadline::After(kNsPerSec / 2);
    bool reused = true;
    std::unique_ptr<Conn> c = TakeIdle();
    if (!c) {
      reused = false;
      auto dialed = Dial(io);
      if (!dialed.ok()) {
        if (Permanent(dialed.status())) return dialed.status();
        last = dialed.status();
      } else {
        c = std::move(*dialed);
      }
    }
    if (c) {
      Status s = SendAll(c->fd.get(), frame, io);
      if (s.ok()) {
        Deadline rd = Deadline::After(std::min(reply_within, io.Remaining() + kNsPerSec / 4));
        auto body = ReadFrame(c->fd.get(), c->in, options_.limits.MaxFrame(), rd);
        if (body.ok()) {
          auto m = kv::Decode(*body, options_.limits);
          if (m.ok()) {
            GiveBack(std::move(c));
            return m;
          }
          s = UnavailableError("malformed reply: " + m.status().message());
        } else {
          s = body.status();
        }
      }
      last = s;
      // A stale pooled connection (the server closed it while idle): redial at once.
      if (reused) continue;
    }
    Nanos pause = std::min(backoff, deadline.Remaining());
    if (pause > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(pause));
    backoff = std::min<Nanos>(backoff * 2, 500 * kNsPerMs);
  } while (!deadline.Expired());
  return DeadlineExceededError("store " + address_ + " unreachable: " + last.message());
}

Status TcpStore::Set(const std::string& key, const std::string& value) {
  if (key.empty() || key.size() > options_.limits.max_key)
    return InvalidArgumentError("rendezvous: key of " + std::to_string(key.size()) + " bytes (1.." +
                                std::to_string(options_.limits.max_key) + ")");
  if (value.size() > options_.limits.max_value)
    return InvalidArgumentError("rendezvous: value of " + std::to_string(value.size()) +
                                " bytes for '" + key + "' (at most " +
                                std::to_string(options_.limits.max_value) + ")");
  auto m = RoundTrip(kv::EncodeSet(key, value), Deadline::After(options_.set_timeout),
                     options_.set_timeout);
  if (!m.ok()) return Status(m.status()).Prepend("rendezvous: set '" + key + "'");
  if (m->type == kv::Type::kOk) return OkStatus();
  if (m->type == kv::Type::kError)
    return FailedPreconditionError("rendezvous: store " + address_ + " refused '" + key +
                                   "': " + m->value);
  return UnavailableError("rendezvous: unexpected reply to a set from " + address_);
}

StatusOr<std::string> TcpStore::Get(const std::string& key, Deadline deadline) {
  if (key.empty() || key.size() > options_.limits.max_key)
    return InvalidArgumentError("rendezvous: key of " + std::to_string(key.size()) + " bytes (1.." +
                                std::to_string(options_.limits.max_key) + ")");
  while (true) {
    const uint32_t wait_ms = static_cast<uint32_t>(
        std::min<Nanos>(deadline.Remaining() / kNsPerMs, options_.get_chunk_ms));
    auto m = RoundTrip(kv::EncodeGet(key, wait_ms), deadline,
                       static_cast<Nanos>(wait_ms) * kNsPerMs + kNsPerSec);
    if (!m.ok()) {
      if (m.status().code() == Code::kDeadlineExceeded)
        return DeadlineExceededError("rendezvous: key '" + key + "' not read from " + address_ +
                                     ": " + m.status().message());
      return Status(m.status()).Prepend("rendezvous: get '" + key + "' from " + address_);
    }
    if (m->type == kv::Type::kValue) return std::move(m->value);
    if (m->type == kv::Type::kError)
      return FailedPreconditionError("rendezvous: store " + address_ + ": " + m->value);
    if (m->type != kv::Type::kNotFound)
      return UnavailableError("rendezvous: unexpected reply to a get from " + address_);
    if (deadline.Expired())
      return DeadlineExceededError("rendezvous: key '" + key + "' not set in store " + address_);
  }
}

}  // namespace fl::ccl
