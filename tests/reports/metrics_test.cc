// Metrics on synthetic traces whose answers are computed by hand (docs/metrics.md has the
// definitions). All traces: bytes = 1e9 per iteration, times in seconds after kT0.
#include "reports/metrics/metrics.h"

#include <catch2/catch.hpp>

#include <cmath>

namespace fl::reports {
namespace {

constexpr Nanos kT0 = 1'000'000 * kNsPerSec;
constexpr uint64_t kBytes = 1'000'000'000;

Nanos At(double seconds) { return kT0 + std::llround(seconds * 1e9); }

struct Trace {
  AnalysisInput in;
  Trace() { in.run_id = "r1"; }
  // Iteration idx on the given ranks, from start to end seconds.
  Trace& Iter(int64_t idx, double start, double end, std::vector<int> ranks = {0, 1}) {
    for (int r : ranks)
      in.samples.push_back({"r1", r, idx, At(start), At(end), kBytes, true, false});
    return *this;
  }
  // n iterations of `duration` seconds back to back from `start`, first index idx.
  double Run(int64_t idx, int n, double start, double duration) {
    for (int i = 0; i < n; ++i) Iter(idx + i, start + i * duration, start + (i + 1) * duration);
    return start + n * duration;
  }
  Trace& Event(std::string_view kind, double at, int rank = 0) {
    in.events.push_back({"r1", rank, At(at), std::string(kind), "{}"});
    return *this;
  }
  FaultRecord& Fault(std::string id, double effective, std::optional<double> reverted) {
    FaultRecord f;
    f.run_id = "r1";
    f.fault_id = std::move(id);
    f.kind = "nic_flap";
    f.effective_wall_ns = At(effective);
    if (reverted) f.reverted_wall_ns = At(*reverted);
    in.faults.push_back(f);
    return in.faults.back();
  }
};

// The reference trace: baseline 1 s per iteration; a fault at 10 s stalls iteration 10 for
// 3 s, then iterations take 2 s (half speed) until the revert at 53 s; iteration 31 takes
// 1.5 s, then back to 1 s per iteration until 63.5 s.
Trace Reference() {
  Trace t;
  t.Run(0, 10, 0, 1);                 // iterations 0..9: [i, i+1]
  t.Iter(10, 10, 13);                 // stalled
  t.Run(11, 20, 13, 2);               // iterations 11..30: [13 + 2k, 15 + 2k]
  t.Iter(31, 53, 54.5);               // first after the revert: slower than 90% of baseline
  t.Run(32, 9, 54.5, 1);              // iterations 32..40, last ends at 63.5
  t.Event(kEventFaultDetected, 5.0);  // before the fault: not this fault's detection
  t.Event(kEventFaultDetected, 10.25, 1);
  t.Event(kEventFaultDetected, 10.5, 0);
  t.Event(kEventFailoverDone, 12.5);
  t.Event(kEventPathRestored, 53.5);
  FaultRecord& f = t.Fault("f0", 10.0, 53.0);
  f.scheduled_wall_ns = At(9.9);
  f.requested_wall_ns = At(9.95);
  return t;
}

std::optional<double> Find(const std::vector<MetricRecord>& rows,
                           const std::optional<std::string>& fault, const std::string& name,
                           std::string* unit = nullptr) {
  for (const auto& r : rows) {
    if (r.fault_id == fault && r.name == name) {
      if (unit) *unit = r.unit;
      return r.value;
    }
  }
  return std::nullopt;
}

TEST_CASE("metrics: a stall of the job's progress, whatever the CCL reports", "[unit]") {
  Trace t;
  t.Run(0, 10, 0, 1);  // baseline period 1 s
  t.Iter(10, 10, 15);  // nothing completes from 10 s to 15 s
  t.Run(11, 5, 15, 1);
  t.Event(kEventFaultDetected, 10.6);
  t.Fault("f0", 10.5, 12.0);
  auto m = ComputeMetrics(t.in, {});
  REQUIRE(m.ok());
  REQUIRE(m->faults.size() == 1);
  // The last completion before the fault is at 10 s; 3 periods later, 13 s, is 2.5 s after it.
  CHECK(*m->faults[0].stall_ms == Approx(2500));
  CHECK(m->faults[0].detection_source == "event");  // the CCL's report stays the detection
}

TEST_CASE("metrics: reference trace gives the hand-computed values", "[unit]") {
  Trace t = Reference();
  auto m = ComputeMetrics(t.in, {});
  REQUIRE(m.ok());
  CHECK(m->num_ranks == 2);
  CHECK(m->run_end_ns == At(63.5));
  CHECK(m->baseline_iterations == 10);  // iterations 0..9 end by 10 s
  CHECK(*m->baseline_algbw == Approx(1e9));
  CHECK(*m->baseline_progress == Approx(1e9));
  REQUIRE(m->faults.size() == 1);
  const FaultMetrics& f = m->faults[0];
  CHECK(f.applied);
  CHECK(f.injected_ns == At(10));
  CHECK(*f.injection_error_ms == Approx(100));    // 10.0 - 9.9
  CHECK(*f.detection_latency_ms == Approx(250));  // 10.25 - 10.0
  // Iteration 10's gap (10 to 13 s) is 3 baseline periods, not more: no stall.
  CHECK_FALSE(f.stall_ms);
  CHECK(*f.failover_ms == Approx(2500));                // 12.5 - 10.0
  CHECK(*f.path_restored_ms == Approx(500));            // 53.5 - 53.0
  CHECK(*f.time_to_first_progress_ms == Approx(3000));  // iteration 10 ends at 13
  CHECK(f.fault_iterations == 21);                      // iterations 10..30
  CHECK(*f.degraded_algbw == Approx(0.5e9));            // median of iterations 20..30
  CHECK(*f.degraded_ratio == Approx(0.5));
  CHECK(*f.recovery_ms == Approx(3000));  // window 11..15 starts at 13
  CHECK(*f.failback_ms == Approx(1500));  // window 32..36 starts at 54.5
  // Loss over [10, 54.5]: 44.5 s elapsed, 22 iterations of work (10..31) at 1 s each.
  CHECK(*f.throughput_loss_s == Approx(22.5));
  CHECK(*f.throughput_loss_gpu_s == Approx(45));
  CHECK(m->correctness.verified_collectives == 82);
  CHECK(m->correctness.mismatches == 0);
  CHECK(m->correctness.lost_iterations == 0);
  CHECK(m->correctness.duplicated_iterations == 0);
  CHECK(m->correctness.complete_iterations == 41);
  CHECK(m->outcome.kind == OutcomeKind::kSurvived);
  CHECK(m->outcome.stuck_ranks.empty());

  auto rows = m->ToRecords();
  std::string unit;
  CHECK(*Find(rows, "f0", "detection_latency_ms", &unit) == Approx(250));
  CHECK(unit == "ms");
  CHECK(*Find(rows, "f0", "throughput_loss_gpu_s", &unit) == Approx(45));
  CHECK(unit == "GPU-s");
  CHECK(*Find(rows, std::nullopt, "baseline_algbw", &unit) == Approx(1e9));
  CHECK(unit == "B/s");
  CHECK(*Find(rows, "f0", "detected") == 1);
  CHECK(*Find(rows, "f0", "recovered") == 1);
  CHECK(*Find(rows, "f0", "failed_back") == 1);
  CHECK(*Find(rows, std::nullopt, "outcome") == 0);
  for (const auto& r : rows) CHECK(r.run_id == "r1");
}

TEST_CASE("metrics: warm-up iterations are left out of the baseline", "[unit]") {
  Trace t = Reference();
  // Iterations 0 and 1 were slow (4 s): with warm-up 2 the baseline ignores them.
  for (auto& s : t.in.samples) {
    if (s.iteration < 2) s.end_ns = s.start_ns + 4 * kNsPerSec;
  }
  AnalysisOptions o;
  o.warmup_iterations = 2;
  auto m = ComputeMetrics(t.in, o);
  REQUIRE(m.ok());
  CHECK(m->baseline_iterations == 8);
  CHECK(*m->baseline_algbw == Approx(1e9));
}

TEST_CASE("metrics: no fault_detected event leaves detection undefined", "[unit]") {
  Trace t = Reference();
  std::erase_if(t.in.events, [](const EventRecord& e) {
    return e.kind == kEventFaultDetected && e.wall_ns >= At(10);
  });
  auto m = ComputeMetrics(t.in, {});
  REQUIRE(m.ok());
  CHECK_FALSE(m->faults[0].detection_latency_ms);
  auto rows = m->ToRecords();
  CHECK(*Find(rows, "f0", "detected") == 0);
  CHECK_FALSE(Find(rows, "f0", "detection_latency_ms"));
  // The rest does not depend on detection.
  CHECK(*m->faults[0].recovery_ms == Approx(3000));
}

TEST_CASE("metrics: a detection heard between the request and the acknowledgement counts as 0",
          "[unit]") {
  Trace t = Reference();  // requested at 9.95 s, effective (acknowledged) at 10.0 s
  std::erase_if(t.in.events, [](const EventRecord& e) {
    return e.kind == kEventFaultDetected || e.kind == kEventFailoverDone;
  });
  t.Event(kEventFaultDetected, 9.97, 1);  // the CCL heard of it before the ack came back
  t.Event(kEventFailoverDone, 9.99, 1);
  t.Event(kEventFaultDetected, 9.90, 0);  // before the request: not this fault's
  auto m = ComputeMetrics(t.in, {});
  REQUIRE(m.ok());
  REQUIRE(m->faults[0].detection_latency_ms);
  CHECK(*m->faults[0].detection_latency_ms == 0);
  CHECK(*m->faults[0].failover_ms == 0);
  // Without a requested time only events from T on count.
  t.in.faults[0].requested_wall_ns.reset();
  auto n = ComputeMetrics(t.in, {});
  REQUIRE(n.ok());
  CHECK_FALSE(n->faults[0].detection_latency_ms);
}

TEST_CASE("metrics: recovery is the first window settled from its first iteration, in median",
          "[unit]") {
  // Baseline 1 s; the fault at 10 s; iteration 10 stalls 3 s; then 2 s per iteration, except
  // that every third one jitters to 1.5 s (more than 10% off D = 0.5e9 B/s).
  Trace t;
  t.Run(0, 10, 0, 1);
  t.Iter(10, 10, 13);
  double at = 13;
  for (int64_t i = 11; i <= 30; ++i) {
    const double d = i % 3 == 0 ? 1.5 : 2.0;
    t.Iter(i, at, at + d);
    at += d;
  }
  t.Fault("f0", 10.0, std::nullopt);
  auto m = ComputeMetrics(t.in, {});
  REQUIRE(m.ok());
  REQUIRE(m->faults[0].degraded_algbw);
  CHECK(*m->faults[0].degraded_algbw == Approx(0.5e9));
  // Window 11..15 (11 is on D, the median of 11..15 is D): it starts at 13 s, 3000 ms after
  // T. Asking every iteration to be within 10% would never find a window of 5.
  REQUIRE(m->faults[0].recovery_ms);
  CHECK(*m->faults[0].recovery_ms == Approx(3000));
}

TEST_CASE("metrics: a fault that never settles never recovers", "[unit]") {
  Trace t;
  double at = t.Run(0, 10, 0, 1);
  for (int k = 10; k < 30; ++k) {  // alternating 2 s and 4 s: no stable window
    double d = (k % 2 == 0) ? 2 : 4;
    t.Iter(k, at, at + d);
    at += d;
  }
  REQUIRE(at == 70);
  t.Fault("f0", 10, std::nullopt);
  auto m = ComputeMetrics(t.in, {});
  REQUIRE(m.ok());
  const FaultMetrics& f = m->faults[0];
  CHECK(f.fault_iterations == 20);
  CHECK(*f.degraded_algbw == Approx(0.375e9));  // median of 5 x 0.5e9 and 5 x 0.25e9
  CHECK(*f.degraded_ratio == Approx(0.375));
  CHECK_FALSE(f.recovery_ms);
  CHECK_FALSE(f.failback_ms);  // never reverted
  CHECK(*f.time_to_first_progress_ms == Approx(2000));
  // No revert: loss runs to the run end (70 s): 60 s elapsed, 20 iterations of work.
  CHECK(*f.throughput_loss_s == Approx(40));
  CHECK(*f.throughput_loss_gpu_s == Approx(80));
  auto rows = m->ToRecords();
  CHECK(*Find(rows, "f0", "recovered") == 0);
  CHECK_FALSE(Find(rows, "f0", "failed_back"));
  CHECK(m->outcome.kind == OutcomeKind::kSurvived);
}

Trace Hung() {
  Trace t;
  t.Run(0, 10, 0, 1);
  t.Iter(10, 10, 11, {0});  // rank 0 finishes its part of iteration 10; rank 1 never does
  t.Fault("f0", 10, std::nullopt);
  t.in.run_end_ns = At(60);
  t.in.expected_iterations = 40;
  return t;
}

TEST_CASE("metrics: a hung job names its stuck ranks", "[unit]") {
  Trace t = Hung();
  AnalysisOptions o;
  o.hang_timeout = 30 * kNsPerSec;
  auto m = ComputeMetrics(t.in, o);
  REQUIRE(m.ok());
  CHECK(m->outcome.kind == OutcomeKind::kHung);
  REQUIRE(m->outcome.stuck_ranks.size() == 2);
  CHECK(m->outcome.stuck_ranks[0] == StuckRank{0, 10, 49 * kNsPerSec});
  CHECK(m->outcome.stuck_ranks[1] == StuckRank{1, 9, 50 * kNsPerSec});
  CHECK(m->outcome.reason ==
        "no progress for more than 30.0s: rank 0 idle for 49.0s after iteration 10; "
        "rank 1 idle for 50.0s after iteration 9");
  const FaultMetrics& f = m->faults[0];
  CHECK_FALSE(f.time_to_first_progress_ms);
  CHECK(f.fault_iterations == 0);
  CHECK_FALSE(f.degraded_ratio);
  CHECK_FALSE(f.recovery_ms);
  CHECK(*f.throughput_loss_s == Approx(50));  // [10, 60] with no completed work
  CHECK(*f.throughput_loss_gpu_s == Approx(100));
  CHECK(m->correctness.lost_iterations == 29 + 30);
  auto rows = m->ToRecords();
  CHECK(*Find(rows, std::nullopt, "outcome") == 2);
  CHECK(*Find(rows, std::nullopt, "stuck_ranks") == 2);
  CHECK(*Find(rows, std::nullopt, "hang_timeout_ms") == Approx(30000));
}

TEST_CASE("metrics: a stopped job is failed, not hung, within the hang timeout", "[unit]") {
  Trace t = Hung();
  AnalysisOptions o;
  o.hang_timeout = 60 * kNsPerSec;
  auto m = ComputeMetrics(t.in, o);
  REQUIRE(m.ok());
  CHECK(m->outcome.kind == OutcomeKind::kFailed);
  CHECK(m->outcome.stuck_ranks.empty());
  CHECK_THAT(m->outcome.reason, Catch::Contains("rank 0 completed 11 of 40"));

  t.in.job_failed = true;
  t.in.job_failure = "rank 1 exited with status 134";
  m = ComputeMetrics(t.in, o);
  REQUIRE(m.ok());
  CHECK(m->outcome.kind == OutcomeKind::kFailed);
  CHECK(m->outcome.reason == "rank 1 exited with status 134");
}

TEST_CASE("metrics: duplicates, mismatches and lost iterations are counted", "[unit]") {
  Trace t;
  t.Run(0, 10, 0, 1);
  t.in.samples.push_back({"r1", 0, 3, At(3), At(4), kBytes, true, false});  // duplicate
  for (auto& s : t.in.samples) {
    if (s.rank == 1 && s.iteration == 5) s.mismatch = true;
    if (s.rank == 0 && s.iteration == 7) s.verified = false;
  }
  std::erase_if(t.in.samples,
                [](const SampleRecord& s) { return s.rank == 1 && s.iteration == 8; });
  auto m = ComputeMetrics(t.in, {});
  REQUIRE(m.ok());
  CHECK(m->correctness.duplicated_iterations == 1);
  CHECK(m->correctness.mismatches == 1);
  CHECK(m->correctness.verified_collectives == 19);  // 20 samples, one unverified
  CHECK(m->correctness.lost_iterations == 1);
  CHECK(m->correctness.complete_iterations == 9);
  CHECK(m->baseline_iterations == 9);  // no faults: every complete iteration is baseline
  CHECK(m->faults.empty());
}

TEST_CASE("metrics: faults before any iteration, unapplied faults and fault intervals", "[unit]") {
  Trace t;
  double at = t.Run(0, 10, 0, 1);
  t.Run(10, 10, at, 2);  // 10..19 at half speed, ending at 30
  t.Fault("f0", 0.5, std::nullopt);
  FaultRecord never;
  never.run_id = "r1";
  never.fault_id = "f9";
  t.in.faults.push_back(never);
  t.Fault("f1", 20, std::nullopt);
  t.Event(kEventFaultDetected, 21);  // after f1: belongs to f1 only
  auto m = ComputeMetrics(t.in, {});
  REQUIRE(m.ok());
  CHECK_FALSE(m->baseline_algbw);  // iteration 0 ends after f0
  REQUIRE(m->faults.size() == 3);
  CHECK(m->faults[0].fault_id == "f0");
  CHECK(m->faults[0].interval_end_ns == At(20));
  CHECK_FALSE(m->faults[0].detection_latency_ms);
  CHECK_FALSE(m->faults[0].degraded_ratio);
  CHECK(*m->faults[0].degraded_algbw == Approx(0.5e9));  // median of iterations 8..14
  CHECK_FALSE(m->faults[0].throughput_loss_s);
  CHECK(m->faults[1].fault_id == "f1");
  CHECK(*m->faults[1].detection_latency_ms == Approx(1000));
  CHECK(m->faults[2].fault_id == "f9");
  CHECK_FALSE(m->faults[2].applied);
  auto rows = m->ToRecords();
  CHECK(*Find(rows, "f9", "fault_applied") == 0);
  CHECK_FALSE(Find(rows, "f9", "detected"));
}

// A second fault timed during the first one's recovery (after_event / during: its anchor):
// f0 at 10 s is detected at 10.01 s; f1 hits at 10.05 s, is detected at 10.06 s; one
// failover at 10.5 s completes both; iteration 10 ends at 11.5 s, then 2 s per iteration;
// both reverted at 31.5 s; f2 (not nested) at 40 s.
Trace Nested(bool anchored) {
  Trace t;
  t.Run(0, 10, 0, 1);
  t.Iter(10, 10, 11.5);
  double at = t.Run(11, 10, 11.5, 2);  // 11..20, ending at 31.5
  t.Run(21, 10, at, 1);                // 21..30, ending at 41.5
  t.Event(kEventFaultDetected, 10.01, 1);
  t.Event(kEventFaultDetected, 10.06, 0);
  t.Event(kEventFailoverDone, 10.5);
  t.Fault("f0", 10.0, 31.5);
  FaultRecord& f1 = t.Fault("f1", 10.05, 31.5);
  if (anchored) f1.anchor = "f0";
  t.Fault("f2", 40, std::nullopt);
  return t;
}

TEST_CASE(
    "metrics: a fault nested in another (after_event / during) does not end its anchor's "
    "interval, and each keeps its own detection",
    "[unit]") {
  auto m = ComputeMetrics(Nested(true).in, {});
  REQUIRE(m.ok());
  REQUIRE(m->faults.size() == 3);
  const FaultMetrics& f0 = m->faults[0];
  const FaultMetrics& f1 = m->faults[1];
  CHECK(f0.fault_id == "f0");
  CHECK(f0.interval_end_ns == At(40));
  CHECK(*f0.detection_latency_ms == Approx(10).margin(1e-6));
  CHECK(*f0.failover_ms == Approx(500).margin(1e-6));
  CHECK(*f0.time_to_first_progress_ms == Approx(1500).margin(1e-6));
  CHECK(*f0.degraded_algbw == Approx(0.5e9));  // iterations 11..20 under both faults
  CHECK(f1.fault_id == "f1");
  CHECK(f1.interval_end_ns == At(40));
  CHECK(*f1.detection_latency_ms == Approx(10).margin(1e-6));  // its own: 10.06 s
  CHECK(*f1.failover_ms == Approx(450).margin(1e-6));          // the one failover, from 10.05
  CHECK(*f1.time_to_first_progress_ms == Approx(1450).margin(1e-6));
  CHECK(m->faults[2].interval_end_ns > At(40));

  // The same times without the anchor: f1 ends f0's interval at 10.05 s, and f0 loses its
  // failover and first progress to f1.
  auto plain = ComputeMetrics(Nested(false).in, {});
  REQUIRE(plain.ok());
  CHECK(plain->faults[0].interval_end_ns == At(10.05));
  CHECK(*plain->faults[0].detection_latency_ms == Approx(10).margin(1e-6));
  CHECK_FALSE(plain->faults[0].failover_ms);
  CHECK_FALSE(plain->faults[0].time_to_first_progress_ms);
}

TEST_CASE("metrics: a relaunched fail-stop job reports its restart cost", "[unit]") {
  Trace t;
  t.Run(0, 10, 0, 1);  // iterations 0..9, checkpoint after iteration 5
  t.Fault("f0", 10, 11);
  t.Event(kEventJobRestarted, 20);
  // Relaunched at 20 s from the checkpoint: iterations 6..14 again, 1 s each from 25 s.
  t.Run(6, 9, 25, 1);  // 6..9 re-run (ending at 29), 10 ends at 30
  auto m = ComputeMetrics(t.in, {});
  REQUIRE(m.ok());
  CHECK(m->correctness.duplicated_iterations == 8);  // 6..9 on two ranks
  const FaultMetrics& f = m->faults[0];
  CHECK(*f.restart_cost_ms == Approx(20000));            // iteration 10 (beyond 9) ends at 30 s
  CHECK(*f.time_to_first_progress_ms == Approx(16000));  // re-run iteration 6 ends at 26 s
  // Without the relaunch event there is no restart cost.
  std::erase_if(t.in.events, [](const EventRecord& e) { return e.kind == kEventJobRestarted; });
  m = ComputeMetrics(t.in, {});
  REQUIRE(m.ok());
  CHECK_FALSE(m->faults[0].restart_cost_ms);
}

TEST_CASE("metrics: bad options and bad samples are InvalidArgument", "[unit]") {
  Trace t = Reference();
  AnalysisOptions o;
  o.window = 0;
  CHECK(ComputeMetrics(t.in, o).status().code() == Code::kInvalidArgument);
  o = {};
  o.tolerance = 1.5;
  CHECK(ComputeMetrics(t.in, o).status().code() == Code::kInvalidArgument);
  t.in.samples[0].end_ns = t.in.samples[0].start_ns - 1;
  CHECK(ComputeMetrics(t.in, {}).status().code() == Code::kInvalidArgument);
}

TEST_CASE(
    "metrics: a black box's detection is its first abnormal gap, what it cannot tell is "
    "absent, not zero",
    "[unit]") {
  Trace t = Reference();
  std::erase_if(t.in.events, [](const EventRecord& e) {
    return e.kind == kEventFaultDetected && e.wall_ns >= At(10);
  });
  AnalysisOptions o;
  o.black_box = true;
  o.gap_factor = 2;  // baseline period 1 s: a gap is 2 s without a completed iteration
  auto m = ComputeMetrics(t.in, o);
  REQUIRE(m.ok());
  // Iteration 9 ended at 10 s (the fault), iteration 10 at 13 s: the gap shows at 12 s.
  REQUIRE(m->faults[0].detection_latency_ms);
  CHECK(*m->faults[0].detection_latency_ms == Approx(2000));
  CHECK(m->faults[0].detection_source == "gap");
  CHECK(m->correctness_measured);  // the trace's samples are verified
  CHECK(m->absent_notes.empty());

  // The job's own error line wins over the gap.
  t.Event(kEventFaultDetected, 10.1);
  m = ComputeMetrics(t.in, o);
  REQUIRE(m.ok());
  CHECK(*m->faults[0].detection_latency_ms == Approx(100));
  CHECK(m->faults[0].detection_source == "event");

  // No gap as long as 3 periods and no error line: detection absent, and said so.
  t.in.events.pop_back();
  o.gap_factor = 3;
  for (auto& smp : t.in.samples) smp.verified = false;
  m = ComputeMetrics(t.in, o);
  REQUIRE(m.ok());
  CHECK_FALSE(m->faults[0].detection_latency_ms);
  CHECK_FALSE(m->correctness_measured);
  auto rows = m->ToRecords();
  CHECK_FALSE(Find(rows, std::nullopt, "mismatches"));  // absent, not 0
  CHECK(*Find(rows, std::nullopt, "verified_collectives") == 0);
  REQUIRE(m->absent_notes.size() == 2);
  CHECK(m->absent_notes[0].rfind("correctness:", 0) == 0);
  CHECK(m->absent_notes[1].rfind("detection of f0:", 0) == 0);

  // faultline-worker's runs are not black boxes: nothing changes for them.
  m = ComputeMetrics(t.in, {});
  REQUIRE(m.ok());
  CHECK(m->correctness_measured);
  CHECK(*Find(m->ToRecords(), std::nullopt, "mismatches") == 0);
}

}  // namespace
}  // namespace fl::reports
