// Test peer for the control-plane tests: runs one side of the control plane in its own
// process so that tests can SIGKILL it.
//   control_peer coordinator PORT_FILE TOKEN_FILE LEASE_MS
//       serves, waits for agent "h0", sends it one InjectFault "f0", then waits to be killed
//       (at most 60 s).
//   control_peer agent ADDRESS TOKEN_FILE MARKER_DIR
//       registers as "h0"; an InjectFault creates MARKER_DIR/<fault_id>; when the lease
//       lapses it removes every marker it made and exits 0.
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>

#include "common/file_util.h"
#include "harness/agent/agent_session.h"
#include "harness/control/auth.h"
#include "harness/coordinator/control_server.h"

using namespace fl;
using namespace fl::harness;

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  std::string mode = argv[1];
  auto token = ReadTokenFile(argv[3]);
  if (!token.ok()) return 2;
  if (mode == "coordinator") {
    ControlServerOptions o;
    o.token = *token;
    o.run_id = "peer-run";
    o.lease_ns = std::stoll(argv[4]) * kNsPerMs;
    o.heartbeat_interval_ns = o.lease_ns / 5;
    auto server = ControlServer::Start(o);
    if (!server.ok()) return 3;
    if (!WriteFileAtomic(argv[2], std::to_string((*server)->port())).ok()) return 3;
    if (!(*server)->WaitForAgents({"h0"}, Deadline::After(20 * kNsPerSec)).ok()) return 4;
    faultline::v1::CoordinatorMessage cmd;
    cmd.mutable_inject()->set_fault_id("f0");
    cmd.mutable_inject()->set_kind("marker");
    auto ack = (*server)->Call("h0", cmd, Deadline::After(10 * kNsPerSec));
    if (!ack.ok() || !ack->ok()) return 5;
    sleep(60);
    return 0;
  }
  if (mode == "agent") {
    std::string dir = argv[4];
    std::mutex mu;
    std::set<std::string> made;
    AgentSessionOptions o;
    o.coordinator = argv[2];
    o.token = *token;
    o.host = "h0";
    AgentHandlers h;
    h.on_command = [&](const faultline::v1::CoordinatorMessage& m) {
      faultline::v1::Ack ack;
      if (m.has_inject()) {
        std::string path = dir + "/" + m.inject().fault_id();
        ack.set_ok(WriteFileAtomic(path, "applied").ok());
        std::lock_guard lock(mu);
        made.insert(path);
      }
      return ack;
    };
    h.on_lease_lapsed = [&] {
      std::lock_guard lock(mu);
      for (const auto& p : made) unlink(p.c_str());
    };
    auto session = AgentSession::Connect(o, h);
    if (!session.ok()) return 3;
    if (!(*session)->WaitEnded(Deadline::After(60 * kNsPerSec))) return 4;
    return (*session)->lease_lapsed() ? 0 : 5;
  }
  return 2;
}
