// A resilience scenario as plain structs: what lab to use, what job to run, which faults to
// inject when, and what to expect. Loaded and validated by scenario_loader.h; turned into a
// concrete, seeded timeline by plan.h.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "reports/metrics/expect.h"

namespace fl::harness {

struct LabSpec {
  std::string topology;   // path of a topology file (configs/labs/...), resolved to absolute
  std::string inventory;  // or: path of an inventory of real hosts whose agents dial in
  // or: a Slurm allocation described inline (`lab: {slurm: ...}`): the scenario's whole text,
  // whose lab.slurm section the lab reads (with its file positions)
  std::string slurm_yaml;
  // The lab file the run uses: topology or inventory, or --lab FILE (which replaces the
  // scenario's lab); empty for an inline slurm section.
  std::string file;
  // The text of `file` when it is not to be read (a replay uses the stored run's).
  std::string file_text;
  std::string where;  // file:line:col of the lab section (or "--lab"), for later errors
};

struct JobSpec {
  std::string workload = "allreduce_loop";  // allreduce_loop | training_step | moe_alltoall
  std::string ccl = "ftccl";                // ftccl | gloo | nccl
  uint64_t size_bytes = 16ull << 20;
  std::string dtype = "float32";
  uint64_t iterations = 0;  // 0: run for `duration`
  Nanos duration_ns = 0;
  uint64_t warmup_iterations = 20;
  uint64_t check_every = 1;  // verify the result every k iterations
  bool failover = true;      // ftccl: false = fail-stop mode
  // What the survivors do when a rank is lost: "abort" (the job fails, for the restart
  // policy) or "shrink" (shrink the communicator to the survivors and go on: a CCL whose
  // descriptor says may_shrink). shrink_grace_ns 0: the worker's default.
  std::string on_rank_loss = "abort";
  Nanos shrink_grace_ns = 0;
  // The CCL's options as text, e.g. dead_timeout_ms: "900": checked at load against the
  // schema the CCL declares (`faultline ccls`), parsed into typed values by the rank.
  std::map<std::string, std::string> ccl_options;
  // The workload's own options as text, e.g. compute: "5ms" (training_step): the job keys its
  // schema declares (`faultline workloads`), checked at load, parsed into typed values by the
  // rank (--workload-option) and handed to the workload's factory. Options not given take the
  // schema's defaults there.
  std::map<std::string, std::string> workload_options;
  Nanos collective_timeout_ns = 10 * kNsPerSec;
  Nanos hang_timeout_ns = 30 * kNsPerSec;  // no progress on any rank for this long = hung
  // Environment given to every rank (faultline-worker or a command), after the CCL's
  // defaults (NCCL_IB_TIMEOUT, ...); recorded as tags. Keys are [A-Z_][A-Z0-9_]*.
  std::map<std::string, std::string> env;
  // A command job (`job: {command: [...]}`): this argv runs once per rank in the rank's
  // container instead of faultline-worker, with RANK, WORLD_SIZE, LOCAL_RANK,
  // LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and FAULTLINE_PROGRESS set. Empty: the
  // built-in worker runs `workload`.
  std::vector<std::string> command;
  uint32_t ranks_per_host = 0;  // command job: ranks per host (0: the lab's default)
  // Where a command job's progress is read: "nccl-tests" (its stdout), "lines" (the progress
  // protocol in FAULTLINE_PROGRESS, workloads/progress/progress.h) or "exit" (only its exit
  // status and the tail of its stderr).
  std::string progress_format = "lines";
};

// When a fault fires: relative to the start of the steady state (after warm-up), to an
// iteration, or to what an earlier fault did (after_event / during: its anchor).
struct FaultTiming {
  enum class Kind { kAt, kAfterIteration, kEvery, kAfterEvent };
  Kind kind = Kind::kAt;
  Nanos at_ns = 0;  // kAt: offset; kEvery: first firing
  uint64_t after_iteration = 0;
  Nanos every_ns = 0;   // kEvery: period
  uint32_t count = 1;   // kEvery: number of firings
  Nanos jitter_ns = 0;  // each firing moved by a seeded draw in [-jitter, +jitter]
  // kAfterEvent: `delay` after the anchor fault's `event` (events::AnchorNames()) was seen;
  // `during`: only while the anchor is still in effect (its event fault_detected: inside its
  // recovery).
  std::string anchor;        // the anchor's id, "f0": an earlier fault of the file, one firing
  std::string anchor_event;  // injected | fault_detected | failover_done | reverted | path_restored
  Nanos anchor_delay_ns = 0;
  bool during = false;
};

// The events a fault can be anchored to (after_event.event) are those common/event_kinds.h
// marks `anchor`, in the order they happen to a fault: its injection took effect, a rank
// detected it, a rank's failover completed, it was reverted, a rank's path came back.

struct FaultSpec {
  std::string kind;          // injector name
  std::string target;        // a topology name, or empty when target_class is set
  std::string target_class;  // draw the target from this class with the seed
  FaultTiming timing;
  Nanos duration_ns = 0;  // 0: until the end of the job
  std::map<std::string, std::string> params;
  std::string where;  // file:line:col of this fault in the scenario
};

// The `expect:` block: the one struct the verdicts are made from.
using Expectations = reports::Expectations;

struct RestartPolicy {
  bool enabled = false;
  uint32_t max_restarts = 1;
  Nanos delay_ns = 0;
};

struct Scenario {
  std::string name;
  std::string description;
  std::string path;       // file it was loaded from
  std::string text;       // the file's exact text (stored with the run)
  std::string text_hash;  // FNV-1a 64 of the text, hex: identifies the scenario, not security
  uint64_t seed = 1;
  LabSpec lab;
  JobSpec job;
  std::vector<FaultSpec> faults;
  Expectations expect;
  RestartPolicy restart;
};

}  // namespace fl::harness
