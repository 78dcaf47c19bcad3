#include "reports/metrics/ledger.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "common/ids.h"

namespace fl::reports {
namespace {

constexpr double kLedgerNsPerMs = 1e6;
// A NIC's traffic is "stopped" below this share of its rate over the second before the fault.
constexpr double kTrafficFloor = 0.2;
constexpr Nanos kRateWindow = 1 * kNsPerSec;
// Counters read after the revert still show what happened before it (one reading late).
constexpr Nanos kAfterRevert = 200 * kNsPerMs;

double Ms(Nanos ns) { return static_cast<double>(ns) / kLedgerNsPerMs; }

std::string MsText(Nanos ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", Ms(ns));
  return buf;
}

uint64_t Bad(const NicSampleRecord& r) {
  return r.rx_dropped + r.tx_dropped + r.rx_errors + r.tx_errors;
}

uint64_t CarrierChanges(const NicSampleRecord& r) {
  auto it = r.extra.find("carrier_changes");
  return it == r.extra.end() ? 0 : it->second;
}

std::string FormatGap(double factor) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", factor);
  return buf;
}

struct Seen {
  Nanos at = 0;
  std::string evidence;
};

// The first reading of one NIC in (T, until] that shows the fault.
std::optional<Seen> KernelSaw(const std::vector<const NicSampleRecord*>& rs, Nanos T, Nanos until,
                              const std::string& nic) {
  const NicSampleRecord* base = nullptr;
  size_t first_after = rs.size();
  for (size_t i = 0; i < rs.size(); ++i) {
    if (rs[i]->wall_ns <= T) {
      base = rs[i];
    } else {
      first_after = i;
      break;
    }
  }
  if (base == nullptr) return std::nullopt;
  // The rate over the second before the fault.
  std::optional<double> rate;
  for (const auto* r : rs) {
    if (r->wall_ns >= base->wall_ns - kRateWindow && r->wall_ns < base->wall_ns) {
      const double bytes =
          static_cast<double>((base->rx_bytes + base->tx_bytes) -
                              std::min(base->rx_bytes + base->tx_bytes, r->rx_bytes + r->tx_bytes));
      rate = bytes / static_cast<double>(base->wall_ns - r->wall_ns);
      break;
    }
  }
  const NicSampleRecord* prev = base;
  for (size_t i = first_after; i < rs.size() && rs[i]->wall_ns <= until; ++i) {
    const NicSampleRecord& r = *rs[i];
    if (CarrierChanges(r) > CarrierChanges(*base))
      return Seen{r.wall_ns, nic + ": carrier went down"};
    if (Bad(r) > Bad(*base))
      return Seen{r.wall_ns, nic + ": " + std::to_string(Bad(r) - Bad(*base)) +
                                 " packet(s) dropped or in error"};
    if (rate && *rate > 0 && r.wall_ns > prev->wall_ns) {
      const uint64_t now = r.rx_bytes + r.tx_bytes, before = prev->rx_bytes + prev->tx_bytes;
      const double here = static_cast<double>(now - std::min(now, before)) /
                          static_cast<double>(r.wall_ns - prev->wall_ns);
      if (here < kTrafficFloor * *rate) {
        char pct[32];
        std::snprintf(pct, sizeof pct, "%.0f%%", 100 * here / *rate);
        return Seen{r.wall_ns, nic + ": traffic fell to " + std::string(pct) + " of before"};
      }
    }
    prev = &r;
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> LedgerNicsOf(std::string_view target,
                                      const std::vector<NicSampleRecord>& nics) {
  const auto parts = TargetParts(target);
  std::vector<std::string> out;
  auto add = [&](const std::string& key) {
    if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
  };
  // The NIC itself: host and nic are the target's first two parts.
  if (parts.size() >= 2)
    for (const auto& n : nics)
      if (n.host == parts[0] && n.nic == parts[1]) add(n.host + "." + n.nic);
  if (!out.empty()) return out;
  // A switch port facing a host ("tor0.h1"): every NIC of that host.
  if (parts.size() == 2)
    for (const auto& n : nics)
      if (n.host == parts[1]) add(n.host + "." + n.nic);
  return out;
}

std::vector<DetectionRecord> ComputeLedger(const LedgerInput& in, const RunMetrics& metrics) {
  std::map<std::string, const FaultRecord*> by_id;
  for (const auto& f : in.faults) by_id[f.fault_id] = &f;
  std::map<std::string, std::vector<const NicSampleRecord*>> readings;
  for (const auto& n : in.nics) readings[n.host + "." + n.nic].push_back(&n);
  for (auto& [key, rs] : readings)
    std::stable_sort(rs.begin(), rs.end(),
                     [](const auto* a, const auto* b) { return a->wall_ns < b->wall_ns; });

  std::vector<DetectionRecord> out;
  for (const auto& fm : metrics.faults) {
    auto it = by_id.find(fm.fault_id);
    if (!fm.applied || it == by_id.end()) continue;
    const FaultRecord& f = *it->second;
    const FaultTraits traits = in.traits ? in.traits(f.kind) : FaultTraits{};
    const Nanos T = fm.injected_ns;
    auto row = [&](std::string_view layer, std::optional<Nanos> at, std::string evidence) {
      DetectionRecord d;
      d.run_id = metrics.run_id;
      d.fault_id = f.fault_id;
      d.layer = std::string(layer);
      d.noticed_wall_ns = at;
      if (at) d.latency_ms = Ms(*at - T);
      d.evidence = std::move(evidence);
      out.push_back(std::move(d));
    };

    // The injector's read-back.
    if (f.effective_wall_ns) {
      std::string how = traits.switch_side ? "the switch read it back in place"
                                           : "the agent read it back in place";
      if (f.requested_wall_ns)
        how += ", " + MsText(*f.effective_wall_ns - *f.requested_wall_ns) + " after the request";
      row(kLayerInjector, f.effective_wall_ns, how);
    } else {
      row(kLayerInjector, std::nullopt, "requested, never read back in place");
    }

    // The kernel's counters of the NICs the target names.
    const auto nics = LedgerNicsOf(f.target, in.nics);
    if (!traits.instantaneous && !nics.empty()) {
      const Nanos until =
          fm.reverted_ns ? std::min(*fm.reverted_ns + kAfterRevert, std::max(fm.interval_end_ns, T))
                         : fm.interval_end_ns;
      std::optional<Seen> first;
      for (const auto& key : nics)
        if (auto s = KernelSaw(readings[key], T, until, key); s && (!first || s->at < first->at))
          first = s;
      if (first)
        row(kLayerKernel, first->at, first->evidence);
      else
        row(kLayerKernel, std::nullopt,
            "no change in the counters of " + nics.front() +
                (nics.size() > 1 ? " and the others of its host" : ""));
    }

    // The CCL's own report.
    if (in.ccl_reports_health) {
      const Nanos from = f.requested_wall_ns && *f.requested_wall_ns < T ? *f.requested_wall_ns : T;
      const EventRecord* first = nullptr;
      for (const auto& e : in.events)
        if (e.kind == kEventFaultDetected && e.wall_ns >= from && e.wall_ns < fm.interval_end_ns &&
            (first == nullptr || e.wall_ns < first->wall_ns))
          first = &e;
      if (first)
        row(kLayerCcl, std::max(first->wall_ns, T),
            "fault_detected by rank " + std::to_string(first->rank));
      else
        row(kLayerCcl, std::nullopt, "no fault_detected from any rank");
    }

    // The job's progress.
    if (fm.stall_ms)
      row(kLayerProgress, T + static_cast<Nanos>(*fm.stall_ms * kLedgerNsPerMs),
          "no iteration completed for " + FormatGap(in.gap_factor) + " baseline periods");
    else if (metrics.baseline_iterations > 0)
      row(kLayerProgress, std::nullopt, "progress never stalled");
    else
      row(kLayerProgress, std::nullopt, "no baseline before the fault to judge a stall by");
  }
  return out;
}

}  // namespace fl::reports
