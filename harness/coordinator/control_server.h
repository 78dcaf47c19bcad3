// The coordinator's side of the control plane: a gRPC server that agents dial in to.
//
// Each agent opens one Session stream and says Hello with the shared token (checked in
// constant time; a wrong token is UNAUTHENTICATED) and its host name. One live session per
// host: a second claim for a host heard from within the lease is ALREADY_EXISTS (a silent
// one is replaced). With tls set the server speaks only mutual TLS: agents must present a
// certificate from the lab CA that names the host they claim (else PERMISSION_DENIED), and
// the token travels only inside the verified channel. The server then sends Welcome (run id,
// lease), heartbeats every heartbeat_interval (which renew the agents' fault leases), clock probes
// on request, and commands; it routes acks back to the waiting Call() and hands telemetry to the
// telemetry handler.
//
// Thread-safety: all public methods may be called from any thread. The telemetry handler is
// called from gRPC threads, concurrently for different agents.
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
  // Mutual TLS with the lab's certificates (LoadTlsMaterial(dir, kCoordinator, ...));
  // unset: plaintext, token only (the local lab).
  std::optional<TlsMaterial> tls;
};

struct AgentInfo {
  std::string host;
  std::string peer;  // address the agent connected from
  faultline::v1::Fingerprint fingerprint;
  ClockOffset clock;
  bool clock_measured = false;
  bool connected = false;
  Nanos registered_wall_ns = 0;
  Nanos last_heard_mono_ns = 0;
};

struct ControlServerStats {
  uint64_t sessions = 0;
  uint64_t rejected = 0;  // bad token, certificate, or a second claim for a live host
  uint64_t telemetry_batches = 0;
  uint64_t samples = 0;
  uint64_t events = 0;
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

  // Sends a command and waits for its ack. Unavailable when the host has no live session.
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
