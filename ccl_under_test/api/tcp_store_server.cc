// TcpStoreServer: one thread, poll(2) over the listening socket, a wake-up pipe and every
// session. Each session is a small state machine (authenticating, ready, waiting for a key,
// closing); one request is handled at a time per session, and nothing more is read from a
// session whose reply has not been sent, so a session holds at most one frame in and one out.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <unordered_map>

#include "ccl_under_test/api/tcp_store.h"
#include "common/log.h"

namespace fl::ccl {

namespace {

enum class State { kAuth, kReady, kWaiting, kClosing };

struct Session {
  UniqueFd fd;
  State state = State::kAuth;
  std::string server_nonce;
  kv::FrameReader in;
  std::string out;
  size_t out_off = 0;
  Nanos deadline = 0;  // auth, idle or wait deadline (monotonic ns), by state
  std::string wait_key;
  bool dead = false;
};

}  // namespace

struct TcpStoreServer::Impl {
  std::string token;
  Options opts;
  UniqueFd listen_fd;
  UniqueFd wake_r, wake_w;
  std::list<Session> sessions;
  std::unordered_map<std::string, std::string> kv;
  std::unordered_map<std::string, std::vector<Session*>> waiters;
  uint64_t bytes = 0;  // keys + values in kv
  Nanos accept_paused_until = 0;
  mutable std::mutex stats_mu;
  Stats stats;

  template <typename F>
  void Count(F f) {
    std::lock_guard<std::mutex> lock(stats_mu);
    f(stats);
  }

  void Queue(Session& s, const std::string& frame) {
    s.out.append(frame);
    Flush(s);
  }

  // Writes what the socket takes now; a write error ends the session.
  void Flush(Session& s) {
    while (s.out_off < s.out.size()) {
      ssize_t n = send(s.fd.get(), s.out.data() + s.out_off, s.out.size() - s.out_off,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        s.out_off += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      Kill(s);
      return;
    }
    s.out.clear();
    s.out_off = 0;
    if (s.state == State::kClosing) Kill(s);
  }

  void StopWaiting(Session& s) {
    if (s.state != State::kWaiting) return;
    auto it = waiters.find(s.wait_key);
    if (it != waiters.end()) {
      auto& v = it->second;
      v.erase(std::remove(v.begin(), v.end(), &s), v.end());
      if (v.empty()) waiters.erase(it);
    }
    s.wait_key.clear();
    s.state = State::kReady;
  }

  void Kill(Session& s) {
    if (s.dead) return;
    StopWaiting(s);
    s.dead = true;
  }

  void Malformed(Session& s, const std::string& why) {
    Count([](Stats& st) { ++st.malformed; });
    FL_LOG(kDebug, "kv") << "dropping a connection: " << why;
    Kill(s);
  }

  uint32_t MaxFrame(const Session& s) const {
    return s.state == State::kAuth ? kv::kMaxPreAuthFrame : opts.limits.MaxFrame();
  }

  void Accept() {
    while (true) {
      int fd = accept4(listen_fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: the listening socket would stay readable, so stop polling it
          // for a moment instead of spinning.
          accept_paused_until = MonoNowNs() + 100 * kNsPerMs;
          Count([](Stats& st) { ++st.refused; });
        }
        return;
      }
      UniqueFd conn(fd);
      if (sessions.size() >= opts.max_connections) {
        Count([](Stats& st) { ++st.refused; });
        continue;  // closed by conn's destructor
      }
      auto nonce = kv::RandomBytes(kv::kNonceBytes);
      if (!nonce.ok()) continue;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      sessions.emplace_back();
      Session& s = sessions.back();
      s.fd = std::move(conn);
      s.server_nonce = *nonce;
      s.deadline = MonoNowNs() + opts.auth_timeout;
      Count([](Stats& st) { ++st.accepted; });
      Queue(s, kv::EncodeHello(s.server_nonce));
    }
  }

  void HandleAuth(Session& s, const kv::Message& m) {
    if (m.type != kv::Type::kAuth) return Malformed(s, "a request before authenticating");
    std::string want = kv::AuthMac(token, kv::kClientLabel, s.server_nonce, m.nonce);
    if (!kv::MacEqual(want, m.mac)) {
      Count([](Stats& st) { ++st.auth_failures; });
      s.state = State::kClosing;
      Queue(s, kv::EncodeEmpty(kv::Type::kAuthFail));
      return;
    }
    s.state = State::kReady;
    s.deadline = MonoNowNs() + opts.idle_timeout;
    Queue(s, kv::EncodeAuthOk(kv::AuthMac(token, kv::kServerLabel, s.server_nonce, m.nonce)));
  }

  void HandleSet(Session& s, kv::Message& m) {
    auto it = kv.find(m.key);
    const uint64_t old_bytes = it == kv.end() ? 0 : it->first.size() + it->second.size();
    const uint64_t new_bytes = m.key.size() + m.value.size();
    const uint64_t bytes_now = bytes;
    if (it == kv.end() && kv.size() >= opts.max_keys) {
      Count([](Stats& st) { ++st.rejected; });
      return Queue(s, kv::EncodeError("store full: " + std::to_string(kv.size()) + " keys"));
    }
    if (bytes_now - old_bytes + new_bytes > opts.max_bytes) {
      Count([](Stats& st) { ++st.rejected; });
      return Queue(s, kv::EncodeError("store full: " + std::to_string(bytes_now) + " bytes"));
    }
    if (it == kv.end()) {
      it = kv.emplace(m.key, std::move(m.value)).first;
    } else {
      it->second = std::move(m.value);
    }
    bytes = bytes_now - old_bytes + new_bytes;
    Count([&](Stats& st) {
      ++st.sets;
      st.keys = kv.size();
      st.bytes = bytes;
    });
    Queue(s, kv::EncodeEmpty(kv::Type::kOk));
    auto w = waiters.find(m.key);
    if (w == waiters.end()) return;
    std::vector<Session*> waiting = std::move(w->second);
    waiters.erase(w);
    const std::string frame = kv::EncodeValue(it->second);
    for (Session* o : waiting) {
      o->state = State::kReady;
      o->wait_key.clear();
      o->deadline = MonoNowNs() + opts.idle_timeout;
      Queue(*o, frame);
    }
  }

  void HandleGet(Session& s, const kv::Message& m) {
    Count([](Stats& st) { ++st.gets; });
    auto it = kv.find(m.key);
    if (it != kv.end()) return Queue(s, kv::EncodeValue(it->second));
    if (m.wait_ms == 0) return Queue(s, kv::EncodeEmpty(kv::Type::kNotFound));
    s.state = State::kWaiting;
    s.wait_key = m.key;
    s.deadline = MonoNowNs() + static_cast<Nanos>(std::min(m.wait_ms, opts.max_wait_ms)) * kNsPerMs;
    waiters[m.key].push_back(&s);
  }

  // Handles buffered frames while the session may take one.
  void Process(Session& s) {
    while (!s.dead && s.out.empty() && (s.state == State::kAuth || s.state == State::kReady)) {
      std::string body;
      auto r = s.in.Next(MaxFrame(s), &body);
      if (r == kv::FrameReader::Result::kNeedMore) return;
      if (r == kv::FrameReader::Result::kMalformed) return Malformed(s, "bad frame length");
      auto m = kv::Decode(body, opts.limits);
      if (!m.ok()) return Malformed(s, m.status().message());
      if (s.state == State::kAuth) {
        HandleAuth(s, *m);
        continue;
      }
      s.deadline = MonoNowNs() + opts.idle_timeout;
      if (m->type == kv::Type::kSet) {
        HandleSet(s, *m);
      } else if (m->type == kv::Type::kGet) {
        HandleGet(s, *m);
      } else {
        return Malformed(s, "unexpected message type");
      }
    }
  }

  void Read(Session& s) {
    char buf[64 * 1024];
    const size_t limit = static_cast<size_t>(MaxFrame(s)) + 4;
    while (!s.dead && s.in.size() < limit) {
      size_t want = std::min(sizeof buf, limit - s.in.size());
      ssize_t n = recv(s.fd.get(), buf, want, MSG_DONTWAIT);
      if (n > 0) {
        if (s.state == State::kClosing) return Kill(s);
        if (s.state == State::kWaiting) return Malformed(s, "data out of turn");
        s.in.Append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      Kill(s);  // EOF or error
      return;
    }
    Process(s);
  }

  void Expire(Session& s, Nanos now) {
    if (s.dead || now < s.deadline) return;
    switch (s.state) {
      case State::kAuth:
        Count([](Stats& st) { ++st.auth_timeouts; });
        Kill(s);
        break;
      case State::kWaiting:
        StopWaiting(s);
        s.deadline = now + opts.idle_timeout;
        Queue(s, kv::EncodeEmpty(kv::Type::kNotFound));
        break;
      case State::kReady:
        Kill(s);  // idle (or not reading its reply): the client redials when it needs us
        break;
      case State::kClosing:
        Kill(s);
        break;
    }
  }
};

StatusOr<std::unique_ptr<TcpStoreServer>> TcpStoreServer::Start(const std::string& listen,
                                                                std::string token) {
  return Start(listen, std::move(token), Options{});
}

StatusOr<std::unique_ptr<TcpStoreServer>> TcpStoreServer::Start(const std::string& listen,
                                                                std::string token,
                                                                Options options) {
  if (token.empty()) return InvalidArgumentError("kv server: empty token");
  FL_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(listen));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(hp.port);
  if (inet_pton(AF_INET, hp.host.c_str(), &sa.sin_addr) != 1)
    return InvalidArgumentError("kv server: listen address '" + listen +
                                "' is not IPv4 ADDRESS:PORT");
  std::unique_ptr<TcpStoreServer> srv(new TcpStoreServer());
  srv->impl_ = std::make_unique<Impl>();
  Impl& im = *srv->impl_;
  im.token = std::move(token);
  im.opts = options;
  im.listen_fd = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (im.listen_fd.get() < 0) return ErrnoStatus(errno, "kv server: socket");
  int one = 1;
  setsockopt(im.listen_fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(im.listen_fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    return ErrnoStatus(errno, "kv server: bind " + listen);
  if (::listen(im.listen_fd.get(), 1024) != 0) return ErrnoStatus(errno, "kv server: listen");
  socklen_t len = sizeof sa;
  if (getsockname(im.listen_fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    return ErrnoStatus(errno, "kv server: getsockname");
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
  srv->address_ = std::string(ip) + ":" + std::to_string(ntohs(sa.sin_port));
  int p[2];
  if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return ErrnoStatus(errno, "kv server: pipe");
  im.wake_r = UniqueFd(p[0]);
  im.wake_w = UniqueFd(p[1]);
  srv->thread_ = std::thread([s = srv.get()] { s->Loop(); });
  return srv;
}

TcpStoreServer::~TcpStoreServer() { Stop(); }

void TcpStoreServer::Stop() {
  if (!impl_ || stopped_.exchange(true)) return;
  char c = 1;
  while (write(impl_->wake_w.get(), &c, 1) < 0 && errno == EINTR) {
  }
  if (thread_.joinable()) thread_.join();
  impl_->waiters.clear();
  impl_->sessions.clear();
  impl_->listen_fd.Reset();
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  impl_->stats.connections = 0;
}

TcpStoreServer::Stats TcpStoreServer::stats() const {
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  return impl_->stats;
}

void TcpStoreServer::Loop() {
  Impl& im = *impl_;
  std::vector<pollfd> pfds;
  std::vector<Session*> polled;
  while (true) {
    const Nanos now = MonoNowNs();
    pfds.clear();
    polled.clear();
    pfds.push_back({im.wake_r.get(), POLLIN, 0});
    const bool accepting = now >= im.accept_paused_until;
    pfds.push_back({accepting ? im.listen_fd.get() : -1, POLLIN, 0});
    Nanos next = now + kNsPerSec;
    if (!accepting) next = std::min(next, im.accept_paused_until);
    for (Session& s : im.sessions) {
      short ev = 0;
      if (s.out.empty()) ev |= POLLIN;
      if (!s.out.empty()) ev |= POLLOUT;
      pfds.push_back({s.fd.get(), ev, 0});
      polled.push_back(&s);
      next = std::min(next, s.deadline);
    }
    int timeout_ms = static_cast<int>(std::max<Nanos>(0, next - now) / kNsPerMs) + 1;
    int n = poll(pfds.data(), pfds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) {
      FL_LOG(kError, "kv") << "poll: " << std::strerror(errno);
      return;
    }
    if (n > 0 && pfds[0].revents) return;  // Stop
    if (n > 0 && pfds[1].revents) im.Accept();
    for (size_t i = 0; n > 0 && i < polled.size(); ++i) {
      Session& s = *polled[i];
      short re = pfds[i + 2].revents;
      if (s.dead || re == 0) continue;
      if (re & POLLOUT) {
        im.Flush(s);
        if (!s.dead && s.out.empty()) im.Process(s);
      }
      if (!s.dead && (re & (POLLIN | POLLHUP | POLLERR))) im.Read(s);
      if (!s.dead && (re & POLLNVAL)) im.Kill(s);
    }
    const Nanos after = MonoNowNs();
    for (Session& s : im.sessions) im.Expire(s, after);
    im.sessions.remove_if([](const Session& s) { return s.dead; });
    im.Count([&](Stats& st) { st.connections = im.sessions.size(); });
  }
}

}  // namespace fl::ccl
