// The rows of the results store as plain structs: what the coordinator converts its telemetry
// into, what the store writes and reads, and what reports/metrics computes from and produces.
// No SQLite, gRPC or protobuf types here, so any module can include this header.
//
// Times are wall-clock nanoseconds since the Unix epoch on the coordinator's clock (agents'
// offsets are applied before rows are built). An unset optional is NULL in the database.
//
// Thread-safety: values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::reports {

enum class RunStatus { kRunning, kPassed, kFailed, kAborted, kError };

// "running", "passed", "failed", "aborted", "error" (the strings stored in runs.status).
std::string_view RunStatusName(RunStatus status);
[[nodiscard]] StatusOr<RunStatus> ParseRunStatus(std::string_view name);

struct RunRecord {
  std::string id;  // fl::NewRunId()
  std::string scenario_name;
  std::string scenario_text;  // the scenario file as run, verbatim
  std::string scenario_hash;  // filled by Store::CreateRun when empty (SHA-256 hex of the text)
  // The lab it ran on: the file (topology or inventory), its text verbatim, and its hash
  // (filled when empty and the text is not). Empty for runs stored before schema version 3.
  std::string lab_source;
  std::string lab_text;
  std::string lab_hash;
  uint64_t seed = 0;
  std::string git_revision;
  RunStatus status = RunStatus::kRunning;
  Nanos start_wall_ns = 0;
  std::optional<Nanos> end_wall_ns;
  std::string message;  // why it ended the way it did (empty when passed)
  // Who is running it, so a later command can tell a dead coordinator's run from a live one.
  int64_t coordinator_pid = 0;
  std::string coordinator_host;
  std::map<std::string, std::string> tags;  // k=v, e.g. fw=22.39

  bool operator==(const RunRecord&) const = default;
};

struct HostRecord {
  std::string run_id;
  std::string name;
  std::string address;
  Nanos clock_offset_ns = 0;            // host clock minus coordinator clock
  Nanos clock_uncertainty_ns = 0;       // half the round trip of the best probe
  std::string fingerprint_json = "{}";  // kernel, NIC driver/firmware, GPUs, CCL build

  bool operator==(const HostRecord&) const = default;
};

struct FaultRecord {
  std::string run_id;
  std::string fault_id;  // unique within the run, e.g. "f0"
  std::string kind;      // "nic_flap", "tor_port_down", ...
  std::string target;    // resolved target, e.g. "h1/nic0"
  std::string params_json = "{}";
  std::optional<Nanos> scheduled_wall_ns;  // from the timeline
  std::optional<Nanos> requested_wall_ns;  // when the agent was asked
  std::optional<Nanos> effective_wall_ns;  // when the fault was in place (verified)
  std::optional<Nanos> reverted_wall_ns;   // when the revert completed
  std::optional<bool> revert_verified;     // state read back after the revert
  // The fault this one was timed against (after_event / during), "" for none: a fault nested
  // in its anchor does not end the anchor's interval (docs/metrics.md, "Overlapping faults").
  std::string anchor;

  bool operator==(const FaultRecord&) const = default;
};

// One rank's one iteration (one collective or one training step).
struct SampleRecord {
  std::string run_id;
  int32_t rank = 0;
  int64_t iteration = 0;
  Nanos start_ns = 0;     // wall
  Nanos end_ns = 0;       // wall
  uint64_t bytes = 0;     // algorithm bytes of the collective (nccl-tests "size")
  bool verified = false;  // the result was checked against its expected value
  bool mismatch = false;  // checked and wrong

  bool operator==(const SampleRecord&) const = default;
};

struct EventRecord {
  std::string run_id;
  int32_t rank = -1;  // -1: not a rank's event (coordinator, agent, injector)
  Nanos wall_ns = 0;
  std::string kind;  // "fault_detected", "failover_done", "path_restored", ...
  std::string detail_json = "{}";

  bool operator==(const EventRecord&) const = default;
};

struct MetricRecord {
  std::string run_id;
  std::optional<std::string> fault_id;  // nullopt: a run-level metric
  std::string name;
  double value = 0;
  std::string unit;

  bool operator==(const MetricRecord&) const = default;
};

// One row of a fault's detection ledger (reports/metrics/ledger.h, docs/metrics.md): when one
// layer (the injector's read-back, the kernel, the CCL, the job's progress) noticed the
// fault. A layer that applies to the fault but did not notice it has a row with no time; a
// layer that does not apply has no row.
struct DetectionRecord {
  std::string run_id;
  std::string fault_id;
  std::string layer;                     // "injector", "kernel", "ccl", "progress"
  std::optional<Nanos> noticed_wall_ns;  // unset: it applies and did not notice
  std::optional<double> latency_ms;      // noticed minus the fault's effective time
  std::string evidence;                  // "carrier went down", "fault_detected (rank 3)"

  bool operator==(const DetectionRecord&) const = default;
};

struct VerdictRecord {
  std::string run_id;
  std::optional<std::string> fault_id;
  std::string expectation;  // "survives", "max_detection_ms", ...
  bool passed = false;
  std::optional<double> observed;  // nullopt when the metric could not be computed
  std::optional<double> limit;
  std::string message;

  bool operator==(const VerdictRecord&) const = default;
};

// One NIC's counters at one moment, as read (cumulative since the NIC came up; the report turns
// successive readings into rates). The agent reads them (harness/agent/nic_counters.h) and the
// store keeps them (NicSampleRecord): one definition for both.
struct NicCounters {
  uint64_t rx_bytes = 0;
  uint64_t tx_bytes = 0;
  uint64_t rx_packets = 0;
  uint64_t tx_packets = 0;
  uint64_t rx_dropped = 0;
  uint64_t tx_dropped = 0;
  uint64_t rx_errors = 0;
  uint64_t tx_errors = 0;
  // Pause frames (802.3x and PFC) where the driver counts them (ethtool statistics); nullopt
  // where it does not.
  std::optional<uint64_t> rx_pause;
  std::optional<uint64_t> tx_pause;
  // Further counters the driver (ethtool) or the RDMA port (sysfs) has, by name.
  std::map<std::string, uint64_t> extra;

  bool operator==(const NicCounters&) const = default;
};

// One data NIC's counters on one host at one moment. Agents sample every 100 ms during a run.
// The counters are a base, not a member, so that a row's fields read as before (n.rx_bytes).
struct NicSampleRecord : NicCounters {
  std::string run_id;
  std::string host;  // the lab host name, e.g. "h1"
  std::string nic;   // the data NIC's lab name, e.g. "nic0"
  Nanos wall_ns = 0;

  NicCounters& counters() { return *this; }
  const NicCounters& counters() const { return *this; }
  bool operator==(const NicSampleRecord&) const = default;
};

// Everything stored about one run.
struct RunData {
  RunRecord run;
  std::vector<HostRecord> hosts;
  std::vector<FaultRecord> faults;          // by effective (else requested) time
  std::vector<SampleRecord> samples;        // by rank, iteration
  std::vector<EventRecord> events;          // by time
  std::vector<MetricRecord> metrics;        // in insertion order
  std::vector<VerdictRecord> verdicts;      // in insertion order
  std::vector<NicSampleRecord> nics;        // by host, nic, time
  std::vector<DetectionRecord> detections;  // by fault, then layer order
};

}  // namespace fl::reports
