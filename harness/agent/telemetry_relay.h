// The agent's telemetry relay: what its ranks and its host report, batched to the coordinator.
//
// Workers connect to a Unix socket (run_dir/<host>.sock) and write JSON lines; a Boost.Asio
// loop reads them (telemetry_line.h), converts them to proto Samples/Events and batches them
// to the coordinator every flush interval (the coordinator's Welcome sets the pace), at once
// for an event the coordinator times faults against (fault_detected, failover_done,
// path_restored), and on demand (Drain, before a StopRanks ack, so nothing is lost at the end
// of a job). A batch that cannot be sent (no session, stream down) is kept for the next flush.
// A bad line is counted, logged and reported (telemetry_dropped) once per connection, and
// summed up when the connection closes.
//
// NIC counters: between StartNicSampling and StopNicSampling a NicSampler (nic_counters.h)
// reads the host's data NICs every nic_interval_ns; the samples go out in the same batches
// (TelemetryBatch.nics).
//
// Thread-safety: every method may be called from any thread. on_progress runs on the Asio
// thread. Ownership: owns its Asio thread, the socket (removed on destruction) and the NIC
// sampler; borrows the fabric and the session (AttachSession).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "injectors/fabric.h"

namespace fl::harness {

class AgentSession;

struct TelemetryRelayOptions {
  std::string host;     // the host this agent serves: the socket's name, the NICs sampled
  std::string run_dir;  // the socket lives here; empty: no socket (nothing to relay from ranks)
  Nanos flush_interval_ns = 50 * kNsPerMs;  // unless the coordinator's Welcome sets the pace
  Nanos nic_interval_ns = 100 * kNsPerMs;
  const injectors::Fabric* fabric = nullptr;  // the host's data NICs; null: none sampled
  // After each sample from a rank, and on PostProgress: each rank's highest iteration so far.
  // Asio thread.
  std::function<void(const std::map<int, uint64_t>& last_iteration)> on_progress;
};

class TelemetryRelay {
 public:
  // Where the workers of `host` write: run_dir/<host>.sock; "" for an empty run_dir.
  static std::string SocketPath(const std::string& run_dir, const std::string& host);

  // Listens on the socket (Unavailable when it cannot) and starts the Asio thread.
  static StatusOr<std::unique_ptr<TelemetryRelay>> Start(TelemetryRelayOptions options);
  // Stops the Asio thread (what is still batched is not sent) and removes the socket.
  ~TelemetryRelay();

  const std::string& socket_path() const;
  // Where batches go; null: nowhere (kept). Borrowed: detach before the session goes.
  void AttachSession(AgentSession* session);
  // An event of the agent's own (rank -1) or about a rank, in the next batch.
  void AddEvent(int rank, const std::string& kind, const nlohmann::json& detail);
  // The host's data NICs are sampled from Start to Stop. Stop takes a last round.
  void StartNicSampling();
  void StopNicSampling();
  // Waits (at most 2 s) until the Asio thread has read what the workers wrote, then flushes.
  void Drain();
  // Runs on_progress on the Asio thread soon, with the iterations seen so far.
  void PostProgress();
  // Bad lines from workers so far, on all connections.
  uint64_t dropped() const;

  class Impl;

 private:
  explicit TelemetryRelay(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fl::harness
