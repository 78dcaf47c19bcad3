// A second fault during the first one's recovery (issue 18): the shipped
// fault_during_recovery.yaml on the local lab (h1.nic0 down, then h2.nic0 2 ms after the first
// detection, `during: f0`), judged from what the run stored. Root only.
#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "reports/store/store.h"
#include "tests/harness/run_testing.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using testing::Faultline;
using testing::Netns;
using testing::TempDir;

std::optional<double> Metric(const reports::RunData& d, const std::string& fault,
                             const std::string& name) {
  for (const auto& m : d.metrics)
    if (m.fault_id == fault && m.name == name) return m.value;
  return std::nullopt;
}

// The first event of `kind` at or after `from` (wall ns), if any.
std::optional<Nanos> FirstEvent(const reports::RunData& d, const std::string& kind, Nanos from) {
  std::optional<Nanos> first;
  for (const auto& e : d.events)
    if (e.kind == kind && e.wall_ns >= from && (!first || e.wall_ns < *first)) first = e.wall_ns;
  return first;
}

double Ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }

TEST_CASE(
    "faultline run: a second NIC fault timed during the first one (at its detection) lands while "
    "it is in effect, ftccl survives both, and each fault's metrics are attributed as "
    "docs/metrics.md says",
    "[.root][serial][integration]") {
  TempDir dir("fl_overlap");
  auto before = Netns();
  const std::string db = dir.path() + "/r.db";
  Faultline f({"run", "configs/scenarios/fault_during_recovery.yaml", "--db", db}, dir.path());
  auto rc = f.Wait(Deadline::After(300 * kNsPerSec));
  INFO(f.err());
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  CHECK(Netns() == before);
  // The terminal tells of both, the second as timed by the first.
  CHECK(f.err().find("[fault] f1 nic_port_flap on h2.nic0: injected") != std::string::npos);
  CHECK(f.err().find("[fault] f0 detected by rank") != std::string::npos);
  CHECK(f.err().find("[fault] f1 detected by rank") != std::string::npos);

  reports::RunData d = testing::OnlyRun(db);
  REQUIRE(d.faults.size() == 2);
  const reports::FaultRecord& f0 = d.faults[0];
  const reports::FaultRecord& f1 = d.faults[1];
  REQUIRE(f0.fault_id == "f0");
  REQUIRE(f1.fault_id == "f1");
  CHECK(f0.anchor.empty());
  CHECK(f1.anchor == "f0");
  REQUIRE(f0.effective_wall_ns);
  REQUIRE(f1.effective_wall_ns);
  REQUIRE(f1.requested_wall_ns);
  REQUIRE(f1.scheduled_wall_ns);
  const Nanos t0 = *f0.effective_wall_ns, t1 = *f1.effective_wall_ns;

  // f1 was due 2 ms after a detection of f0 (the first the coordinator saw: events from
  // different agents can arrive out of order), and fired after that.
  auto detected0 = FirstEvent(d, "fault_detected", f0.requested_wall_ns.value_or(t0));
  REQUIRE(detected0);
  bool anchored_on_a_detection = false;
  for (const auto& e : d.events)
    anchored_on_a_detection =
        anchored_on_a_detection || (e.kind == "fault_detected" && e.wall_ns >= *detected0 &&
                                    e.wall_ns + 2 * kNsPerMs == *f1.scheduled_wall_ns);
  CHECK(anchored_on_a_detection);
  CHECK(*f1.requested_wall_ns >= *f1.scheduled_wall_ns);
  INFO("f1 took effect " << Ms(t1 - t0) << " ms after f0");

  // Both survived, exactly; every fault fired; every expectation passed.
  for (const auto& v : d.verdicts) {
    INFO(v.expectation << " " << v.fault_id.value_or("run") << ": " << v.message);
    CHECK(v.passed);
  }
  // f1 hit while f0 was in effect, after f0's detection. (Whether it also lands before the
  // job's throughput has settled from f0 depends on how fast the coordinator reacts, some
  // 4-15 ms here, against ftccl's sub-millisecond failover: shown, not asserted.)
  REQUIRE(f0.reverted_wall_ns);
  CHECK(t1 > *detected0);
  CHECK(t1 < *f0.reverted_wall_ns);
  auto recovery0 = Metric(d, "f0", "recovery_ms");
  CHECK(recovery0);
  INFO("f0 recovered " << recovery0.value_or(-1) << " ms after it took effect");

  // Attribution (docs/metrics.md, "Overlapping faults"): f1 does not end f0's interval, so f0
  // keeps its failover, first progress and recovery although they came after f1 hit; each
  // fault's detection is the first fault_detected from its own request on.
  auto det0 = Metric(d, "f0", "detection_latency_ms");
  auto det1 = Metric(d, "f1", "detection_latency_ms");
  REQUIRE(det0);
  REQUIRE(det1);
  CHECK(*det0 == Approx(std::max(0.0, Ms(*detected0 - t0))).margin(0.01));
  auto detected1 = FirstEvent(d, "fault_detected", std::min(*f1.requested_wall_ns, t1));
  REQUIRE(detected1);
  CHECK(*det1 == Approx(std::max(0.0, Ms(*detected1 - t1))).margin(0.01));
  auto failover0 = Metric(d, "f0", "failover_ms");
  REQUIRE(failover0);
  auto failed_over0 = FirstEvent(d, "failover_done", f0.requested_wall_ns.value_or(t0));
  REQUIRE(failed_over0);
  CHECK(*failover0 == Approx(std::max(0.0, Ms(*failed_over0 - t0))).margin(0.01));
  CHECK(Metric(d, "f0", "time_to_first_progress_ms"));
  CHECK(Metric(d, "f1", "time_to_first_progress_ms"));
  CHECK(Metric(d, "f1", "failover_ms"));
  CHECK(*Metric(d, "f0", "fault_applied") == 1);
  CHECK(*Metric(d, "f1", "fault_applied") == 1);
}

}  // namespace
}  // namespace fl::harness
