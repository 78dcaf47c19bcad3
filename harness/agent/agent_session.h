// The agent's side of the control plane: dials in to the coordinator, says Hello (token, host,
// fingerprint, instance id), answers clock probes and heartbeats, hands every other command
// to a handler, and keeps the fault lease.
//
// Lease: the coordinator's heartbeats renew it. When none has arrived for lease_ns (the
// coordinator died, hung, or the management network is cut), on_lease_lapsed runs exactly
// once: the owner reverts every fault and stops its ranks. A broken stream does not revert
// by itself; only the lease does.
//
// Redial: when the stream breaks (not after Shutdown or Stop), the session dials again, each
// try bounded by redial_try_ns and spaced by a backoff of 100 ms doubling to 1 s, for as long
// as the lease lasts. The Hello of a redial names this process's instance id and the run it
// holds (resume_run_id); a coordinator of that run re-attaches the session (Welcome.resumed):
// the run goes on with its faults and ranks, nothing is reverted, and the lease is renewed.
// A coordinator that refuses the resume (the host was declared lost, or it serves another
// run) ends the lease at once (on_lease_lapsed). Commands whose ack was lost with the old
// stream are not replayed.
//
// Commands run one at a time, in order, on the session's command thread, while its reader
// thread goes on reading heartbeats: a command that takes longer than the lease (a rank stop
// with a long grace, a slow verification) does not lapse the lease of a live coordinator.
//
// Thread-safety: Send*() may be called from any thread. Handlers run on the session's command
// thread (commands) or its timer thread (lease), never concurrently with themselves.
// Ownership: the session owns its gRPC channel and threads; Stop() or the destructor joins.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "harness/control/certs.h"
#include "harness/proto/faultline.pb.h"

namespace fl::harness {

struct AgentSessionOptions {
  std::string coordinator;  // host:port
  std::string token;
  std::string host;  // topology host name
  faultline::v1::Fingerprint fingerprint;
  // When set, called for each Hello instead of sending `fingerprint`: the facts as they are at
  // that dial (a service agent may wait hours for a coordinator; a NIC may be recabled meanwhile).
  std::function<faultline::v1::Fingerprint()> collect_fingerprint;
  // When set and it turns false while the coordinator is dialled, the dial ends at once
  // (Cancelled): ConnectUntilWelcomed passes its keep_going here.
  std::function<bool()> keep_going;
  // Said in the Hello: "0.1.0 (git 6267765a1b2c)" (the coordinator warns of a skew).
  std::string agent_version = "unknown";
  Nanos connect_timeout_ns = 10 * kNsPerSec;
  // Unless the Welcome sets the fleet's pace. A heartbeat goes only when nothing else was
  // written to the coordinator within the interval (telemetry tells it the agent is alive).
  Nanos heartbeat_interval_ns = 500 * kNsPerMs;
  // Used until the coordinator's Welcome says otherwise.
  Nanos default_lease_ns = 5 * kNsPerSec;
  // Mutual TLS (LoadTlsMaterial(dir, kAgent or kFabricAgent, host)): the coordinator must
  // present a certificate of the lab CA naming the address dialled (or tls_server_name); the
  // token is sent only after that check, inside the TLS channel. Unset: plaintext.
  std::optional<TlsMaterial> tls;
  std::string tls_server_name;  // expected name in the coordinator's certificate
  // The longest lease kept, whatever the Welcome asks (the policy's max_lease): a longer one
  // is cut to this, so a dead coordinator's faults are reverted within it.
  Nanos max_lease_ns = 30 * kNsPerSec;
  // Identifies this agent process to the coordinator across redials; empty: a random one.
  std::string instance_id;
  // The longest one redial try waits for the coordinator's connection (then backs off).
  Nanos redial_try_ns = 1 * kNsPerSec;
};

struct AgentHandlers {
  // Launch, stop, inject, revert, shutdown: returns the ack to send (command_id is filled in),
  // or nullopt when the ack comes later through SendAck (a fault sent ahead: when it fired).
  std::function<std::optional<faultline::v1::Ack>(const faultline::v1::CoordinatorMessage&)>
      on_command;
  // Runs once when the lease lapses.
  std::function<void()> on_lease_lapsed;
  // Heartbeat contents (ranks running, faults applied).
  std::function<faultline::v1::Heartbeat()> heartbeat;
};

class AgentSession {
 public:
  // Connects (within connect_timeout), sends Hello and waits for Welcome. Unauthenticated or
  // refused (bad token or certificate, or the host already has a live session):
  // FailedPrecondition; no coordinator, or none whose certificate the lab CA signed:
  // Unavailable.
  static StatusOr<std::unique_ptr<AgentSession>> Connect(AgentSessionOptions options,
                                                         AgentHandlers handlers);
  // Service mode: Connect() again and again (each try bounded by connect_timeout, then a
  // backoff of 0.5 s doubling to 10 s) until a coordinator welcomes this agent or keep_going()
  // returns false (then the last try's status). Refusals are retried too: a coordinator still
  // tearing down a run, or one that declared this host lost, refuses until a new run listens.
  static StatusOr<std::unique_ptr<AgentSession>> ConnectUntilWelcomed(
      AgentSessionOptions options, AgentHandlers handlers, const std::function<bool()>& keep_going);
  ~AgentSession();

  Status SendTelemetry(const faultline::v1::TelemetryBatch& batch);
  // A deferred ack (its command_id set by the caller): on_command returned nullopt for it.
  // Unavailable when the stream is down; the ack is then lost (logged, counted in acks_lost).
  Status SendAck(const faultline::v1::Ack& ack);
  const std::string& run_id() const;
  Nanos lease_ns() const;
  // The telemetry interval the coordinator's Welcome asked for; 0: none (the agent's own).
  Nanos telemetry_interval_ns() const;
  bool lease_lapsed() const;
  // The coordinator sent Shutdown and its ack has been written: the agent may stop now.
  bool shutdown_requested() const;
  // True while the stream to the coordinator is up.
  bool connected() const;
  // Streams re-attached to the run after a break (Welcome.resumed).
  uint64_t resumes() const;
  // Acks that could not be written to the coordinator (on_command's and SendAck's): each is
  // logged when it is lost; its command's call on the coordinator fails.
  uint64_t acks_lost() const;
  const std::string& instance_id() const;
  // Blocks until the lease lapsed or Stop() was called, or the deadline passes.
  // Returns true when the session ended (lease lapsed or stopped).
  bool WaitEnded(Deadline deadline);
  void Stop();

  class Impl;

 private:
  explicit AgentSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fl::harness
