// The agent session's lost acks ([integration]: real gRPC in-process, no root): an ack that
// cannot be written to the coordinator is counted (acks_lost), whether it is a command's own
// answer or a deferred one (SendAck).
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "harness/agent/agent_session.h"
#include "harness/coordinator/control_server.h"

namespace fl::harness {
namespace {

namespace pb = faultline::v1;

constexpr const char* kToken = "t0k3n-for-the-agent-session-tests";

TEST_CASE("agent session: an ack whose stream is gone is counted as lost, not dropped silently",
          "[integration]") {
  ControlServerOptions so;
  so.token = kToken;
  so.run_id = "r-acks";
  so.lease_ns = 5 * kNsPerSec;
  so.heartbeat_interval_ns = 100 * kNsPerMs;
  auto server = ControlServer::Start(so);
  REQUIRE(server.ok());

  // A command handler that holds its answer until the test lets it go.
  std::atomic<bool> entered{false}, release{false};
  AgentHandlers h;
  h.on_command = [&](const pb::CoordinatorMessage&) {
    entered = true;
    WaitUntil([&] { return release.load(); }, Deadline::After(10 * kNsPerSec), kNsPerMs);
    pb::Ack ack;
    ack.set_ok(true);
    return std::optional<pb::Ack>(ack);
  };
  AgentSessionOptions ao;
  ao.coordinator = "127.0.0.1:" + std::to_string((*server)->port());
  ao.token = kToken;
  ao.host = "h0";
  ao.heartbeat_interval_ns = 100 * kNsPerMs;
  ao.connect_timeout_ns = 5 * kNsPerSec;
  auto agent = AgentSession::Connect(ao, std::move(h));
  REQUIRE(agent.ok());
  CHECK((*agent)->acks_lost() == 0);

  // Answered while the stream is up: nothing lost.
  pb::Ack early;
  early.set_ok(true);
  early.set_command_id(7);
  REQUIRE((*agent)->SendAck(early).ok());
  CHECK((*agent)->acks_lost() == 0);

  // A command whose coordinator goes away before its answer: the answer is lost, and counted.
  pb::CoordinatorMessage stop;
  stop.mutable_stop()->set_grace_ms(0);
  std::thread call([&] { (void)(*server)->Call("h0", stop, Deadline::After(3 * kNsPerSec)); });
  REQUIRE(WaitUntil([&] { return entered.load(); }, Deadline::After(5 * kNsPerSec)));
  (*server)->Shutdown();  // stops listening too: the agent cannot re-attach meanwhile
  REQUIRE(WaitUntil([&] { return !(*agent)->connected(); }, Deadline::After(5 * kNsPerSec)));
  release = true;
  CHECK(WaitUntil([&] { return (*agent)->acks_lost() == 1; }, Deadline::After(5 * kNsPerSec)));
  call.join();

  // A deferred ack (a fault sent ahead that fired) with no stream: Unavailable, and counted.
  pb::Ack late;
  late.set_ok(true);
  late.set_command_id(9);
  Status st = (*agent)->SendAck(late);
  CHECK(st.code() == Code::kUnavailable);
  CHECK((*agent)->acks_lost() == 2);
  (*agent)->Stop();
}

}  // namespace
}  // namespace fl::harness
