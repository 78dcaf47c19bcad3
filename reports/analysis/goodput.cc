#include "reports/analysis/goodput.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "common/units.h"
#include "common/yaml_util.h"
#include "reports/analysis/stats.h"

namespace fl::reports::analysis {
namespace {

constexpr double kSecondsPerDay = 86400;
constexpr int64_t kMaxClusterGpus = 10'000'000;
constexpr double kMaxJobDays = 3650;
constexpr double kMaxIntervalS = 30 * kSecondsPerDay;
constexpr int kMaxTrials = 1'000'000;
// Failures drawn over all trials: about 10 ns each, so the simulation stays within seconds.
constexpr double kMaxDraws = 2e8;
constexpr double kPoissonPiece = 16;

Status CheckOptions(const ProjectionOptions& o) {
  FL_RETURN_IF_ERROR(CheckBounds<int64_t>("cluster size", o.cluster_gpus, 1, kMaxClusterGpus));
  FL_RETURN_IF_ERROR(CheckBounds("job days", o.job_days, 1e-3, kMaxJobDays));
  FL_RETURN_IF_ERROR(
      CheckBounds("checkpoint interval (s)", o.checkpoint_interval_s, 0.0, kMaxIntervalS));
  FL_RETURN_IF_ERROR(CheckBounds("restart time (s)", o.restart_s, 0.0, kMaxIntervalS));
  return CheckBounds("trials", o.trials, 1, kMaxTrials);
}

// "850 ms", "2.1 s", "12.5 min", "3.2 h", "30.0 days".
std::string Seconds(double s) {
  char buf[32];
  double a = std::fabs(s);
  if (a < 1)
    std::snprintf(buf, sizeof buf, "%.0f ms", s * 1e3);
  else if (a < 120)
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (a < 3600)
    std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else if (a >= 2 * kSecondsPerDay)
    std::snprintf(buf, sizeof buf, "%.1f days", s / kSecondsPerDay);
  else
    std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}

// The expected cost of one failure of this sample: its loss, plus C/2 when it restarts.
double ExpectedCost(const FaultCost& c, const ProjectionOptions& o) {
  return c.lost_s + (c.restart ? o.checkpoint_interval_s / 2 : 0);
}

struct ClassDraws {
  double mean_failures = 0;
  std::vector<FaultCost> costs;
};

}  // namespace

int64_t DrawPoisson(Rng& rng, double mean) {
  int64_t k = 0;
  while (mean > 0) {
    const double piece = std::min(mean, kPoissonPiece);
    mean -= piece;
    const double limit = std::exp(-piece);
    double p = rng.Unit();
    while (p > limit) {
      ++k;
      p *= rng.Unit();
    }
  }
  return k;
}

std::optional<FaultCost> CostOf(const MeasuredFault& f, const ProjectionOptions& o) {
  if (f.ended_job) return FaultCost{f.hang_s.value_or(0) + o.restart_s, true};
  if (f.restart_cost_ms) return FaultCost{std::max(0.0, *f.restart_cost_ms / 1e3), true};
  if (f.throughput_loss_s) return FaultCost{std::max(0.0, *f.throughput_loss_s), false};
  return std::nullopt;
}

StatusOr<Projection> ProjectGoodput(const FailureRates& rates,
                                    const std::vector<MeasuredFault>& measured,
                                    const ProjectionOptions& options) {
  FL_RETURN_IF_ERROR(CheckOptions(options));
  Projection p;
  p.options = options;
  const ProjectionOptions& o = options;
  const double horizon_s = o.job_days * kSecondsPerDay;

  std::map<std::string, std::vector<FaultCost>> by_kind;
  std::map<std::string, size_t> without_cost;
  for (const auto& f : measured) {
    if (auto c = CostOf(f, o))
      by_kind[f.kind].push_back(*c);
    else
      ++without_cost[f.kind];
  }
  for (const auto& [kind, n] : without_cost)
    p.notes.push_back(std::to_string(n) + " " + kind +
                      " fault(s) had no measured cost (no baseline before them) and are left "
                      "out");
  std::string measured_kinds;
  for (const auto& [kind, costs] : by_kind)
    measured_kinds +=
        (measured_kinds.empty() ? "" : ", ") + kind + " (" + std::to_string(costs.size()) + ")";

  std::vector<ClassDraws> draws;
  std::map<std::string, bool> kind_used;
  double total_draws = 0;
  for (const auto& fc : rates.classes) {
    ClassProjection c;
    c.name = fc.name;
    c.fault_kind = fc.fault_kind;
    c.components = static_cast<int64_t>(
        std::ceil(static_cast<double>(o.cluster_gpus) / fc.gpus_per_component));
    c.failures_per_job = static_cast<double>(c.components) * fc.failures_per_day * o.job_days;
    ClassDraws d;
    d.mean_failures = c.failures_per_job;
    if (fc.cost_s) {
      d.costs = {FaultCost{*fc.cost_s, fc.restart}};
    } else {
      auto it = by_kind.find(fc.fault_kind);
      if (it == by_kind.end())
        return InvalidArgumentError(
            fc.where + ": class '" + fc.name + "' stands for fault kind " + fc.fault_kind +
            ", but no selected run has an applied " + fc.fault_kind +
            " fault with a measured cost (measured: " +
            (measured_kinds.empty() ? std::string("none") : measured_kinds) +
            "); select runs of that kind or give the class a fixed cost");
      d.costs = it->second;
      kind_used[fc.fault_kind] = true;
      c.samples = d.costs.size();
    }
    std::vector<double> each;
    for (const auto& fcost : d.costs) {
      each.push_back(ExpectedCost(fcost, o));
      if (fcost.restart && c.samples > 0) ++c.restarts;
    }
    c.mean_cost_s = Mean(each);
    c.cost_p25_s = Quantile(each, 0.25);
    c.cost_median_s = Median(each);
    c.cost_p75_s = Quantile(each, 0.75);
    c.expected_lost_s = c.failures_per_job * c.mean_cost_s;
    p.expected_failures += c.failures_per_job;
    p.expected_lost_s += c.expected_lost_s;
    total_draws += c.failures_per_job * o.trials;
    if (c.failures_per_job > 1e7)
      return InvalidArgumentError("class '" + fc.name + "': " + FormatFixed(c.failures_per_job, 0) +
                                  " failures per job is more than the projection takes (1e7)");
    p.classes.push_back(std::move(c));
    draws.push_back(std::move(d));
  }
  if (total_draws > kMaxDraws)
    return InvalidArgumentError("the simulation would draw about " + FormatFixed(total_draws, 0) +
                                " failures (" + FormatFixed(p.expected_failures, 1) +
                                " per job x " + std::to_string(o.trials) +
                                " trials): ask for fewer trials");
  for (const auto& [kind, costs] : by_kind)
    if (!kind_used.count(kind))
      p.notes.push_back("measured but in no class of " + rates.source + ": " + kind + " (" +
                        std::to_string(costs.size()) + " fault(s))");
  for (auto& c : p.classes)
    c.share = p.expected_lost_s > 0 ? c.expected_lost_s / p.expected_lost_s : 0;
  p.expected_ettr = 1 - p.expected_lost_s / horizon_s;
  if (p.expected_lost_s > 0.1 * horizon_s)
    p.notes.push_back(
        "the expected lost time is over 10% of the job: failures during a recovery, which the "
        "model does not count, are no longer rare, so the ETTR is optimistic "
        "(docs/goodput.md)");

  // The simulation: one seeded stream, classes in file order, so a seed replays exactly.
  Rng rng(o.seed);
  std::vector<double> ettr;
  ettr.reserve(static_cast<size_t>(o.trials));
  for (int t = 0; t < o.trials; ++t) {
    double lost = 0;
    for (const auto& d : draws) {
      const int64_t n = DrawPoisson(rng, d.mean_failures);
      for (int64_t i = 0; i < n; ++i) {
        const FaultCost& c = d.costs[rng.Below(d.costs.size())];
        lost += c.lost_s + (c.restart ? rng.Unit() * o.checkpoint_interval_s : 0);
      }
    }
    ettr.push_back(std::clamp(1 - lost / horizon_s, 0.0, 1.0));
  }
  p.ettr_mean = Mean(ettr);
  p.ettr_p5 = Quantile(ettr, 0.05);
  p.ettr_median = Median(ettr);
  p.ettr_p95 = Quantile(ettr, 0.95);

  std::stable_sort(p.classes.begin(), p.classes.end(), [](const auto& a, const auto& b) {
    return a.expected_lost_s > b.expected_lost_s;
  });
  return p;
}

std::string RenderProjectionText(const Projection& p) {
  const ProjectionOptions& o = p.options;
  std::string s = "goodput projection: " + std::to_string(o.cluster_gpus) + " GPUs, a " +
                  Seconds(o.job_days * kSecondsPerDay) + " job, checkpoint every " +
                  Seconds(o.checkpoint_interval_s) + ", relaunch " + Seconds(o.restart_s) +
                  " (method: docs/goodput.md)\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-14s %-20s %10s %12s  %-34s %10s %6s\n", "class",
                "cost from", "components", "failures/job", "cost/failure: mean (p25-p75)",
                "lost/job", "share");
  s += line;
  for (const auto& c : p.classes) {
    const std::string from = c.fault_kind.empty() ? std::string("fixed cost")
                                                  : c.fault_kind + " x" + std::to_string(c.samples);
    const std::string cost =
        Seconds(c.mean_cost_s) + " (" + Seconds(c.cost_p25_s) + "-" + Seconds(c.cost_p75_s) + ")";
    std::snprintf(line, sizeof line, "  %-14s %-20s %10lld %12s  %-34s %10s %5s%%\n",
                  c.name.c_str(), from.c_str(), static_cast<long long>(c.components),
                  FormatFixed(c.failures_per_job, 2).c_str(), cost.c_str(),
                  Seconds(c.expected_lost_s).c_str(), FormatFixed(100 * c.share, 1).c_str());
    s += line;
  }
  s += "expected: " + FormatFixed(p.expected_failures, 2) + " failures and " +
       Seconds(p.expected_lost_s) + " lost per job: ETTR " + FormatFixed(p.expected_ettr, 4) + "\n";
  s += "simulated (" + std::to_string(o.trials) + " jobs, seed " + std::to_string(o.seed) +
       "): ETTR median " + FormatFixed(p.ettr_median, 4) + ", 5% " + FormatFixed(p.ettr_p5, 4) +
       ", 95% " + FormatFixed(p.ettr_p95, 4) + "\n";
  if (!p.classes.empty() && p.expected_lost_s > 0) {
    const auto& top = p.classes.front();
    s += "costliest: " + top.name +
         (top.fault_kind.empty() ? std::string() : " (" + top.fault_kind + ")") + ", " +
         FormatFixed(100 * top.share, 1) + "% of the lost time\n";
  }
  for (const auto& n : p.notes) s += "note: " + n + "\n";
  return s;
}

// What ProjectionJson writes of the options and of each class, under the fields' own names;
// a class's fault_kind it adds itself (null for a fixed cost).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ProjectionOptions, cluster_gpus, job_days, checkpoint_interval_s,
                                   restart_s, trials, seed)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ClassProjection, name, components, failures_per_job, samples,
                                   restarts, mean_cost_s, cost_p25_s, cost_median_s, cost_p75_s,
                                   expected_lost_s, share)

std::string ProjectionJson(const Projection& p) {
  using nlohmann::json;
  json classes = json::array();
  for (const auto& c : p.classes) {
    json o = c;
    o["fault_kind"] = c.fault_kind.empty() ? json(nullptr) : json(c.fault_kind);
    classes.push_back(std::move(o));
  }
  json j = p.options;  // the options' fields sit at the top level, beside the results
  j["classes"] = classes;
  j["expected_failures"] = p.expected_failures;
  j["expected_lost_s"] = p.expected_lost_s;
  j["expected_ettr"] = p.expected_ettr;
  j["ettr"] = {
      {"mean", p.ettr_mean}, {"p5", p.ettr_p5}, {"median", p.ettr_median}, {"p95", p.ettr_p95}};
  j["notes"] = p.notes;
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace fl::reports::analysis
