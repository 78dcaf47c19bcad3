#include "reports/render/run_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fl::reports::render {

const std::vector<MetricColumn> kFaultMetricColumns = {
    {"detection_latency_ms", "detection"},
    {"failover_ms", "failover"},
    {"time_to_first_progress_ms", "first progress"},
    {"recovery_ms", "recovery"},
    {"degraded_ratio", "degraded ratio"},
    {"failback_ms", "failback"},
    {"path_restored_ms", "path restored"},
    {"restart_cost_ms", "restart cost"},
    {"throughput_loss_s", "throughput loss"},
};

std::optional<double> FaultView::Metric(std::string_view name) const {
  auto it = metrics.find(name);
  if (it == metrics.end()) return std::nullopt;
  return it->second->value;
}

std::optional<std::string> FaultView::MetricText(std::string_view name) const {
  auto it = metrics.find(name);
  if (it == metrics.end()) return std::nullopt;
  return FormatMetric(it->second->value, it->second->unit);
}

std::optional<Nanos> FaultView::InjectionTime() const {
  if (fault->effective_wall_ns) return fault->effective_wall_ns;
  return fault->requested_wall_ns;
}

RunView::RunView(const RunData& data) : data_(&data) {
  for (const auto& f : data.faults) faults_.push_back(FaultView{&f, {}});
  for (const auto& m : data.metrics) {
    if (!m.fault_id) {
      run_metrics_[m.name] = &m;
      continue;
    }
    for (auto& fv : faults_)
      if (fv.fault->fault_id == *m.fault_id) fv.metrics[m.name] = &m;
  }
  for (const auto& v : data.verdicts) (v.passed ? passed_ : failed_)++;

  // Time range: samples are sorted by rank, so every sample is looked at.
  Nanos lo = data.run.start_wall_ns, hi = data.run.end_wall_ns.value_or(0);
  Nanos first_sample = 0, last = 0;
  for (const auto& s : data.samples) {
    if (first_sample == 0 || s.start_ns < first_sample) first_sample = s.start_ns;
    last = std::max(last, s.end_ns);
  }
  for (const auto& e : data.events) last = std::max(last, e.wall_ns);
  for (const auto& f : data.faults)
    for (const auto& t : {f.requested_wall_ns, f.effective_wall_ns, f.reverted_wall_ns})
      if (t) last = std::max(last, *t);
  if (lo <= 0) lo = first_sample;
  if (hi <= lo) hi = last;
  if (hi <= lo) hi = lo + kNsPerSec;
  t0_ = lo;
  t1_ = hi;
}

const FaultView* RunView::FindFault(std::string_view fault_id) const {
  for (const auto& f : faults_)
    if (f.fault->fault_id == fault_id) return &f;
  return nullptr;
}

std::optional<double> RunView::RunMetric(std::string_view name) const {
  auto it = run_metrics_.find(name);
  if (it == run_metrics_.end()) return std::nullopt;
  return it->second->value;
}

std::string RunView::FaultLabel(const std::optional<std::string>& fault_id) const {
  if (!fault_id) return "";
  const FaultView* f = FindFault(*fault_id);
  if (!f) return *fault_id;
  std::string s = *fault_id + " " + f->fault->kind;
  if (!f->fault->target.empty()) s += " " + f->fault->target;
  return s;
}

std::vector<MetricColumn> PresentFaultColumns(const RunView& view) {
  std::vector<MetricColumn> out;
  for (const auto& c : kFaultMetricColumns) {
    bool any = false;
    for (const auto& f : view.faults()) any = any || f.metrics.count(c.name) > 0;
    if (any) out.push_back(c);
  }
  return out;
}

std::string FormatNumber(double value, int significant) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", significant, value);
  return buf;
}

std::string FormatSeconds(Nanos ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / kNsPerSec);
  return buf;
}

std::string_view OutcomeName(double value) {
  if (value == 0) return "survived";
  if (value == 1) return "failed";
  if (value == 2) return "hung";
  return "unknown";
}

std::string FormatMetric(double value, std::string_view unit) {
  char buf[64];
  if (unit == "ms") {
    // Under a millisecond in microseconds: a detection of 0.04 ms is "40 us", not "0.0 ms".
    if (value != 0 && std::fabs(value) < 1)
      std::snprintf(buf, sizeof buf, "%.0f us", value * 1000);
    else
      std::snprintf(buf, sizeof buf, std::fabs(value) >= 100 ? "%.0f ms" : "%.1f ms", value);
  } else if (unit == "s" || unit == "GPU-s") {
    std::snprintf(buf, sizeof buf, "%.2f %s", value, std::string(unit).c_str());
  } else if (unit == "ratio") {
    std::snprintf(buf, sizeof buf, "%.3f", value);
  } else if (unit == "bool") {
    return value != 0 ? "yes" : "no";
  } else if (unit == "count") {
    std::snprintf(buf, sizeof buf, "%.0f", value);
  } else if (unit == "B/s") {
    static const char* kNames[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
    double v = value;
    int i = 0;
    while (std::fabs(v) >= 1000 && i < 4) {
      v /= 1000;
      ++i;
    }
    std::snprintf(buf, sizeof buf, "%.3g %s", v, kNames[i]);
  } else if (unit.empty()) {
    return FormatNumber(value);
  } else {
    return FormatNumber(value) + " " + std::string(unit);
  }
  return buf;
}

namespace {

struct ExpectationInfo {
  std::string_view expectation;
  std::string_view metric;  // what is compared, in words
  std::string_view op;      // "<=" or ">="
  std::string_view unit;
};

constexpr ExpectationInfo kExpectations[] = {
    {"max_detection_ms", "detection latency", "<=", "ms"},
    {"max_recovery_ms", "recovery time", "<=", "ms"},
    {"min_degraded_ratio", "degraded ratio", ">=", "ratio"},
    {"max_throughput_loss_s", "throughput loss", "<=", "s"},
};

}  // namespace

VerdictText ExplainVerdict(const VerdictRecord& v) {
  VerdictText t;
  auto not_measured = [&] {
    return "not measured" + (v.message.empty() ? std::string() : ": " + v.message);
  };
  if (v.expectation == "survives") {
    bool want = v.limit.value_or(1) != 0;
    t.expected = want ? "the job survives" : "the job does not survive (fail-stop baseline)";
    if (!v.observed) {
      t.measured = not_measured();
    } else {
      t.measured = *v.observed != 0 ? "survived" : "did not survive";
      if (!v.message.empty()) t.measured += " (" + v.message + ")";
    }
    return t;
  }
  if (v.expectation == "exact_correctness") {
    t.expected = "0 mismatches, at least one verified collective";
    t.measured = v.observed ? FormatNumber(*v.observed, 12) + " mismatches" : not_measured();
    if (v.observed && !v.passed && !v.message.empty()) t.measured += " (" + v.message + ")";
    return t;
  }
  for (const auto& e : kExpectations) {
    if (v.expectation != e.expectation) continue;
    t.expected = std::string(e.metric) + " " + std::string(e.op) + " " +
                 (v.limit ? FormatMetric(*v.limit, e.unit) : std::string("?"));
    t.measured = v.observed ? FormatMetric(*v.observed, e.unit) : not_measured();
    return t;
  }
  // An expectation this build does not know: show the raw numbers.
  t.expected = v.limit ? "limit " + FormatNumber(*v.limit) : "(no limit)";
  t.measured = v.observed ? FormatNumber(*v.observed) : not_measured();
  if (v.observed && !v.message.empty()) t.measured += " (" + v.message + ")";
  return t;
}

}  // namespace fl::reports::render
