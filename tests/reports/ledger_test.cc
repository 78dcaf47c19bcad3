// The detection ledger (reports/metrics/ledger.h) on a run built by hand: which layers apply
// to each fault, when each noticed it, and what it saw.
#include "reports/metrics/ledger.h"

#include <catch2/catch.hpp>

namespace fl::reports {
namespace {

constexpr Nanos kT0 = 1'000'000 * kNsPerSec;
constexpr Nanos kMs = kNsPerMs;

Nanos At(int64_t ms) { return kT0 + ms * kMs; }

// NIC readings every 100 ms from 0 to 12 s: 1 MB each way per 100 ms; `edit` changes one.
void Readings(std::vector<NicSampleRecord>& out, const std::string& host, const std::string& nic,
              const std::function<void(int64_t ms, NicSampleRecord&)>& edit = {}) {
  for (int64_t ms = 0; ms <= 12'000; ms += 100) {
    NicSampleRecord r;
    r.run_id = "r1";
    r.host = host;
    r.nic = nic;
    r.wall_ns = At(ms);
    r.rx_bytes = r.tx_bytes = static_cast<uint64_t>(ms) * 10'000;
    r.extra["carrier_changes"] = 2;
    if (edit) edit(ms, r);
    out.push_back(r);
  }
}

FaultRecord Fault(const std::string& id, const std::string& kind, const std::string& target,
                  int64_t effective_ms, std::optional<int64_t> reverted_ms) {
  FaultRecord f;
  f.run_id = "r1";
  f.fault_id = id;
  f.kind = kind;
  f.target = target;
  f.requested_wall_ns = At(effective_ms) - 2 * kMs;
  f.effective_wall_ns = At(effective_ms);
  if (reverted_ms) f.reverted_wall_ns = At(*reverted_ms);
  return f;
}

FaultMetrics Measured(const FaultRecord& f, int64_t end_ms, std::optional<double> stall_ms) {
  FaultMetrics m;
  m.fault_id = f.fault_id;
  m.applied = true;
  m.injected_ns = *f.effective_wall_ns;
  m.reverted_ns = f.reverted_wall_ns;
  m.interval_end_ns = At(end_ms);
  m.stall_ms = stall_ms;
  return m;
}

const DetectionRecord* Row(const std::vector<DetectionRecord>& rows, const std::string& fault,
                           std::string_view layer) {
  for (const auto& r : rows)
    if (r.fault_id == fault && r.layer == layer) return &r;
  return nullptr;
}

TEST_CASE("ledger: each layer's time and evidence, and the layers that apply", "[unit]") {
  LedgerInput in;
  // f0 takes h1.nic0 down at 1 s: its carrier changes by the 1.1 s reading.
  Readings(in.nics, "h1", "nic0", [](int64_t ms, NicSampleRecord& r) {
    if (ms >= 1100) r.extra["carrier_changes"] = 3;
  });
  // f2 slows the port of tor0 facing h1 at 8 s: h1.nic1's traffic falls to a tenth by 8.2 s.
  Readings(in.nics, "h1", "nic1", [](int64_t ms, NicSampleRecord& r) {
    if (ms > 8100) r.rx_bytes = r.tx_bytes = 81'000'000 + static_cast<uint64_t>(ms - 8100) * 1'000;
  });
  // f1 drops packets on h2.nic0 from 5 s: the 5.3 s reading counts 7 drops.
  Readings(in.nics, "h2", "nic0", [](int64_t ms, NicSampleRecord& r) {
    if (ms >= 5300) r.rx_dropped = 7;
  });
  in.faults = {Fault("f0", "nic_port_flap", "h1.nic0", 1000, 3000),
               Fault("f1", "packet_loss", "h2.nic0", 5000, 6000),
               Fault("f2", "bandwidth_throttle", "tor0.h1", 8000, 9000),
               Fault("f3", "container_kill", "h1.rank0", 10'000, std::nullopt),
               Fault("f4", "tor_uplink_down", "tor0p0.up0", 11'000, 11'500)};
  in.events = {{"r1", 2, At(1000) + 500'000, std::string(kEventFaultDetected), "{}"},
               {"r1", 0, At(500), std::string(kEventFaultDetected), "{}"}};  // before f0
  in.ccl_reports_health = true;
  in.traits = [](std::string_view kind) {
    FaultTraits t;
    t.switch_side = kind == "tor_uplink_down";
    t.instantaneous = kind == "container_kill";
    return t;
  };
  RunMetrics m;
  m.run_id = "r1";
  m.baseline_iterations = 10;
  m.faults = {Measured(in.faults[0], 5000, 205.0), Measured(in.faults[1], 8000, std::nullopt),
              Measured(in.faults[2], 10'000, std::nullopt), Measured(in.faults[3], 11'000, 1500.0),
              Measured(in.faults[4], 12'000, 40.0)};
  const auto rows = ComputeLedger(in, m);

  const auto* inj = Row(rows, "f0", kLayerInjector);
  REQUIRE(inj);
  CHECK(inj->latency_ms == 0.0);
  CHECK(inj->evidence == "the agent read it back in place, 2.0 ms after the request");
  const auto* kernel = Row(rows, "f0", kLayerKernel);
  REQUIRE(kernel);
  CHECK(kernel->noticed_wall_ns == At(1100));
  CHECK(*kernel->latency_ms == Approx(100));
  CHECK(kernel->evidence == "h1.nic0: carrier went down");
  const auto* ccl = Row(rows, "f0", kLayerCcl);
  REQUIRE(ccl);
  CHECK(*ccl->latency_ms == Approx(0.5));
  CHECK(ccl->evidence == "fault_detected by rank 2");
  CHECK(*Row(rows, "f0", kLayerProgress)->latency_ms == Approx(205));

  CHECK(*Row(rows, "f1", kLayerKernel)->latency_ms == Approx(300));
  CHECK(Row(rows, "f1", kLayerKernel)->evidence == "h2.nic0: 7 packet(s) dropped or in error");
  CHECK_FALSE(Row(rows, "f1", kLayerCcl)->noticed_wall_ns);
  CHECK(Row(rows, "f1", kLayerCcl)->evidence == "no fault_detected from any rank");
  CHECK_FALSE(Row(rows, "f1", kLayerProgress)->noticed_wall_ns);
  CHECK(Row(rows, "f1", kLayerProgress)->evidence == "progress never stalled");

  // A switch port facing h1: h1's NICs are watched, and nic1 shows it.
  const auto* throttled = Row(rows, "f2", kLayerKernel);
  REQUIRE(throttled);
  CHECK(*throttled->latency_ms == Approx(200));
  CHECK(throttled->evidence == "h1.nic1: traffic fell to 10% of before");

  // A killed process has no counters to watch; an uplink names no host NIC.
  CHECK_FALSE(Row(rows, "f3", kLayerKernel));
  CHECK(*Row(rows, "f3", kLayerProgress)->latency_ms == Approx(1500));
  CHECK_FALSE(Row(rows, "f4", kLayerKernel));
  CHECK(Row(rows, "f4", kLayerInjector)->evidence.rfind("the switch read it back", 0) == 0);

  // Order: by fault, each fault's layers in kLedgerLayers order.
  std::vector<std::string> f0_layers;
  for (const auto& r : rows)
    if (r.fault_id == "f0") f0_layers.push_back(r.layer);
  CHECK(f0_layers == std::vector<std::string>{"injector", "kernel", "ccl", "progress"});
  for (const auto& r : rows) CHECK(r.run_id == "r1");
}

TEST_CASE("ledger: a CCL that reports no health has no ccl row, and no baseline no stall verdict",
          "[unit]") {
  LedgerInput in;
  in.faults = {Fault("f0", "nic_port_flap", "h1.nic0", 1000, 2000)};
  RunMetrics m;
  m.run_id = "r1";
  m.faults = {Measured(in.faults[0], 5000, std::nullopt)};
  const auto rows = ComputeLedger(in, m);
  CHECK_FALSE(Row(rows, "f0", kLayerCcl));
  CHECK_FALSE(Row(rows, "f0", kLayerKernel));  // no readings of h1.nic0
  REQUIRE(Row(rows, "f0", kLayerProgress));
  CHECK(Row(rows, "f0", kLayerProgress)->evidence ==
        "no baseline before the fault to judge a stall by");
  CHECK(rows.size() == 2);
}

TEST_CASE("ledger: the NICs a target names", "[unit]") {
  std::vector<NicSampleRecord> nics;
  Readings(nics, "h1", "nic0");
  Readings(nics, "h1", "nic1");
  Readings(nics, "h2", "nic0");
  CHECK(LedgerNicsOf("h1.nic0", nics) == std::vector<std::string>{"h1.nic0"});
  CHECK(LedgerNicsOf("tor0.h1", nics) == std::vector<std::string>{"h1.nic0", "h1.nic1"});
  CHECK(LedgerNicsOf("tor0p0.up0", nics).empty());
  CHECK(LedgerNicsOf("h3.nic0", nics).empty());
  CHECK(LedgerNicsOf("", nics).empty());
}

}  // namespace
}  // namespace fl::reports
