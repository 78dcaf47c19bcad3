// The coordinator under many agents: FanOut's bounded parallel calls, and an agent that stops
// reading its stream holding up nobody but itself.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "harness/agent/agent_session.h"
#include "harness/control/auth.h"
#include "harness/coordinator/control_server.h"
#include "harness/proto/faultline.grpc.pb.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

namespace pb = faultline::v1;

std::vector<std::string> Hosts(int n) {
  std::vector<std::string> h;
  for (int i = 0; i < n; ++i) h.push_back("h" + std::to_string(i));
  return h;
}

TEST_CASE("fan-out: every host is called once, at most max_in_flight at a time, results in order",
          "[unit]") {
  const std::vector<std::string> hosts = Hosts(200);
  std::mutex mu;
  std::map<std::string, int> calls;
  std::atomic<int> in_flight{0}, most{0};
  std::vector<Status> out = FanOut(
      hosts, 8,
      [&](const std::string& h) -> Status {
        const int now = ++in_flight;
        for (int m = most; now > m && !most.compare_exchange_weak(m, now);) {
        }
        {
          std::lock_guard lock(mu);
          ++calls[h];
        }
        std::this_thread::yield();
        --in_flight;
        return h == "h7" ? UnavailableError("h7 is down") : OkStatus();
      },
      Deadline::After(30 * kNsPerSec));
  REQUIRE(out.size() == hosts.size());
  CHECK(calls.size() == hosts.size());
  for (const auto& [h, n] : calls) CHECK(n == 1);
  CHECK(most <= 8);
  CHECK(most >= 1);
  for (size_t i = 0; i < hosts.size(); ++i) CHECK(out[i].ok() == (hosts[i] != "h7"));
  CHECK(FirstError(out).ToString().find("h7 is down") != std::string::npos);
}

TEST_CASE("fan-out: a stuck host does not hold up the others", "[unit]") {
  const std::vector<std::string> hosts = Hosts(100);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> done{0};
  auto run = std::async(std::launch::async, [&] {
    return FanOut(
        hosts, 4,
        [&](const std::string& h) -> Status {
          if (h == "h0") {
            if (released.wait_for(std::chrono::seconds(30)) != std::future_status::ready)
              return DeadlineExceededError("never released");
            return OkStatus();
          }
          ++done;
          return OkStatus();
        },
        Deadline::After(60 * kNsPerSec));
  });
  // Every other host is done while h0 is still in its call.
  CHECK(WaitUntil([&] { return done == 99; }, Deadline::After(20 * kNsPerSec)));
  CHECK(run.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready);
  release.set_value();
  std::vector<Status> out = run.get();
  CHECK(FirstError(out).ok());
}

TEST_CASE("fan-out: hosts whose turn comes after the deadline are not called", "[unit]") {
  std::atomic<int> calls{0};
  std::vector<Status> out = FanOut(
      Hosts(10), 2,
      [&](const std::string&) {
        ++calls;
        return OkStatus();
      },
      Deadline::After(0));
  CHECK(calls == 0);
  REQUIRE(out.size() == 10);
  for (const Status& st : out) CHECK(st.code() == Code::kDeadlineExceeded);
}

// A raw session that says Hello, reads its Welcome and then never reads again; it goes on
// sending heartbeats (every 50 ms), so the coordinator hears from it and does not lose it.
class StuckAgent {
 public:
  StuckAgent(const std::string& address, const std::string& token, const std::string& host)
      : stub_(pb::Coordinator::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {
    ctx_.AddMetadata(kTokenMetadataKey, token);
    stream_ = stub_->Session(&ctx_);
    pb::AgentMessage hello;
    hello.mutable_hello()->set_token(token);
    hello.mutable_hello()->set_host(host);
    hello.mutable_hello()->set_instance_id("stuck-" + host);
    pb::CoordinatorMessage welcome;
    ok_ = stream_->Write(hello) && stream_->Read(&welcome) && welcome.has_welcome();
    if (ok_)
      beat_ = std::thread([this] {
        pb::AgentMessage hb;
        hb.mutable_heartbeat();
        while (stop_.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout)
          if (!stream_->Write(hb)) return;
      });
  }
  ~StuckAgent() {
    stopping_.set_value();
    if (beat_.joinable()) beat_.join();
    ctx_.TryCancel();
    stream_->Finish().error_code();
  }
  bool ok() const { return ok_; }

 private:
  std::unique_ptr<pb::Coordinator::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::AgentMessage, pb::CoordinatorMessage>> stream_;
  bool ok_ = false;
  std::promise<void> stopping_;
  std::future<void> stop_ = stopping_.get_future();
  std::thread beat_;
};

TEST_CASE(
    "control: an agent that stops reading fills only its own send queue, and the others keep "
    "their heartbeats and answers",
    "[integration]") {
  ControlServerOptions o;
  o.token = "t0k3n-for-the-stuck-agent-test";
  o.run_id = "stuck";
  o.lease_ns = 600 * kNsPerMs;
  o.heartbeat_interval_ns = 50 * kNsPerMs;
  auto server = ControlServer::Start(o);
  REQUIRE(server.ok());
  AgentSessionOptions a;
  a.coordinator = (*server)->address();
  a.token = o.token;
  a.host = "good";
  a.heartbeat_interval_ns = 50 * kNsPerMs;
  AgentHandlers handlers;
  handlers.on_command = [](const pb::CoordinatorMessage&) -> std::optional<pb::Ack> {
    pb::Ack ack;
    ack.set_ok(true);
    return ack;
  };
  auto good = AgentSession::Connect(a, handlers);
  REQUIRE(good.ok());
  StuckAgent stuck((*server)->address(), o.token, "stuck");
  REQUIRE(stuck.ok());
  REQUIRE((*server)->WaitForAgents({"good", "stuck"}, Deadline::After(10 * kNsPerSec)).ok());

  // 256 KiB commands to the stuck agent until its queue is full: the flow-control windows
  // and socket buffers hold some, the send queue the rest, and then Call fails at once.
  pb::CoordinatorMessage big;
  big.mutable_launch()->set_worker_args_json(std::string(256 << 10, 'x'));
  bool refused = false;
  const Nanos flood_start = MonoNowNs();
  for (int i = 0; i < 5000 && !refused; ++i) {
    auto ack = (*server)->Call("stuck", big, Deadline::After(kNsPerMs));
    REQUIRE_FALSE(ack.ok());
    refused = ack.status().code() == Code::kUnavailable;
    if (refused) CHECK(ack.status().ToString().find("has not read") != std::string::npos);
  }
  CHECK(refused);
  // Meanwhile, and after: the good agent's heartbeats kept its lease (600 ms) alive, and it
  // answers commands and clock probes at once.
  for (int i = 0; i < 20; ++i) {
    const Nanos t0 = MonoNowNs();
    auto ack = (*server)->Call("good", big, Deadline::After(5 * kNsPerSec));
    REQUIRE(ack.ok());
    CHECK(ack->ok());
    CHECK(MonoNowNs() - t0 < 2 * kNsPerSec);
  }
  CHECK((*server)->SyncClock("good", 3, Deadline::After(5 * kNsPerSec)).ok());
  CHECK(WaitUntil([&] { return MonoNowNs() - flood_start > 2 * o.lease_ns; },
                  Deadline::After(10 * kNsPerSec), 10 * kNsPerMs));
  CHECK_FALSE((*good)->lease_lapsed());
  CHECK((*good)->connected());
  auto info = (*server)->Agent("stuck");
  REQUIRE(info.ok());
  CHECK_FALSE(info->lost);  // it still speaks; it only stopped reading
  (*good)->Stop();
  (*server)->Shutdown();  // the stuck stream is cancelled; Shutdown does not hang on it
}

}  // namespace
}  // namespace fl::harness
