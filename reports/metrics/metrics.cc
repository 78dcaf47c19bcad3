#include "reports/metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "common/enum_names.h"

namespace fl::reports {

namespace {

constexpr double kNsPerMsD = 1e6;
constexpr double kNsPerSecD = 1e9;

// "Iterations" in docs/metrics.md: one complete iteration as seen by all ranks.
struct Iteration {
  int64_t index = 0;
  Nanos start = 0;      // S: earliest start over ranks
  Nanos end = 0;        // C: latest end over ranks (completed on every rank)
  Nanos first_end = 0;  // earliest end over ranks
  double bytes = 0;
  std::optional<double> algbw;     // bytes / (C - S)
  Nanos prev_end = 0;              // C of the previous complete iteration (S for the first)
  std::optional<double> progress;  // bytes / (C - prev_end)
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

double ToMs(Nanos ns) { return static_cast<double>(ns) / kNsPerMsD; }

// "49.0s": seconds with one decimal whatever the magnitude (idle times can be hours).
std::string Seconds(Nanos ns) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.1fs", static_cast<double>(ns) / kNsPerSecD);
  return buf;
}

// First event of `kind` with from <= wall_ns < to.
std::optional<Nanos> FirstEvent(const std::vector<EventRecord>& events, std::string_view kind,
                                Nanos from, Nanos to) {
  std::optional<Nanos> first;
  for (const auto& e : events) {
    if (e.kind == kind && e.wall_ns >= from && e.wall_ns < to && (!first || e.wall_ns < *first)) {
      first = e.wall_ns;
    }
  }
  return first;
}

// The first abnormal gap after T: from the last completion (of a whole iteration) before T,
// the first time `limit` passed with no completion, before E; at least T.
std::optional<Nanos> FirstStall(const std::vector<Iteration>& iters, Nanos T, Nanos E,
                                Nanos limit) {
  Nanos prev = T;
  for (const auto& it : iters)
    if (it.end <= T) prev = it.end;
  bool resumed = false;
  for (const auto& it : iters) {
    if (it.end <= T) continue;
    resumed = true;
    if (it.end - prev > limit && prev + limit <= E) return std::max(prev + limit, T);
    prev = it.end;
    if (it.end > E) break;
  }
  if (!resumed && prev + limit <= E) return std::max(prev + limit, T);  // it never resumed
  return std::nullopt;
}

// The first window of W iterations with consecutive indices, all satisfying ok(); returns the
// position of its first iteration in `iters`.
template <typename Ok>
std::optional<size_t> FirstWindow(const std::vector<const Iteration*>& iters, int w, Ok ok) {
  size_t W = static_cast<size_t>(w);
  for (size_t j = 0; j + W <= iters.size(); ++j) {
    if (iters[j + W - 1]->index - iters[j]->index != w - 1) continue;
    bool all = true;
    for (size_t k = j; k < j + W && all; ++k) all = ok(*iters[k]);
    if (all) return j;
  }
  return std::nullopt;
}

// The position of the first window of w consecutive iterations whose first iteration and
// median algbw are within tol x D of D: the rate has settled from that iteration on, even
// when single later iterations jitter by more than tol (a black box's iterations end when
// their output line is read).
std::optional<size_t> FirstSettledWindow(const std::vector<const Iteration*>& iters, int w,
                                         double D, double tol) {
  size_t W = static_cast<size_t>(w);
  std::vector<double> bw;
  for (size_t j = 0; j + W <= iters.size(); ++j) {
    if (iters[j + W - 1]->index - iters[j]->index != w - 1) continue;
    if (std::fabs(*iters[j]->algbw - D) > tol * D) continue;
    bw.clear();
    for (size_t k = j; k < j + W; ++k) bw.push_back(*iters[k]->algbw);
    if (std::fabs(Median(bw) - D) <= tol * D) return j;
  }
  return std::nullopt;
}

std::string FormatRanks(const std::vector<StuckRank>& stuck) {
  std::ostringstream out;
  for (size_t i = 0; i < stuck.size(); ++i) {
    const StuckRank& s = stuck[i];
    if (i > 0) out << "; ";
    out << "rank " << s.rank << " idle for " << Seconds(s.idle_ns);
    if (s.last_iteration) {
      out << " after iteration " << *s.last_iteration;
    } else {
      out << " without completing any iteration";
    }
  }
  return out.str();
}

}  // namespace

constexpr NamedValue<OutcomeKind> kOutcomeNames[] = {{OutcomeKind::kSurvived, "survived"},
                                                     {OutcomeKind::kFailed, "failed"},
                                                     {OutcomeKind::kHung, "hung"}};

std::string_view OutcomeName(OutcomeKind kind) { return NameIn(kOutcomeNames, kind, "?"); }

bool NestedIn(const std::map<std::string, std::string>& anchor_of, const std::string& m,
              const std::string& k) {
  std::string at = m;
  for (size_t hops = 0; hops <= anchor_of.size(); ++hops) {
    auto it = anchor_of.find(at);
    if (it == anchor_of.end()) return false;
    if (it->second == k) return true;
    at = it->second;
  }
  return false;
}

StatusOr<RunMetrics> ComputeMetrics(const AnalysisInput& in, const AnalysisOptions& opt) {
  if (opt.window < 1) return InvalidArgumentError("analysis window must be at least 1 iteration");
  if (!(opt.tolerance >= 0 && opt.tolerance < 1)) {
    return InvalidArgumentError("analysis tolerance must be in [0, 1)");
  }
  if (opt.hang_timeout <= 0) return InvalidArgumentError("hang timeout must be positive");
  if (opt.gpus_per_rank < 1) return InvalidArgumentError("gpus_per_rank must be at least 1");
  for (const auto& s : in.samples) {
    if (s.end_ns < s.start_ns) {
      return InvalidArgumentError("sample of rank " + std::to_string(s.rank) + " iteration " +
                                  std::to_string(s.iteration) + " ends before it starts");
    }
  }

  RunMetrics m;
  m.run_id = in.run_id;

  // ---- Ranks, latest sample per (rank, iteration), duplicates ----
  std::set<int32_t> ranks;
  if (in.num_ranks > 0) {
    for (int32_t r = 0; r < in.num_ranks; ++r) ranks.insert(r);
  }
  std::map<std::pair<int32_t, int64_t>, const SampleRecord*> latest;
  for (const auto& s : in.samples) {
    ranks.insert(s.rank);
    auto [it, inserted] = latest.try_emplace({s.rank, s.iteration}, &s);
    if (!inserted) {
      ++m.correctness.duplicated_iterations;
      if (s.end_ns >= it->second->end_ns) it->second = &s;
    }
    if (s.verified) ++m.correctness.verified_collectives;
    if (s.mismatch) ++m.correctness.mismatches;
  }
  m.num_ranks = in.num_ranks > 0 ? in.num_ranks : static_cast<int>(ranks.size());

  // ---- Run end R ----
  Nanos run_end = 0;
  for (const auto& s : in.samples) run_end = std::max(run_end, s.end_ns);
  for (const auto& e : in.events) run_end = std::max(run_end, e.wall_ns);
  if (in.run_end_ns) run_end = *in.run_end_ns;
  m.run_end_ns = run_end;

  // ---- Complete iterations ----
  std::map<int64_t, std::vector<const SampleRecord*>> by_index;
  for (const auto& [key, s] : latest) by_index[key.second].push_back(s);
  std::vector<Iteration> iters;
  for (const auto& [index, samples] : by_index) {
    if (static_cast<int>(samples.size()) != m.num_ranks) continue;
    Iteration it;
    it.index = index;
    it.start = samples[0]->start_ns;
    it.end = samples[0]->end_ns;
    it.first_end = samples[0]->end_ns;
    uint64_t bytes = 0;
    for (const auto* s : samples) {
      it.start = std::min(it.start, s->start_ns);
      it.end = std::max(it.end, s->end_ns);
      it.first_end = std::min(it.first_end, s->end_ns);
      bytes = std::max(bytes, s->bytes);
    }
    it.bytes = static_cast<double>(bytes);
    if (it.end > it.start)
      it.algbw = it.bytes * kNsPerSecD / static_cast<double>(it.end - it.start);
    it.prev_end = iters.empty() ? it.start : iters.back().end;
    if (it.end > it.prev_end) {
      it.progress = it.bytes * kNsPerSecD / static_cast<double>(it.end - it.prev_end);
    }
    iters.push_back(it);
  }
  m.correctness.complete_iterations = static_cast<int64_t>(iters.size());

  // ---- Faults in injection order ----
  std::vector<const FaultRecord*> applied;
  std::vector<const FaultRecord*> not_applied;
  for (const auto& f : in.faults) {
    (f.effective_wall_ns || f.requested_wall_ns ? applied : not_applied).push_back(&f);
  }
  auto inject_time = [](const FaultRecord* f) {
    return f->effective_wall_ns ? *f->effective_wall_ns : *f->requested_wall_ns;
  };
  std::stable_sort(applied.begin(), applied.end(),
                   [&](const auto* a, const auto* b) { return inject_time(a) < inject_time(b); });
  Nanos first_fault = applied.empty() ? std::numeric_limits<Nanos>::max() : inject_time(applied[0]);
  // Overlapping faults: m is nested in k when its anchor chain (after_event / during) leads to
  // k. A nested fault does not end its anchor's interval (docs/metrics.md).
  std::map<std::string, std::string> anchor_of;
  for (const auto& f : in.faults)
    if (!f.anchor.empty()) anchor_of[f.fault_id] = f.anchor;

  // ---- Baseline ----
  std::vector<double> base_bw;
  std::vector<double> base_progress;
  for (size_t i = 0; i < iters.size(); ++i) {
    const Iteration& it = iters[i];
    if (it.index < opt.warmup_iterations || it.end > first_fault) continue;
    if (it.algbw) base_bw.push_back(*it.algbw);
    if (i > 0 && it.progress) base_progress.push_back(*it.progress);
  }
  m.baseline_iterations = static_cast<int64_t>(base_bw.size());
  // The baseline's median iteration period (end to end), for a black box's gap detection.
  std::optional<double> base_period;
  {
    std::vector<double> periods;
    for (size_t i = 1; i < iters.size(); ++i) {
      const Iteration& it = iters[i];
      if (it.index < opt.warmup_iterations || it.end > first_fault) continue;
      if (it.end > it.prev_end) periods.push_back(static_cast<double>(it.end - it.prev_end));
    }
    if (!periods.empty()) base_period = Median(periods);
  }
  if (!base_bw.empty()) m.baseline_algbw = Median(base_bw);
  if (!base_progress.empty()) m.baseline_progress = Median(base_progress);

  // ---- Per fault ----
  for (size_t k = 0; k < applied.size(); ++k) {
    const FaultRecord& f = *applied[k];
    FaultMetrics fm;
    fm.fault_id = f.fault_id;
    fm.applied = true;
    const Nanos T = inject_time(&f);
    // E: the next applied fault that is not nested in this one, else the run end.
    Nanos next = run_end;
    for (size_t j = k + 1; j < applied.size(); ++j) {
      if (NestedIn(anchor_of, applied[j]->fault_id, f.fault_id)) continue;
      next = inject_time(applied[j]);
      break;
    }
    const Nanos E = std::max(T, next);
    fm.injected_ns = T;
    fm.interval_end_ns = E;
    if (f.reverted_wall_ns && *f.reverted_wall_ns >= T) fm.reverted_ns = f.reverted_wall_ns;
    if (f.effective_wall_ns && f.scheduled_wall_ns) {
      fm.injection_error_ms = ToMs(*f.effective_wall_ns - *f.scheduled_wall_ns);
    }

    // The kernel applies a change before it acknowledges it, and a CCL that listens to the
    // kernel (ftccl's rtnetlink monitor) can hear of it before the injector's clock reads T:
    // an event after the request counts, its latency at least 0 (docs/metrics.md).
    const Nanos heard_from =
        f.requested_wall_ns && *f.requested_wall_ns < T ? *f.requested_wall_ns : T;
    // The job's progress stalled: the first gap between completions of more than
    // gap_factor baseline periods (what a progress watchdog sees).
    const std::optional<Nanos> stall =
        base_period ? FirstStall(iters, T, E, static_cast<Nanos>(opt.gap_factor * *base_period))
                    : std::nullopt;
    if (stall) fm.stall_ms = ToMs(*stall - T);
    if (auto d = FirstEvent(in.events, kEventFaultDetected, heard_from, E)) {
      fm.detection_latency_ms = ToMs(std::max<Nanos>(0, *d - T));
      fm.detection_source = "event";
    } else if (opt.black_box && stall) {
      fm.detection_latency_ms = ToMs(*stall - T);
      fm.detection_source = "gap";
    }
    if (auto d = FirstEvent(in.events, kEventFailoverDone, heard_from, E))
      fm.failover_ms = ToMs(std::max<Nanos>(0, *d - T));
    if (fm.reverted_ns) {
      if (auto d = FirstEvent(in.events, kEventPathRestored, *fm.reverted_ns, E)) {
        fm.path_restored_ms = ToMs(*d - *fm.reverted_ns);
      }
    }

    // Restart cost: with a relaunch in the interval, the time until an iteration beyond the
    // highest one any rank had completed by T completed on every rank.
    if (FirstEvent(in.events, kEventJobRestarted, T, E)) {
      int64_t high = -1;
      for (const auto& s : in.samples) {
        if (s.end_ns <= T) high = std::max(high, s.iteration);
      }
      for (const auto& it : iters) {
        if (it.index > high && it.end > T && it.end <= E) {
          fm.restart_cost_ms = ToMs(it.end - T);
          break;
        }
      }
    }

    // Time to first progress: first iteration completed by every rank after T.
    for (const auto& it : iters) {
      if (it.first_end > T && it.end <= E) {
        fm.time_to_first_progress_ms = ToMs(it.end - T);
        break;
      }
    }

    // Degraded steady state over F: iterations started at or after T, ended by U.
    const Nanos U = fm.reverted_ns ? std::min(*fm.reverted_ns, E) : E;
    std::vector<const Iteration*> under;
    for (const auto& it : iters) {
      if (it.start >= T && it.end <= U && it.algbw) under.push_back(&it);
    }
    fm.fault_iterations = static_cast<int64_t>(under.size());
    if (fm.fault_iterations >= opt.window) {
      size_t half = (under.size() + 1) / 2;
      std::vector<double> tail;
      for (size_t j = under.size() - half; j < under.size(); ++j) tail.push_back(*under[j]->algbw);
      const double D = Median(tail);
      fm.degraded_algbw = D;
      if (m.baseline_algbw) fm.degraded_ratio = D / *m.baseline_algbw;
      auto j = FirstSettledWindow(under, opt.window, D, opt.tolerance);
      if (j) fm.recovery_ms = ToMs(under[*j]->start - T);
    }

    // Failback after the revert: W iterations back within tolerance of the baseline.
    Nanos loss_end = E;
    if (fm.reverted_ns && m.baseline_algbw) {
      const double B = *m.baseline_algbw;
      std::vector<const Iteration*> after;
      for (const auto& it : iters) {
        if (it.start >= *fm.reverted_ns && it.end <= E && it.algbw) after.push_back(&it);
      }
      auto j = FirstWindow(after, opt.window, [&](const Iteration& it) {
        return *it.algbw >= (1.0 - opt.tolerance) * B;
      });
      if (j) {
        fm.failback_ms = ToMs(after[*j]->start - *fm.reverted_ns);
        loss_end = after[*j]->start;
      }
    }

    // Throughput loss over [T, loss_end], against the baseline progress rate.
    if (m.baseline_progress) {
      double work = 0;
      for (const auto& it : iters) {
        Nanos lo = std::max(it.prev_end, T);
        Nanos hi = std::min(it.end, loss_end);
        if (it.end > it.prev_end) {
          if (hi > lo) {
            work +=
                it.bytes * static_cast<double>(hi - lo) / static_cast<double>(it.end - it.prev_end);
          }
        } else if (it.end > T && it.end <= loss_end) {
          work += it.bytes;
        }
      }
      double loss = static_cast<double>(loss_end - T) / kNsPerSecD - work / *m.baseline_progress;
      fm.throughput_loss_s = loss;
      fm.throughput_loss_gpu_s = loss * m.num_ranks * opt.gpus_per_rank;
    }
    m.faults.push_back(std::move(fm));
  }
  for (const auto* f : not_applied) {
    FaultMetrics fm;
    fm.fault_id = f->fault_id;
    m.faults.push_back(std::move(fm));
  }

  // ---- Correctness: lost iterations ----
  int64_t max_index = -1;
  for (const auto& [key, s] : latest) max_index = std::max(max_index, key.second);
  int64_t expected = in.expected_iterations ? *in.expected_iterations : max_index + 1;
  if (opt.black_box && !in.expected_iterations && !latest.empty()) {
    // A black box stopped at a duration stops each rank where it stands: iterations beyond
    // the one every rank reached are not lost.
    std::map<int32_t, int64_t> high;
    for (const auto& [key, smp] : latest) high[key.first] = std::max(high[key.first], key.second);
    for (int32_t r : ranks) expected = std::min(expected, high.count(r) ? high[r] + 1 : 0);
  }
  std::map<int32_t, int64_t> present;                      // iterations in [0, expected) per rank
  std::map<int32_t, std::pair<Nanos, int64_t>> last_done;  // latest end, its iteration
  for (const auto& [key, s] : latest) {
    if (key.second >= 0 && key.second < expected) ++present[key.first];
    auto [ld, fresh] = last_done.try_emplace(key.first, s->end_ns, key.second);
    if (!fresh && (s->end_ns > ld->second.first ||
                   (s->end_ns == ld->second.first && key.second > ld->second.second))) {
      ld->second = {s->end_ns, key.second};
    }
  }
  for (int32_t r : ranks) m.correctness.lost_iterations += expected - present[r];

  // ---- Outcome ----
  if (opt.black_box) {
    if (m.correctness.verified_collectives == 0) {
      m.correctness_measured = false;
      m.absent_notes.push_back(
          "correctness: the job verified nothing (no ok= in its progress lines, #wrong N/A), so "
          "mismatches are not known");
    }
    for (const auto& fm : m.faults)
      if (fm.applied && !fm.detection_latency_ms)
        m.absent_notes.push_back("detection of " + fm.fault_id +
                                 ": neither an error line from the job nor an abnormal gap in "
                                 "its progress");
    if (in.samples.empty())
      m.absent_notes.push_back(
          "progress: the job reported none (progress.format exit): only its "
          "exit status is known");
  }
  m.outcome.hang_timeout_ns = opt.hang_timeout;
  Nanos first_start = std::numeric_limits<Nanos>::max();
  for (const auto& s : in.samples) first_start = std::min(first_start, s.start_ns);
  std::vector<std::string> unfinished;
  for (int32_t r : ranks) {
    auto ld = last_done.find(r);
    bool finished = in.expected_iterations && present[r] == expected;
    if (finished) continue;
    StuckRank sr;
    sr.rank = r;
    if (ld != last_done.end()) {
      sr.last_iteration = ld->second.second;
      sr.idle_ns = run_end - ld->second.first;
    } else {
      sr.idle_ns = in.samples.empty() ? 0 : run_end - first_start;
    }
    if (sr.idle_ns > opt.hang_timeout) {
      m.outcome.stuck_ranks.push_back(sr);
    } else if (in.expected_iterations) {
      unfinished.push_back("rank " + std::to_string(r) + " completed " +
                           std::to_string(present[r]) + " of " + std::to_string(expected) +
                           " iterations");
    }
  }
  if (in.job_failed) {
    m.outcome.kind = OutcomeKind::kFailed;
    m.outcome.reason = in.job_failure.empty() ? "the job failed" : in.job_failure;
    if (!m.outcome.stuck_ranks.empty()) {
      m.outcome.reason += "; stuck: " + FormatRanks(m.outcome.stuck_ranks);
    }
  } else if (in.samples.empty() && m.num_ranks > 0) {
    m.outcome.kind = OutcomeKind::kFailed;
    m.outcome.reason = "no samples from any rank";
  } else if (!m.outcome.stuck_ranks.empty()) {
    m.outcome.kind = OutcomeKind::kHung;
    m.outcome.reason = "no progress for more than " + Seconds(opt.hang_timeout) + ": " +
                       FormatRanks(m.outcome.stuck_ranks);
  } else if (!unfinished.empty()) {
    m.outcome.kind = OutcomeKind::kFailed;
    m.outcome.reason = "the job stopped early: " + unfinished[0];
    for (size_t i = 1; i < unfinished.size(); ++i) m.outcome.reason += "; " + unfinished[i];
  } else {
    m.outcome.kind = OutcomeKind::kSurvived;
  }
  return m;
}

std::vector<MetricRecord> RunMetrics::ToRecords() const {
  std::vector<MetricRecord> out;
  auto add = [&](const std::optional<std::string>& fault, std::string name, double value,
                 std::string unit) {
    out.push_back({run_id, fault, std::move(name), value, std::move(unit)});
  };
  auto add_opt = [&](const std::optional<std::string>& fault, std::string name,
                     const std::optional<double>& value, std::string unit) {
    if (value) add(fault, std::move(name), *value, std::move(unit));
  };
  const std::optional<std::string> run_level;
  add(run_level, "ranks", num_ranks, "count");
  add(run_level, "baseline_iterations", static_cast<double>(baseline_iterations), "count");
  add_opt(run_level, "baseline_algbw", baseline_algbw, "B/s");
  add_opt(run_level, "baseline_progress", baseline_progress, "B/s");
  add(run_level, "verified_collectives", static_cast<double>(correctness.verified_collectives),
      "count");
  if (correctness_measured)
    add(run_level, "mismatches", static_cast<double>(correctness.mismatches), "count");
  add(run_level, "lost_iterations", static_cast<double>(correctness.lost_iterations), "count");
  add(run_level, "duplicated_iterations", static_cast<double>(correctness.duplicated_iterations),
      "count");
  add(run_level, "complete_iterations", static_cast<double>(correctness.complete_iterations),
      "count");
  add(run_level, "outcome", static_cast<double>(outcome.kind), "enum");
  add(run_level, "stuck_ranks", static_cast<double>(outcome.stuck_ranks.size()), "count");
  add(run_level, "hang_timeout_ms", ToMs(outcome.hang_timeout_ns), "ms");
  for (const auto& f : faults) {
    const std::optional<std::string> id = f.fault_id;
    add(id, "fault_applied", f.applied ? 1 : 0, "bool");
    if (!f.applied) continue;
    add_opt(id, "injection_error_ms", f.injection_error_ms, "ms");
    add(id, "detected", f.detection_latency_ms ? 1 : 0, "bool");
    add_opt(id, "detection_latency_ms", f.detection_latency_ms, "ms");
    add_opt(id, "failover_ms", f.failover_ms, "ms");
    add_opt(id, "time_to_first_progress_ms", f.time_to_first_progress_ms, "ms");
    add(id, "fault_iterations", static_cast<double>(f.fault_iterations), "count");
    add_opt(id, "degraded_algbw", f.degraded_algbw, "B/s");
    add_opt(id, "degraded_ratio", f.degraded_ratio, "ratio");
    add(id, "recovered", f.recovery_ms ? 1 : 0, "bool");
    add_opt(id, "recovery_ms", f.recovery_ms, "ms");
    if (f.reverted_ns) add(id, "failed_back", f.failback_ms ? 1 : 0, "bool");
    add_opt(id, "failback_ms", f.failback_ms, "ms");
    add_opt(id, "path_restored_ms", f.path_restored_ms, "ms");
    add_opt(id, "restart_cost_ms", f.restart_cost_ms, "ms");
    add_opt(id, "throughput_loss_s", f.throughput_loss_s, "s");
    add_opt(id, "throughput_loss_gpu_s", f.throughput_loss_gpu_s, "GPU-s");
  }
  return out;
}

}  // namespace fl::reports
