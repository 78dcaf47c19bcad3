// Test peer for the agent-limit tests: a coordinator in its own process (so a test can SIGKILL
// it) that asks for a lease, sends one real fault, and then only heartbeats.
//   fault_coordinator_peer PORT_FILE TOKEN_FILE LEASE_MS KIND TARGET DURATION_MS ACK_FILE
// Serves on 127.0.0.1, waits for agent "h0", sends InjectFault "f0" (never a revert), writes
// "ok" or the error (also when h0 does not dial in within 30 s) to ACK_FILE, then waits to be
// killed (at most 120 s).
#include <unistd.h>

#include <string>

#include "common/file_util.h"
#include "harness/control/auth.h"
#include "harness/coordinator/control_server.h"

using namespace fl;
using namespace fl::harness;

int main(int argc, char** argv) {
  if (argc != 8) return 2;
  auto token = ReadTokenFile(argv[2]);
  if (!token.ok()) return 2;
  ControlServerOptions o;
  o.token = *token;
  o.run_id = "limits-run";
  o.lease_ns = std::stoll(argv[3]) * kNsPerMs;
  o.heartbeat_interval_ns = 200 * kNsPerMs;
  auto server = ControlServer::Start(o);
  if (!server.ok()) return 3;
  if (!WriteFileAtomic(argv[1], std::to_string((*server)->port())).ok()) return 3;
  // An agent that never dials in is written as the ack too, so that the test says why.
  if (Status st = (*server)->WaitForAgents({"h0"}, Deadline::After(30 * kNsPerSec)); !st.ok()) {
    if (!WriteFileAtomic(argv[7], "agent h0 did not dial in: " + st.ToString()).ok()) return 3;
    return 4;
  }
  faultline::v1::CoordinatorMessage cmd;
  cmd.mutable_inject()->set_fault_id("f0");
  cmd.mutable_inject()->set_kind(argv[4]);
  cmd.mutable_inject()->set_target(argv[5]);
  cmd.mutable_inject()->set_duration_ms(std::stoll(argv[6]));
  auto ack = (*server)->Call("h0", cmd, Deadline::After(20 * kNsPerSec));
  std::string result = !ack.ok() ? ack.status().ToString() : ack->ok() ? "ok" : ack->error();
  if (!WriteFileAtomic(argv[7], result).ok()) return 3;
  sleep(120);
  return 0;
}
