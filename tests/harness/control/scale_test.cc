// The coordinator under many agents: FanOut's bounded parallel calls, an agent that stops
// reading its stream holding up nobody but itself, and telemetry read ahead of a slow store.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "harness/agent/agent_session.h"
#include "harness/control/auth.h"
#include "harness/coordinator/control_server.h"
#include "harness/coordinator/fan_out.h"
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

TEST_CASE("fleet pace: the small-lab pace up to 250 agents, bounded messages per second beyond",
          "[unit]") {
  const Nanos lease = 3 * kNsPerSec;
  for (size_t n : {1u, 8u, 250u}) {
    const FleetPace p = PaceForFleet(n, lease);
    CHECK(p.telemetry_interval_ns == 50 * kNsPerMs);
    CHECK(p.heartbeat_interval_ns == lease / 6);
  }
  // Telemetry batches from the whole fleet stay about 5,000 a second until the 1 s cap.
  for (size_t n : {512u, 1024u, 4096u}) {
    const FleetPace p = PaceForFleet(n, lease);
    const double batches_per_s = static_cast<double>(n) * 1e9 / p.telemetry_interval_ns;
    CHECK(batches_per_s == Approx(5000).epsilon(0.01));
  }
  CHECK(PaceForFleet(10000, lease).telemetry_interval_ns == kNsPerSec);
  // Heartbeats grow with the fleet but always fit four into a lease.
  CHECK(PaceForFleet(2000, lease).heartbeat_interval_ns == 600 * kNsPerMs);
  for (size_t n : {4096u, 100000u})
    CHECK(PaceForFleet(n, lease).heartbeat_interval_ns == lease / 4);
  CHECK(PaceForFleet(8000, 10 * kNsPerSec).heartbeat_interval_ns == 2400 * kNsPerMs);
}

TEST_CASE(
    "control: the Welcome carries the fleet's pace, and an agent whose telemetry flows sends no "
    "heartbeat of its own",
    "[integration]") {
  ControlServerOptions o;
  o.token = "t0k3n-for-the-pace-test";
  o.run_id = "pace";
  o.lease_ns = 2 * kNsPerSec;
  o.heartbeat_interval_ns = 100 * kNsPerMs;
  o.agent_heartbeat_interval_ns = 100 * kNsPerMs;
  o.agent_telemetry_interval_ns = 40 * kNsPerMs;
  auto server = ControlServer::Start(o);
  REQUIRE(server.ok());
  AgentSessionOptions a;
  a.coordinator = (*server)->address();
  a.token = o.token;
  a.host = "paced";
  a.heartbeat_interval_ns = 5 * kNsPerSec;  // the Welcome's 100 ms replaces it
  auto agent = AgentSession::Connect(a, AgentHandlers{});
  REQUIRE(agent.ok());
  CHECK((*agent)->telemetry_interval_ns() == 40 * kNsPerMs);
  // Silent: a heartbeat every 100 ms (about 5 in 0.5 s; 0 if the Welcome were ignored).
  const uint64_t hb0 = (*server)->stats().heartbeats;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const uint64_t silent = (*server)->stats().heartbeats - hb0;
  CHECK(silent >= 3);
  // Telemetry every 40 ms for 0.5 s: it tells the coordinator the agent is alive, and no
  // heartbeat goes beside it.
  const uint64_t hb1 = (*server)->stats().heartbeats;
  pb::TelemetryBatch batch;
  batch.add_samples()->set_rank(0);
  for (int i = 0; i < 12; ++i) {
    REQUIRE((*agent)->SendTelemetry(batch).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }
  CHECK((*server)->stats().heartbeats - hb1 <= 1);
  CHECK(
      WaitUntil([&] { return (*server)->stats().samples == 12; }, Deadline::After(5 * kNsPerSec)));
  auto info = (*server)->Agent("paced");
  REQUIRE(info.ok());
  CHECK(MonoNowNs() - info->last_heard_mono_ns < 200 * kNsPerMs);
  (*agent)->Stop();
  (*server)->Shutdown();
}

// A real agent session for host "good" that acknowledges every command at once, with
// heartbeats every 50 ms.
StatusOr<std::unique_ptr<AgentSession>> ConnectGoodAgent(const std::string& address,
                                                         const std::string& token) {
  AgentSessionOptions a;
  a.coordinator = address;
  a.token = token;
  a.host = "good";
  a.heartbeat_interval_ns = 50 * kNsPerMs;
  AgentHandlers handlers;
  handlers.on_command = [](const pb::CoordinatorMessage&) -> std::optional<pb::Ack> {
    pb::Ack ack;
    ack.set_ok(true);
    return ack;
  };
  return AgentSession::Connect(a, handlers);
}

// A raw session driven by the test: Hello, then whatever the test writes and reads.
class RawAgent {
 public:
  RawAgent(const std::string& address, const std::string& token, const std::string& host)
      : stub_(pb::Coordinator::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {
    ctx_.AddMetadata(kTokenMetadataKey, token);
    stream_ = stub_->Session(&ctx_);
    pb::AgentMessage hello;
    hello.mutable_hello()->set_token(token);
    hello.mutable_hello()->set_host(host);
    hello.mutable_hello()->set_instance_id("raw-" + host);
    pb::CoordinatorMessage welcome;
    ok_ = stream_->Write(hello) && stream_->Read(&welcome) && welcome.has_welcome();
  }
  ~RawAgent() {
    ctx_.TryCancel();
    stream_->Finish().error_code();
  }
  bool ok() const { return ok_; }
  // The next command (heartbeats skipped), or nullopt when the stream ended.
  std::optional<pb::CoordinatorMessage> NextCommand() {
    pb::CoordinatorMessage m;
    while (stream_->Read(&m))
      if (!m.has_heartbeat()) return m;
    return std::nullopt;
  }
  bool Telemetry(int64_t iteration) {
    pb::AgentMessage m;
    auto* s = m.mutable_telemetry()->add_samples();
    s->set_rank(0);
    s->set_iteration(iteration);
    return stream_->Write(m);
  }
  bool Ack(uint64_t command_id) {
    pb::AgentMessage m;
    m.mutable_ack()->set_command_id(command_id);
    m.mutable_ack()->set_ok(true);
    return stream_->Write(m);
  }
  bool Heartbeat() {
    pb::AgentMessage hb;
    hb.mutable_heartbeat();
    return stream_->Write(hb);
  }
  bool WritesDone() { return stream_->WritesDone(); }

 private:
  std::unique_ptr<pb::Coordinator::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::AgentMessage, pb::CoordinatorMessage>> stream_;
  bool ok_ = false;
};

// A raw session that says Hello, reads its Welcome and then never reads again; it goes on
// sending heartbeats (every 50 ms), so the coordinator hears from it and does not lose it.
class StuckAgent {
 public:
  StuckAgent(const std::string& address, const std::string& token, const std::string& host)
      : raw_(address, token, host) {
    if (raw_.ok())
      beat_ = std::thread([this] {
        while (stop_.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout)
          if (!raw_.Heartbeat()) return;
      });
  }
  ~StuckAgent() {
    stopping_.set_value();
    if (beat_.joinable()) beat_.join();
  }
  bool ok() const { return raw_.ok(); }

 private:
  RawAgent raw_;
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
  auto good = ConnectGoodAgent((*server)->address(), o.token);
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

TEST_CASE(
    "control: telemetry is read ahead of a slow handler - an ack sent behind telemetry is "
    "handled after it, each agent's batches in order, none lost when the stream ends, and the "
    "other agents are answered meanwhile",
    "[integration]") {
  ControlServerOptions o;
  o.token = "t0k3n-for-the-read-ahead-test";
  o.run_id = "readahead";
  auto server = ControlServer::Start(o);
  REQUIRE(server.ok());
  // A slow store: 2 ms a batch for "busy" (200 batches: about 0.4 s behind).
  std::mutex mu;
  std::vector<int64_t> seen;  // busy's iterations, in the order handled
  (*server)->SetTelemetryHandler([&](const std::string& host, const pb::TelemetryBatch& b) {
    if (host != "busy") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard lock(mu);
    for (const auto& s : b.samples()) seen.push_back(s.iteration());
  });
  auto handled = [&] {
    std::lock_guard lock(mu);
    return seen.size();
  };
  RawAgent busy((*server)->address(), o.token, "busy");
  REQUIRE(busy.ok());
  auto good = ConnectGoodAgent((*server)->address(), o.token);
  REQUIRE(good.ok());
  REQUIRE((*server)->WaitForAgents({"good", "busy"}, Deadline::After(10 * kNsPerSec)).ok());

  // busy answers a command with 200 batches first, then its ack.
  std::thread agent([&] {
    auto cmd = busy.NextCommand();
    if (!cmd) return;
    for (int i = 0; i < 200; ++i)
      if (!busy.Telemetry(i)) return;
    busy.Ack(cmd->command_id());
  });
  pb::CoordinatorMessage launch;
  launch.mutable_launch();
  auto call = std::async(std::launch::async, [&] {
    auto ack = (*server)->Call("busy", launch, Deadline::After(30 * kNsPerSec));
    return std::make_pair(ack.ok() && ack->ok(), handled());
  });
  // While busy's backlog is handled, good is answered (its acks wait on no other agent).
  for (int i = 0; i < 5; ++i) {
    auto ack = (*server)->Call("good", launch, Deadline::After(10 * kNsPerSec));
    REQUIRE(ack.ok());
    CHECK(ack->ok());
  }
  auto [acked, handled_at_ack] = call.get();
  agent.join();
  CHECK(acked);
  CHECK(handled_at_ack == 200);  // the ack came after its 200 batches, and was seen after them

  // More telemetry, then the agent closes its side: nothing read is dropped.
  for (int i = 200; i < 300; ++i) REQUIRE(busy.Telemetry(i));
  REQUIRE(busy.WritesDone());
  CHECK(WaitUntil([&] { return handled() == 300; }, Deadline::After(20 * kNsPerSec), 5 * kNsPerMs));
  {
    std::lock_guard lock(mu);
    REQUIRE(seen.size() == 300);
    for (int i = 0; i < 300; ++i) CHECK(seen[static_cast<size_t>(i)] == i);
  }
  (*good)->Stop();
  (*server)->Shutdown();
}

}  // namespace
}  // namespace fl::harness
