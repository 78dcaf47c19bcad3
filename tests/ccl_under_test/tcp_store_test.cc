// The TCP rendezvous store: its wire format, authentication (right and wrong token, a server
// that cannot prove it holds the token), waiting, deadlines, caps, what a hostile peer may
// send (counted and dropped, the server keeps serving), a server restart under a waiting
// client, OpenStore's specs, and real ranks meeting through it (threads, and ftccl-perf
// processes started the way a launcher starts them).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "ccl_under_test/api/tcp_store.h"
#include "ccl_under_test/ftccl/ftccl.h"
#include "common/file_util.h"
#include "test_ranks.h"
#include "tests/child_process.h"

#ifndef FL_FTCCL_PERF_PATH
#error "FL_FTCCL_PERF_PATH must name the ftccl-perf binary"
#endif

namespace fl::ccl {
namespace {

constexpr const char* kToken = "s3cret-token-for-tests";

std::unique_ptr<TcpStoreServer> StartServer(TcpStoreServer::Options o = {},
                                            const std::string& listen = "127.0.0.1:0") {
  auto s = TcpStoreServer::Start(listen, kToken, o);
  if (!s.ok()) FAIL("server: " << s.status().ToString());
  return std::move(*s);
}

// A hand-driven peer for what TcpStore never sends.
class RawPeer {
 public:
  explicit RawPeer(const std::string& addr) {
    auto hp = ParseHostPort(addr);
    REQUIRE(hp.ok());
    fd_ = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(hp->port);
    inet_pton(AF_INET, hp->host.c_str(), &sa.sin_addr);
    REQUIRE(connect(fd_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  }
  void Send(const std::string& bytes) {
    REQUIRE(send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }
  // The next frame's body; nullopt when the server closed the connection (or 5 s passed).
  std::optional<std::string> Frame(uint32_t max = 1 << 21) {
    Deadline d = Deadline::After(5 * kNsPerSec);
    while (true) {
      std::string body;
      if (in_.Next(max, &body) == kv::FrameReader::Result::kFrame) return body;
      pollfd p{fd_.get(), POLLIN, 0};
      if (poll(&p, 1, d.RemainingMsForPoll()) <= 0) return std::nullopt;
      char buf[4096];
      ssize_t n = recv(fd_.get(), buf, sizeof buf, 0);
      if (n <= 0) return std::nullopt;
      in_.Append(buf, static_cast<size_t>(n));
    }
  }
  // True when the server closes the connection within 5 s (after any frames it still sends).
  bool Closed() {
    while (Frame()) {
    }
    pollfd p{fd_.get(), POLLIN, 0};
    char c;
    return poll(&p, 1, 0) >= 0 && recv(fd_.get(), &c, 1, MSG_DONTWAIT) == 0;
  }
  // Reads the hello and authenticates with token.
  bool Auth(const std::string& token) {
    auto hello = Frame();
    if (!hello) return false;
    auto h = kv::Decode(*hello, {});
    if (!h.ok() || h->type != kv::Type::kHello) return false;
    std::string mine(kv::kNonceBytes, 'c');
    Send(kv::EncodeAuth(mine, kv::AuthMac(token, kv::kClientLabel, h->nonce, mine)));
    auto reply = Frame();
    return reply && kv::Decode(*reply, {}).ok() &&
           kv::Decode(*reply, {})->type == kv::Type::kAuthOk;
  }

 private:
  UniqueFd fd_;
  kv::FrameReader in_;
};

bool WaitStat(TcpStoreServer& s, uint64_t TcpStoreServer::Stats::*field, uint64_t want) {
  return WaitUntil([&] { return s.stats().*field >= want; }, Deadline::After(5 * kNsPerSec));
}

TEST_CASE("kv protocol: every message round-trips, bad bodies are InvalidArgument", "[unit]") {
  kv::Limits l;
  l.max_key = 8;
  l.max_value = 16;
  auto body = [](const std::string& frame) { return frame.substr(4); };
  auto set = kv::Decode(body(kv::EncodeSet("job/a", "1.2.3.4:5")), l);
  REQUIRE(set.ok());
  CHECK(set->type == kv::Type::kSet);
  CHECK(set->key == "job/a");
  CHECK(set->value == "1.2.3.4:5");
  auto get = kv::Decode(body(kv::EncodeGet("job/a", 1234)), l);
  REQUIRE(get.ok());
  CHECK(get->wait_ms == 1234);
  CHECK(get->key == "job/a");
  auto empty_value = kv::Decode(body(kv::EncodeSet("k", "")), l);
  REQUIRE(empty_value.ok());
  CHECK(empty_value->value.empty());
  auto hello = kv::Decode(body(kv::EncodeHello(std::string(32, 'n'))), l);
  REQUIRE(hello.ok());
  CHECK(hello->nonce == std::string(32, 'n'));

  for (const std::string& bad : {
           std::string(),                                   // no type
           std::string("\x63", 1),                          // unknown type 99
           body(kv::EncodeSet("", "v")),                    // empty key
           body(kv::EncodeSet("123456789", "v")),           // key over 8
           body(kv::EncodeSet("k", std::string(17, 'v'))),  // value over 16
           body(kv::EncodeGet("", 1)),                      // empty key
           std::string("\x05\x00\x00\x00\xff"
                       "abc",
                       8),                               // key length past the body
           std::string("\x06\x00\x00", 3),               // get without its wait
           body(kv::EncodeHello(std::string(31, 'n'))),  // short nonce
           std::string("\x07x", 2),                      // kOk with a payload
       }) {
    auto m = kv::Decode(bad, l);
    INFO("body of " << bad.size() << " bytes");
    CHECK(m.status().code() == Code::kInvalidArgument);
  }
  // Framing: a zero or oversize length is malformed; a partial frame waits for more.
  kv::FrameReader r;
  std::string out;
  r.Append("\x00\x00", 2);
  CHECK(r.Next(100, &out) == kv::FrameReader::Result::kNeedMore);
  r.Append("\x00\x02\x07", 3);
  CHECK(r.Next(100, &out) == kv::FrameReader::Result::kNeedMore);
  r.Append("x", 1);
  REQUIRE(r.Next(100, &out) == kv::FrameReader::Result::kFrame);
  CHECK(out == "\x07x");
  kv::FrameReader zero, big;
  zero.Append("\x00\x00\x00\x00", 4);
  CHECK(zero.Next(100, &out) == kv::FrameReader::Result::kMalformed);
  big.Append("\x00\x00\x00\x65", 4);
  CHECK(big.Next(100, &out) == kv::FrameReader::Result::kMalformed);
  // The MAC depends on the token and on both nonces.
  const std::string s(32, 's'), c(32, 'c');
  auto mac = kv::AuthMac("t", kv::kClientLabel, s, c);
  CHECK(mac.size() == 32);
  CHECK(kv::MacEqual(mac, kv::AuthMac("t", kv::kClientLabel, s, c)));
  CHECK_FALSE(kv::MacEqual(mac, kv::AuthMac("u", kv::kClientLabel, s, c)));
  CHECK_FALSE(kv::MacEqual(mac, kv::AuthMac("t", kv::kServerLabel, s, c)));
  CHECK_FALSE(kv::MacEqual(mac, kv::AuthMac("t", kv::kClientLabel, c, s)));
  CHECK_FALSE(kv::MacEqual(mac, mac.substr(1)));
}

TEST_CASE("tcp store: set and get with the right token, overwrite, threads sharing a client",
          "[unit]") {
  auto srv = StartServer();
  CHECK(srv->address().rfind("127.0.0.1:", 0) == 0);
  TcpStore a(srv->address(), kToken), b(srv->address(), kToken);
  REQUIRE(a.Set("job/x", "1").ok());
  auto v = b.Get("job/x", Deadline::After(5 * kNsPerSec));
  REQUIRE(v.ok());
  CHECK(*v == "1");
  REQUIRE(b.Set("job/x", std::string("two\0bytes", 9)).ok());
  v = a.Get("job/x", Deadline::After(5 * kNsPerSec));
  REQUIRE(v.ok());
  CHECK(*v == std::string("two\0bytes", 9));
  // One client, several threads: a waiting Get does not hold up a Set from another thread.
  std::vector<StatusOr<std::string>> got(4, InternalError("unset"));
  testing::RunRanks(8, [&](int i) {
    if (i < 4) {
      got[i] = a.Get("job/t" + std::to_string(i), Deadline::After(10 * kNsPerSec));
    } else {
      a.Set("job/t" + std::to_string(i - 4), std::to_string(i)).IgnoreError();
    }
  });
  for (int i = 0; i < 4; ++i) {
    REQUIRE(got[i].ok());
    CHECK(*got[i] == std::to_string(i + 4));
  }
  auto st = srv->stats();
  CHECK(st.keys == 5);
  CHECK(st.auth_failures == 0);
  CHECK(st.malformed == 0);
}

TEST_CASE("tcp store: a wrong token is refused at once and counted", "[unit]") {
  auto srv = StartServer();
  TcpStore bad(srv->address(), "not-the-token");
  Nanos t0 = MonoNowNs();
  Status s = bad.Set("job/x", "1");
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK_THAT(s.message(), Catch::Contains("refused our token"));
  auto g = bad.Get("job/x", Deadline::After(20 * kNsPerSec));
  CHECK(g.status().code() == Code::kFailedPrecondition);
  CHECK(MonoNowNs() - t0 < 5 * kNsPerSec);  // not retried until the deadline
  CHECK(srv->stats().auth_failures == 2);
  CHECK(srv->stats().keys == 0);
}

TEST_CASE("tcp store: a client does not trust a server that cannot prove the token", "[unit]") {
  // The client's own check: a server holding another token answers kAuthFail here, so
  // impersonate one that "accepts" anything with a MAC it cannot compute.
  UniqueFd lfd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(lfd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  REQUIRE(listen(lfd.get(), 4) == 0);
  socklen_t len = sizeof sa;
  getsockname(lfd.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  std::thread fake([&] {
    UniqueFd c(accept(lfd.get(), nullptr, nullptr));
    std::string out =
        kv::EncodeHello(std::string(32, 'h')) + kv::EncodeAuthOk(std::string(32, 'm'));
    send(c.get(), out.data(), out.size(), MSG_NOSIGNAL);
    char buf[256];
    recv(c.get(), buf, sizeof buf, 0);  // the client's kAuth; then it hangs up
  });
  TcpStore client("127.0.0.1:" + std::to_string(ntohs(sa.sin_port)), kToken);
  Status s = client.Set("k", "v");
  fake.join();
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK_THAT(s.message(), Catch::Contains("did not prove"));
}

TEST_CASE("tcp store: a Get waits until another client sets the key", "[unit]") {
  auto srv = StartServer();
  TcpStore waiter(srv->address(), kToken), setter(srv->address(), kToken);
  StatusOr<std::string> got = InternalError("unset");
  std::thread t([&] { got = waiter.Get("job/late", Deadline::After(20 * kNsPerSec)); });
  // The Get is parked on the server before the key exists.
  REQUIRE(WaitStat(*srv, &TcpStoreServer::Stats::gets, 1));
  REQUIRE(setter.Set("job/late", "here").ok());
  t.join();
  REQUIRE(got.ok());
  CHECK(*got == "here");
}

TEST_CASE("tcp store: a Get ends at its deadline, across several server waits", "[unit]") {
  auto srv = StartServer();
  TcpStore::Options o;
  o.get_chunk_ms = 100;  // several kGet round trips within the deadline
  TcpStore c(srv->address(), kToken, o);
  Nanos t0 = MonoNowNs();
  auto g = c.Get("job/never", Deadline::After(450 * kNsPerMs));
  Nanos took = MonoNowNs() - t0;
  CHECK(g.status().code() == Code::kDeadlineExceeded);
  CHECK_THAT(g.status().message(), Catch::Contains("job/never"));
  CHECK(took >= 440 * kNsPerMs);
  CHECK(took < 3 * kNsPerSec);
  // More than one kGet: the wait was cut into chunks. Not 4: under ASan on 2 busy cores a
  // round trip can take most of a 100 ms chunk (CI run of stop 35's tree: 3).
  CHECK(srv->stats().gets >= 2);
  // A deadline already past still asks once.
  REQUIRE(c.Set("job/now", "1").ok());
  auto now = c.Get("job/now", Deadline::After(0));
  REQUIRE(now.ok());
  CHECK(*now == "1");
}

TEST_CASE("tcp store: malformed frames are counted, the connection dropped, the server serves on",
          "[unit]") {
  auto srv = StartServer();
  uint64_t expect = 0;
  SECTION("before authentication") {
    std::vector<std::string> garbage = {
        std::string("\xff\xff\xff\xff", 4),                          // huge length
        std::string("\x00\x00\x00\x00", 4),                          // zero length
        std::string("\x00\x00\x00\x01\x63", 5),                      // unknown type
        kv::EncodeSet("job/x", "1"),                                 // a request before auth
        kv::EncodeAuth(std::string(31, 'c'), std::string(32, 'm')),  // short nonce
        "GET / HTTP/1.1\r\nHost: x\r\n\r\n",                         // the wrong protocol
    };
    for (const auto& g : garbage) {
      RawPeer p(srv->address());
      REQUIRE(p.Frame());  // hello
      p.Send(g);
      CHECK(p.Closed());
      ++expect;
      CHECK(WaitStat(*srv, &TcpStoreServer::Stats::malformed, expect));
    }
  }
  SECTION("after authentication") {
    std::vector<std::string> garbage = {
        std::string("\x00\x00\x00\x08\x05\x00\x00\x10\x00"
                    "abc",
                    12),                                             // key length too big
        kv::EncodeEmpty(kv::Type::kOk),                              // a reply, not a request
        kv::EncodeSet("", "v"),                                      // empty key
        kv::EncodeAuth(std::string(32, 'c'), std::string(32, 'm')),  // auth again
    };
    for (const auto& g : garbage) {
      RawPeer p(srv->address());
      REQUIRE(p.Auth(kToken));
      p.Send(g);
      CHECK(p.Closed());
      ++expect;
      CHECK(WaitStat(*srv, &TcpStoreServer::Stats::malformed, expect));
    }
    // Data sent while a Get waits is out of turn.
    RawPeer p(srv->address());
    REQUIRE(p.Auth(kToken));
    p.Send(kv::EncodeGet("job/wait", 5000));
    REQUIRE(WaitStat(*srv, &TcpStoreServer::Stats::gets, 1));
    p.Send(kv::EncodeGet("job/wait", 5000));
    CHECK(p.Closed());
    ++expect;
    CHECK(WaitStat(*srv, &TcpStoreServer::Stats::malformed, expect));
  }
  CHECK(srv->stats().malformed == expect);
  TcpStore good(srv->address(), kToken);
  REQUIRE(good.Set("job/after", "ok").ok());
  auto v = good.Get("job/after", Deadline::After(5 * kNsPerSec));
  REQUIRE(v.ok());
  CHECK(*v == "ok");
}

TEST_CASE("tcp store: oversize keys and values, a full store, too many connections, slow auth",
          "[unit]") {
  TcpStoreServer::Options so;
  so.limits.max_key = 32;
  so.limits.max_value = 1024;
  so.max_keys = 3;
  so.max_bytes = 1 << 20;
  so.max_connections = 3;
  so.auth_timeout = 200 * kNsPerMs;
  auto srv = StartServer(so);
  TcpStore::Options co;
  co.limits = so.limits;
  TcpStore c(srv->address(), kToken, co);
  // The client refuses what the server would; nothing is sent.
  CHECK(c.Set("k", std::string(1025, 'v')).code() == Code::kInvalidArgument);
  CHECK(c.Set(std::string(33, 'k'), "v").code() == Code::kInvalidArgument);
  CHECK(c.Get("", Deadline::After(kNsPerSec)).status().code() == Code::kInvalidArgument);
  // A client with looser limits than the server: the frame is too big, the connection goes
  // (every redial too, until the Set's deadline).
  TcpStore::Options lo;
  lo.set_timeout = 300 * kNsPerMs;
  TcpStore loose(srv->address(), kToken, lo);
  Status big = loose.Set("k", std::string(64 * 1024, 'v'));
  CHECK(big.code() == Code::kDeadlineExceeded);
  CHECK(WaitStat(*srv, &TcpStoreServer::Stats::malformed, 1));
  // A full store says so; existing keys can still be overwritten.
  REQUIRE(c.Set("a", "1").ok());
  REQUIRE(c.Set("b", "1").ok());
  REQUIRE(c.Set("c", "1").ok());
  Status full = c.Set("d", "1");
  CHECK(full.code() == Code::kFailedPrecondition);
  CHECK_THAT(full.message(), Catch::Contains("store full"));
  CHECK(c.Set("a", "2").ok());
  CHECK(srv->stats().rejected == 1);
  // Connections: those that never authenticate time out; beyond the cap they are refused.
  uint64_t timeouts = srv->stats().auth_timeouts;
  {
    RawPeer silent(srv->address());
    CHECK(silent.Closed());
  }
  CHECK(WaitStat(*srv, &TcpStoreServer::Stats::auth_timeouts, timeouts + 1));
  REQUIRE(WaitUntil([&] { return srv->stats().connections <= 1; }, Deadline::After(5 * kNsPerSec)));
  RawPeer p1(srv->address()), p2(srv->address());
  REQUIRE(WaitUntil([&] { return srv->stats().connections == 3; }, Deadline::After(5 * kNsPerSec)));
  uint64_t refused = srv->stats().refused;
  RawPeer p3(srv->address());
  CHECK(p3.Closed());  // no hello: closed at once
  CHECK(WaitStat(*srv, &TcpStoreServer::Stats::refused, refused + 1));
}

TEST_CASE("tcp store: a waiting client redials a restarted server within its deadline", "[unit]") {
  auto srv = StartServer();
  const std::string addr = srv->address();
  TcpStore waiter(addr, kToken);
  REQUIRE(waiter.Set("job/before", "1").ok());  // a pooled connection that will break
  StatusOr<std::string> got = InternalError("unset");
  std::thread t([&] { got = waiter.Get("job/after-restart", Deadline::After(30 * kNsPerSec)); });
  REQUIRE(WaitStat(*srv, &TcpStoreServer::Stats::gets, 1));
  srv->Stop();
  srv.reset();
  auto again = TcpStoreServer::Start(addr, kToken);
  REQUIRE(again.ok());
  // The waiter is back once the new server sees its Get.
  REQUIRE(WaitStat(**again, &TcpStoreServer::Stats::gets, 1));
  TcpStore setter(addr, kToken);
  REQUIRE(setter.Set("job/after-restart", "v2").ok());
  t.join();
  REQUIRE(got.ok());
  CHECK(*got == "v2");
  // The restarted server is empty (documented): the old key is gone.
  CHECK(setter.Get("job/before", Deadline::After(0)).status().code() == Code::kDeadlineExceeded);
}

TEST_CASE("tcp store: Set redials until the server is there", "[unit]") {
  // Reserve a port, then free it: the first dials are refused.
  auto probe = StartServer();
  const std::string addr = probe->address();
  probe.reset();
  TcpStore::Options o;
  o.set_timeout = 20 * kNsPerSec;
  TcpStore c(addr, kToken, o);
  Status s = InternalError("unset");
  std::thread t([&] { s = c.Set("job/k", "v"); });
  std::unique_ptr<TcpStoreServer> srv;
  REQUIRE(WaitUntil(
      [&] {
        auto r = TcpStoreServer::Start(addr, kToken);
        if (r.ok()) srv = std::move(*r);
        return srv != nullptr;
      },
      Deadline::After(10 * kNsPerSec), 50 * kNsPerMs));
  t.join();
  CHECK(s.ok());
  CHECK(srv->stats().keys == 1);
}

TEST_CASE("tcp store: OpenStore specs", "[unit]") {
  char tmpl[] = "/tmp/flccl-kv-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  const std::string token_file = dir + "/token";
  REQUIRE(WriteFileAtomic(token_file, std::string(kToken) + "\n").ok());
  chmod(token_file.c_str(), 0600);
  auto srv = StartServer();
  {
    auto tcp = OpenStore("tcp://" + srv->address(), token_file);
    REQUIRE(tcp.ok());
    REQUIRE((*tcp)->Set("job/o", "1").ok());  // the token (trimmed) is the server's
    CHECK(dynamic_cast<TcpStore*>(tcp->get()) != nullptr);
    auto file = OpenStore(dir + "/rdv", "");
    REQUIRE(file.ok());
    CHECK(dynamic_cast<FileStore*>(file->get())->dir() == dir + "/rdv");
    auto file2 = OpenStore("file://" + dir + "/rdv", "");
    REQUIRE(file2.ok());
    CHECK(dynamic_cast<FileStore*>(file2->get()) != nullptr);
  }
  CHECK(OpenStore("", "").status().code() == Code::kInvalidArgument);
  CHECK(OpenStore("tcp://" + srv->address(), "").status().code() == Code::kInvalidArgument);
  CHECK(OpenStore("tcp://127.0.0.1", token_file).status().code() == Code::kInvalidArgument);
  CHECK(OpenStore("tcp://127.0.0.1:99999", token_file).status().code() == Code::kInvalidArgument);
  CHECK(OpenStore("tcp://127.0.0.1:0", token_file).status().code() == Code::kInvalidArgument);
  CHECK(OpenStore("redis://x:1", "").status().code() == Code::kInvalidArgument);
  CHECK(OpenStore(dir, token_file).status().code() == Code::kInvalidArgument);
  CHECK_FALSE(OpenStore("tcp://" + srv->address(), dir + "/missing").ok());
  REQUIRE(WriteFileAtomic(dir + "/empty", " \n").ok());
  CHECK(OpenStore("tcp://" + srv->address(), dir + "/empty").status().code() ==
        Code::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tcp store: ftccl ranks as threads meet through a TcpStoreServer", "[integration]") {
  auto srv = StartServer();
  const int n = 4;
  ftccl::FtcclOptions o;
  o.engine.watch_links = false;
  o.engine.dead_timeout = 5 * kNsPerSec;
  std::vector<Status> st(n);
  std::vector<size_t> wrong(n, 0);
  testing::RunRanks(n, [&](int r) {
    TcpStore store(srv->address(), kToken);  // one client per rank, as processes have
    auto c = ftccl::CreateFtcclCommunicator(testing::RankConfig(r, n, 2, &store, "kvjob"), o);
    if (!c.ok()) {
      st[r] = c.status();
      return;
    }
    std::vector<int32_t> v(50000, r + 1);
    st[r] = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kInt32, ReduceOp::kSum);
    for (int32_t x : v) wrong[r] += x != n * (n + 1) / 2;
  });
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r << ": " << st[r].ToString());
    CHECK(st[r].ok());
    CHECK(wrong[r] == 0);
  }
  auto s = srv->stats();
  CHECK(s.keys >= static_cast<size_t>(2 * n));  // addresses and the ready barrier
  CHECK(s.auth_failures == 0);
  CHECK(s.malformed == 0);
}

TEST_CASE(
    "tcp store: ftccl-perf processes take their rank from the launcher's environment "
    "and meet through the TCP store",
    "[integration]") {
  auto srv = StartServer();
  char tmpl[] = "/tmp/flccl-kvperf-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  const std::string token_file = dir + "/token";
  REQUIRE(WriteFileAtomic(token_file, kToken).ok());
  chmod(token_file.c_str(), 0600);
  const int n = 3;
  // Each rank from a different launcher's variables: Slurm, torch-style, Open MPI. NICs by
  // interface name ("lo") for rank 0, by address for the others.
  const std::vector<std::vector<std::string>> env = {
      {"SLURM_PROCID=0", "SLURM_NTASKS=3", "SLURM_LOCALID=0"},
      {"RANK=1", "WORLD_SIZE=3", "LOCAL_RANK=1"},
      {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=3", "OMPI_COMM_WORLD_LOCAL_RANK=2"},
  };
  std::vector<std::unique_ptr<fl::testing::ChildProcess>> ranks;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "-u",
                                     "FL_RANK",
                                     "-u",
                                     "FL_WORLD_SIZE",
                                     "-u",
                                     "RANK",
                                     "-u",
                                     "WORLD_SIZE",
                                     "-u",
                                     "SLURM_PROCID",
                                     "-u",
                                     "OMPI_COMM_WORLD_RANK",
                                     "FTCCL_HOST_ID=none"};
    argv.insert(argv.end(), env[r].begin(), env[r].end());
    for (const char* a : {FL_FTCCL_PERF_PATH, "--store"}) argv.push_back(a);
    argv.push_back("tcp://" + srv->address());
    for (const std::string& a :
         {std::string("--store-token-file"), token_file, std::string("--job-id"),
          std::string("kvperf"), std::string("--nic-addrs"),
          r == 0 ? std::string("lo") : "127.0.0." + std::to_string(r + 1), std::string("-b"),
          std::string("64KiB"), std::string("-e"), std::string("64KiB"), std::string("-n"),
          std::string("5"), std::string("-w"), std::string("1"), std::string("--timeout"),
          std::string("20s")})
      argv.push_back(a);
    fl::testing::ChildProcess::Options po;
    po.out = dir + "/out." + std::to_string(r);
    ranks.push_back(std::make_unique<fl::testing::ChildProcess>(argv, po));
    REQUIRE(ranks.back()->pid() > 0);
  }
  for (int r = 0; r < n; ++r) {
    auto code = ranks[r]->Wait(Deadline::After(60 * kNsPerSec));
    auto log = ReadFile(dir + "/out." + std::to_string(r));
    INFO("rank " << r << " output:\n" << (log.ok() ? *log : log.status().ToString()));
    REQUIRE(code.has_value());
    CHECK(*code == 0);
  }
  auto out0 = ReadFile(dir + "/out.0");
  REQUIRE(out0.ok());
  CHECK_THAT(*out0, Catch::Contains("Out of bounds values : 0 OK"));
  CHECK(srv->stats().auth_failures == 0);
  CHECK(srv->stats().keys >= static_cast<size_t>(2 * n));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fl::ccl
