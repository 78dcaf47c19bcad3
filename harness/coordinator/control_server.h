// The coordinator's side of the control plane: a gRPC server that agents dial in to.
//
// Each agent opens one Session stream and says Hello with the shared token (checked in
// constant time; a wrong token is UNAUTHENTICATED), its host name and its instance id. One
// live session per host: a second claim for a host heard from within the lease is
// ALREADY_EXISTS (a silent one is replaced). A Hello from the same instance that resumes this
// run (an agent re-dialling after its stream broke) replaces the host's session at once, live
// or not, and the run goes on (Welcome.resumed).
//
// Lost hosts: once a host has been sent a command, it is LOST when its session has been gone
// (or silent) for more than the lease, or when another agent instance claims it (the agent
// was restarted: the ranks and faults it held are gone). A lost host is reported once by
// TakeLostAgent(), Call() to it fails at once, and neither a resume nor a new instance is
// taken for it (FAILED_PRECONDITION) for the rest of the run; a host whose Shutdown was
// acknowledged is done and never lost. Before its first command a host has nothing to lose:
// a restarted agent simply registers again. With tls set the server speaks only mutual TLS: agents
// must present a certificate from the lab CA that names the host they claim (else
// PERMISSION_DENIED), and the token travels only inside the verified channel. The server then sends
// Welcome (run id, lease), heartbeats every heartbeat_interval (which renew the agents' fault
// leases), clock probes on request, and commands; it routes acks back to the waiting Call() and
// hands telemetry to the telemetry handler.
//
// Sessions run on gRPC's callback API (a reactor each, no thread per stream: session.h). Writes to
// an agent go one at a time from a send queue of its own (64 messages at most); heartbeats are
// queued from a timer thread and never wait on an agent, so an agent that stops reading holds
// up only itself (its commands fail Unavailable once its queue is full).
//
// Reading: an agent's telemetry is read ahead of its handling into a backlog of its own (32
// messages at most; a full one pauses that agent's reads until it is half drained), so that
// the store never holds up the reading of acks; an ack read behind telemetry is handled after
// it, in the order the agent sent them, so a command's ack still means that everything the
// agent sent before it has been handed to the telemetry handler.
//
// Thread-safety: all public methods may be called from any thread. The telemetry handler is
// called from the server's two telemetry threads, concurrently for different agents, in order
// for each agent.
// Blocking: every waiting method takes a Deadline.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harness/control/certs.h"
#include "harness/control/clock_sync.h"
#include "harness/proto/faultline.pb.h"

namespace fl::harness {

struct ControlServerOptions {
  std::string listen_address = "127.0.0.1:0";  // port 0: the kernel picks one
  std::string token;
  std::string run_id;
  Nanos lease_ns = 5 * kNsPerSec;
  Nanos heartbeat_interval_ns = 500 * kNsPerMs;
  // Sent in the Welcome (0: the agent's own default): how often an agent flushes its telemetry
  // and sends its heartbeat. See PaceForFleet.
  Nanos agent_telemetry_interval_ns = 0;
  Nanos agent_heartbeat_interval_ns = 0;
  // Mutual TLS with the lab's certificates (LoadTlsMaterial(dir, kCoordinator, ...));
  // unset: plaintext, token only (the local lab).
  std::optional<TlsMaterial> tls;
};

// How often a fleet of N agents talks to its coordinator. The coordinator's cost is per
// message (the kernel's TCP, gRPC, a wake-up), not per sample, so a large fleet is asked for
// fewer, larger telemetry batches and rarer heartbeats, keeping the messages per second bounded:
// telemetry every max(50 ms, N x 0.2 ms), at most 1 s (about 5,000 batches/s in all from 250
// agents up); heartbeats both ways every max(lease / 6, N x 0.3 ms), at most lease / 4. A
// fleet of up to 250 agents keeps the small-lab pace (50 ms, lease / 6). Faults and the events
// a run waits for do not wait for a batch (they are sent at once), so only the progress display
// and the rows' arrival are later. An agent whose telemetry flows sends no heartbeat of its own
// (agent_session.h).
struct FleetPace {
  Nanos telemetry_interval_ns = 0;
  Nanos heartbeat_interval_ns = 0;
};
FleetPace PaceForFleet(size_t agents, Nanos lease_ns);

struct AgentInfo {
  std::string host;
  std::string peer;  // address the agent connected from
  faultline::v1::Fingerprint fingerprint;
  std::string agent_version;  // Hello.agent_version: "0.1.0 (git 6267765a1b2c)"
  ClockOffset clock;
  bool clock_measured = false;
  bool connected = false;
  Nanos registered_wall_ns = 0;
  Nanos last_heard_mono_ns = 0;
  std::string instance;    // the agent process's instance id (Hello.instance_id)
  uint64_t resumes = 0;    // sessions re-attached after a break
  bool commanded = false;  // a command was sent: from now on the host can be lost
  bool retired = false;    // acknowledged Shutdown
  bool lost = false;
  std::string lost_reason;
};

// A host lost during the run (see above).
struct LostAgentReport {
  std::string host;
  std::string reason;   // "no session for 3012 ms (lease 3000 ms)", "agent restarted ..."
  Nanos silent_ns = 0;  // since the host was last heard from
};

struct ControlServerStats {
  uint64_t sessions = 0;
  uint64_t rejected = 0;  // bad token, certificate, or a second claim for a live host
  uint64_t telemetry_batches = 0;
  uint64_t samples = 0;
  uint64_t events = 0;
  uint64_t resumes = 0;
  uint64_t lost = 0;
  uint64_t heartbeats = 0;  // heartbeats the agents sent
};

class ControlServer {
 public:
  using TelemetryHandler =
      std::function<void(const std::string& host, const faultline::v1::TelemetryBatch&)>;

  static StatusOr<std::unique_ptr<ControlServer>> Start(ControlServerOptions options);
  ~ControlServer();  // Shutdown()

  int port() const;
  std::string address() const;  // "127.0.0.1:PORT"

  // Set before agents connect.
  void SetTelemetryHandler(TelemetryHandler handler);

  // Waits until every named host has a live session.
  Status WaitForAgents(const std::vector<std::string>& hosts, Deadline deadline);
  std::vector<AgentInfo> Agents() const;
  StatusOr<AgentInfo> Agent(const std::string& host) const;

  // The next lost host not yet reported (each once; checked every 50 ms, so within the lease
  // plus about 50 ms of the host's last word), or nullopt.
  std::optional<LostAgentReport> TakeLostAgent();

  // Cancels the host's current stream, as a cut connection would (its agent re-dials).
  void DropSession(const std::string& host);

  // Sends a command and waits for its ack. A host that is re-dialling (session gone within the
  // lease) is waited for until it is back, lost or the deadline passes; Unavailable at once
  // when it is lost, done (Shutdown), or never registered. A command whose stream breaks
  // before its ack is Unavailable (it is not re-sent on the resumed session).
  StatusOr<faultline::v1::Ack> Call(const std::string& host, faultline::v1::CoordinatorMessage cmd,
                                    Deadline deadline);
  // Measures the host's clock offset with n probes and records it in its AgentInfo.
  StatusOr<ClockOffset> SyncClock(const std::string& host, int probes, Deadline deadline);

  ControlServerStats stats() const;

  // Stops heartbeats (so leases lapse) and closes every stream. Idempotent.
  void Shutdown();

  class Impl;

 private:
  explicit ControlServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fl::harness
