// A synthetic run shaped like a real one (ranks in lockstep, faults that stall the job and
// then degrade it until their revert, CCL events, hosts with fingerprints), with its metrics
// and verdicts computed by reports/metrics, and a helper that writes it into a real results
// database through Store. Used by the render tests and by bench/report_render.cc.
//
// Thread-safety: pure functions (WriteRun does file I/O).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "reports/metrics/metrics.h"
#include "reports/store/records.h"
#include "reports/store/store.h"

namespace fl::reports::testing {

struct SyntheticRunSpec {
  std::string run_id = "20261130-040000-synth";
  std::string scenario = "nic_flap_synthetic";
  int ranks = 8;
  int hosts = 4;
  double duration_s = 60;
  double iterations_per_s = 20;  // per rank, fault-free
  uint64_t bytes = 64ull << 20;  // per iteration
  double first_fault_s = 15;
  double fault_every_s = 30;
  double fault_duration_s = 8;
  double stall_s = 0.6;           // no completion right after the injection
  double degraded = 0.5;          // throughput under the fault, relative to the baseline
  double detect_ms = 40;          // fault_detected after the injection
  double slow_detect_ms = 160;    // every other fault is detected this late
  double max_detection_ms = 100;  // so every other fault fails max_detection_ms
  // NIC counters: every host has nic0 and nic1, sampled every nic_sample_s (each host at its
  // own phase), each carrying nic_bytes_per_s (rx + tx) fault-free. A fault on hX/nic0 takes
  // hX's nic0 to ~0 (a few control bytes) and moves its traffic onto nic1 until the revert,
  // as a multi-rail CCL's failover does. 0 NICs: no NIC samples.
  int nics_per_host = 2;
  double nic_sample_s = 0.1;
  double nic_bytes_per_s = 40e6;
  // Put HTML, Markdown and XML markup into every text field (escaping tests).
  bool hostile = false;
};

// Markup that must never become markup in a report.
inline constexpr const char* kHostile =
    "<div id=\"pwned\">x</div></script><script>document.body.innerHTML='pwned'</script>"
    "<img src=x onerror=\"window.pwned=1\"> | **bold** [link](http://x) & \"q\" 'a'";

inline Nanos Sec(double s) { return static_cast<Nanos>(std::llround(s * 1e9)); }

inline RunData MakeSyntheticRun(const SyntheticRunSpec& spec) {
  RunData d;
  const Nanos t0 = Sec(1'790'000'000);  // a fixed wall time: reports are reproducible
  const std::string h = spec.hostile ? std::string(" ") + kHostile : "";
  RunRecord& r = d.run;
  r.id = spec.run_id;
  r.scenario_name = spec.scenario + h;
  r.scenario_text = "name: " + spec.scenario + "\nfaults: [...]\n" + h;
  r.seed = 42;
  r.git_revision = "5d7a2db" + h;
  r.start_wall_ns = t0;
  r.end_wall_ns = t0 + Sec(spec.duration_s);
  r.coordinator_host = "lab-coordinator";
  r.tags = {{"fw", "22.39"}, {"ccl", "ftccl"}};
  if (spec.hostile) r.tags["note"] = kHostile;

  for (int i = 0; i < spec.hosts; ++i) {
    HostRecord host;
    host.run_id = r.id;
    host.name = "h" + std::to_string(i);
    host.address = "198.18.0." + std::to_string(10 + i);
    host.clock_offset_ns = 1000 * (i + 1);
    host.clock_uncertainty_ns = 150;
    std::string fw = i == spec.hosts - 1 ? "22.41" : "22.39";
    host.fingerprint_json =
        "{\"kernel\":\"6.1.0-28-amd64\",\"ccl_build\":\"ftccl 0.1.0\","
        "\"nics\":[{\"name\":\"nic0\",\"driver\":\"mlx5_core\","
        "\"firmware\":\"" +
        fw + "\",\"speed_mbps\":1000}]" +
        (spec.hostile ? std::string(",\"x\":\"</script><b>\"") : "") + "}";
    d.hosts.push_back(host);
  }

  // Fault windows [T, T + duration).
  struct Window {
    Nanos t, v;
  };
  std::vector<Window> windows;
  for (double t = spec.first_fault_s; t + 1 < spec.duration_s; t += spec.fault_every_s) {
    Window w{t0 + Sec(t), t0 + Sec(std::min(t + spec.fault_duration_s, spec.duration_s - 0.5))};
    size_t k = windows.size();
    FaultRecord f;
    f.run_id = r.id;
    f.fault_id = "f" + std::to_string(k);
    f.kind = k % 2 ? "tor_port_down" : "nic_flap";
    f.target = "h" + std::to_string(k % spec.hosts) + "/nic0" + (spec.hostile ? h : "");
    f.params_json = "{\"duration\":\"" + std::to_string(spec.fault_duration_s) + "s\"}";
    f.scheduled_wall_ns = w.t - Sec(0.003);
    f.requested_wall_ns = w.t - Sec(0.002);
    f.effective_wall_ns = w.t;
    f.reverted_wall_ns = w.v;
    f.revert_verified = true;
    d.faults.push_back(f);
    windows.push_back(w);
  }

  // Iterations in lockstep: each rank's sample of iteration i spans [S_i + skew, C_i].
  const double base = 1.0 / spec.iterations_per_s;
  std::vector<std::pair<Nanos, Nanos>> iters;
  Nanos t = t0 + Sec(0.2);
  const Nanos end = t0 + Sec(spec.duration_s);
  while (true) {
    double dur = base;
    for (const auto& w : windows) {
      if (t >= w.t && t < w.v) dur = base / spec.degraded;
    }
    Nanos e = t + Sec(dur);
    for (const auto& w : windows)
      if (t < w.t && e >= w.t) e += Sec(spec.stall_s);
    if (e > end) break;
    iters.emplace_back(t, e);
    t = e;
  }
  d.samples.reserve(iters.size() * spec.ranks);
  for (int rank = 0; rank < spec.ranks; ++rank) {
    for (size_t i = 0; i < iters.size(); ++i) {
      SampleRecord s;
      s.run_id = r.id;
      s.rank = rank;
      s.iteration = static_cast<int64_t>(i);
      s.start_ns = iters[i].first + 1000 * rank;
      s.end_ns = iters[i].second;
      s.bytes = spec.bytes;
      s.verified = i % 10 == 0;
      d.samples.push_back(s);
    }
  }

  for (size_t k = 0; k < windows.size(); ++k) {
    double det = k % 2 ? spec.slow_detect_ms : spec.detect_ms;
    for (int rank = 0; rank < spec.ranks; ++rank) {
      auto ev = [&](Nanos at, const char* kind) {
        EventRecord e;
        e.run_id = r.id;
        e.rank = rank;
        e.wall_ns = at + 20'000 * rank;
        e.kind = kind;
        e.detail_json = "{\"nic\":\"nic0\"}";
        d.events.push_back(e);
      };
      ev(windows[k].t + Sec(det / 1000), "fault_detected");
      ev(windows[k].t + Sec(spec.stall_s * 0.8), "failover_done");
      ev(windows[k].v + Sec(0.05), "path_restored");
    }
  }
  std::sort(d.events.begin(), d.events.end(),
            [](const EventRecord& a, const EventRecord& b) { return a.wall_ns < b.wall_ns; });

  // NIC counters (cumulative): a fault's target "hX/nic0" names the host and the NIC it takes
  // down; its traffic goes to the host's other NICs meanwhile.
  for (int i = 0; i < spec.hosts && spec.nics_per_host > 0; ++i) {
    const std::string host = "h" + std::to_string(i);
    std::vector<uint64_t> rx(spec.nics_per_host, 1'000'000), tx(spec.nics_per_host, 2'000'000);
    auto down = [&](Nanos at, int nic) {
      for (size_t k = 0; k < windows.size(); ++k)
        if (d.faults[k].target.rfind(host + "/nic" + std::to_string(nic), 0) == 0 &&
            at >= windows[k].t && at < windows[k].v)
          return true;
      return false;
    };
    Nanos prev = t0 + Sec(0.013 * i);
    for (Nanos at = prev; at <= end; at += Sec(spec.nic_sample_s)) {
      const double dt = static_cast<double>(at - prev) / 1e9;
      const Nanos mid = prev + (at - prev) / 2;
      int up = 0;
      for (int n = 0; n < spec.nics_per_host; ++n) up += !down(mid, n);
      for (int n = 0; n < spec.nics_per_host; ++n) {
        // The host's traffic spread over its NICs that are up; a NIC that is down moves a
        // few control bytes.
        double rate =
            down(mid, n) ? 200 : spec.nic_bytes_per_s * spec.nics_per_host / std::max(up, 1);
        uint64_t bytes = static_cast<uint64_t>(rate * dt * (1 + 0.02 * ((at / 1000 + n) % 3)));
        rx[n] += bytes / 2;
        tx[n] += bytes - bytes / 2;
        NicSampleRecord s;
        s.run_id = r.id;
        s.host = host;
        s.nic = "nic" + std::to_string(n);
        s.wall_ns = at;
        s.rx_bytes = rx[n];
        s.tx_bytes = tx[n];
        s.rx_packets = rx[n] / 4096;
        s.tx_packets = tx[n] / 4096;
        d.nics.push_back(s);
      }
      prev = at;
    }
  }
  std::sort(d.nics.begin(), d.nics.end(), [](const NicSampleRecord& a, const NicSampleRecord& b) {
    return std::tie(a.host, a.nic, a.wall_ns) < std::tie(b.host, b.nic, b.wall_ns);
  });

  AnalysisInput in;
  in.run_id = r.id;
  in.samples = d.samples;
  in.events = d.events;
  in.faults = d.faults;
  in.num_ranks = spec.ranks;
  in.run_end_ns = end;
  auto metrics = ComputeMetrics(in, AnalysisOptions{});
  if (metrics.ok()) {
    d.metrics = metrics->ToRecords();
    Expectations x;
    x.survives = true;
    x.max_detection_ms = spec.max_detection_ms;
    x.max_recovery_ms = 2000;
    x.min_degraded_ratio = 0.3;
    x.exact_correctness = true;
    d.verdicts = EvaluateExpectations(*metrics, x);
    if (spec.hostile && !d.verdicts.empty()) d.verdicts.back().message += h;
  }
  bool failed = std::any_of(d.verdicts.begin(), d.verdicts.end(),
                            [](const VerdictRecord& v) { return !v.passed; });
  r.status = failed ? RunStatus::kFailed : RunStatus::kPassed;
  r.message = failed ? "expectations failed" + h : "";
  return d;
}

// Writes the run into the results database at db_path (created when missing).
[[nodiscard]] inline Status WriteRun(const std::string& db_path, const RunData& d) {
  FL_ASSIGN_OR_RETURN(auto store, Store::Open(db_path));
  RunRecord created = d.run;
  created.status = RunStatus::kRunning;
  FL_RETURN_IF_ERROR(store->CreateRun(created));
  for (const auto& h : d.hosts) FL_RETURN_IF_ERROR(store->PutHost(h));
  for (const auto& f : d.faults) FL_RETURN_IF_ERROR(store->PutFault(f));
  FL_RETURN_IF_ERROR(store->InsertSamples(d.samples));
  FL_RETURN_IF_ERROR(store->InsertEvents(d.events));
  FL_RETURN_IF_ERROR(store->ReplaceMetrics(d.run.id, d.metrics));
  FL_RETURN_IF_ERROR(store->ReplaceVerdicts(d.run.id, d.verdicts));
  return store->FinishRun(d.run.id, d.run.status, d.run.end_wall_ns.value_or(0), d.run.message);
}

}  // namespace fl::reports::testing
