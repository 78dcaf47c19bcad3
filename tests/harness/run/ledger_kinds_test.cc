// The detection ledger for every fault kind the built-in injectors have, with the traits
// their registry entries give (harness/run/analyse.h, LedgerTraits): the layers that apply to
// each kind, each noticing the fault when its evidence is there.
#include <catch2/catch.hpp>

#include <set>

#include "harness/run/analyse.h"
#include "injectors/injector.h"

namespace fl::harness::run {
namespace {

constexpr Nanos kT0 = 1'000'000 * kNsPerSec;

// A target of the kind's default target class, in the lab's names.
std::string TargetOf(const std::string& cls) {
  if (cls == "nic") return "h1.nic0";
  if (cls == "tor_port") return "tor0.h1";
  if (cls == "uplink") return "tor0p0.up0";
  if (cls == "container" || cls == "rank") return "h1.rank0";
  FAIL("no example target for class " << cls);
  return "";
}

TEST_CASE("ledger: the layers of every built-in fault kind", "[unit]") {
  const auto& registry = injectors::BuiltinInjectors();
  const auto kinds = registry.Names();
  REQUIRE(kinds.size() >= 8);
  for (const auto& kind : kinds) {
    const injectors::InjectorInfo* info = registry.Describe(kind);
    REQUIRE(info != nullptr);
    const std::string target = TargetOf(info->target_classes.front());
    INFO(kind << " on " << target);
    reports::LedgerInput in;
    in.ccl_reports_health = true;
    in.traits = LedgerTraits;
    reports::FaultRecord f;
    f.run_id = "r1";
    f.fault_id = "f0";
    f.kind = kind;
    f.target = target;
    f.requested_wall_ns = kT0 + 999 * kNsPerMs;
    f.effective_wall_ns = kT0 + kNsPerSec;
    f.reverted_wall_ns = kT0 + 3 * kNsPerSec;
    in.faults = {f};
    // h1's two NICs, read every 100 ms; nic0's carrier changes 100 ms into the fault.
    for (const char* nic : {"nic0", "nic1"})
      for (int64_t ms = 0; ms <= 4000; ms += 100) {
        reports::NicSampleRecord r;
        r.run_id = "r1";
        r.host = "h1";
        r.nic = nic;
        r.wall_ns = kT0 + ms * kNsPerMs;
        r.rx_bytes = r.tx_bytes = static_cast<uint64_t>(ms) * 1000;
        r.extra["carrier_changes"] = std::string(nic) == "nic0" && ms >= 1100 ? 3 : 2;
        in.nics.push_back(r);
      }
    in.events = {{"r1", 1, kT0 + kNsPerSec + kNsPerMs, "fault_detected", "{}"}};
    reports::RunMetrics m;
    m.run_id = "r1";
    m.baseline_iterations = 20;
    reports::FaultMetrics fm;
    fm.fault_id = "f0";
    fm.applied = true;
    fm.injected_ns = *f.effective_wall_ns;
    fm.reverted_ns = f.reverted_wall_ns;
    fm.interval_end_ns = kT0 + 4 * kNsPerSec;
    fm.stall_ms = 60;
    m.faults = {fm};

    const auto rows = reports::ComputeLedger(in, m);
    std::set<std::string> layers;
    for (const auto& r : rows) {
      layers.insert(r.layer);
      CHECK(r.noticed_wall_ns.has_value());  // every layer that applies saw it here
    }
    std::set<std::string> want = {"injector", "ccl", "progress"};
    const bool names_a_host_nic = target == "h1.nic0" || target == "tor0.h1";
    if (!info->instantaneous && names_a_host_nic) want.insert("kernel");
    CHECK(layers == want);
    for (const auto& r : rows) {
      if (r.layer == "injector")
        CHECK(r.evidence.rfind(
                  info->side == injectors::FaultSide::kSwitch ? "the switch" : "the agent", 0) ==
              0);
      if (r.layer == "kernel") CHECK(*r.latency_ms == Approx(100));
    }
  }
}

}  // namespace
}  // namespace fl::harness::run
