// What the HTML, JUnit, Markdown and text views share: lookups over one run's records (the
// metrics of each fault, the fault a verdict belongs to, the run's time range), the
// "expected vs measured" wording of a verdict, and number formatting with units.
//
// Thread-safety: a RunView reads the RunData it was made from and holds pointers into it; the
// RunData must outlive it and not change meanwhile.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "reports/store/records.h"

namespace fl::reports::render {

// The per-fault metrics shown in tables and charts, in display order (docs/metrics.md).
struct MetricColumn {
  std::string_view name;   // metric name in the store
  std::string_view title;  // column heading
};
extern const std::vector<MetricColumn> kFaultMetricColumns;

struct FaultView {
  const FaultRecord* fault = nullptr;
  std::map<std::string, const MetricRecord*, std::less<>> metrics;  // by name
  std::optional<double> Metric(std::string_view name) const;
  // The metric with its unit (FormatMetric), unescaped; nullopt when the fault has none.
  std::optional<std::string> MetricText(std::string_view name) const;
  // When the fault took effect: effective, else requested time; nullopt when never applied.
  std::optional<Nanos> InjectionTime() const;
};

class RunView {
 public:
  explicit RunView(const RunData& data);

  const RunData& data() const { return *data_; }
  // The time range the charts cover: from the run's start (or its first sample) to its end
  // (or the latest sample, event or fault time when the run has no end).
  Nanos t0() const { return t0_; }
  Nanos t1() const { return t1_; }
  const std::vector<FaultView>& faults() const { return faults_; }
  const FaultView* FindFault(std::string_view fault_id) const;
  std::optional<double> RunMetric(std::string_view name) const;
  int verdicts_passed() const { return passed_; }
  int verdicts_failed() const { return failed_; }

  // "f0 nic_flap h1/nic0" (the id alone when the fault is not in the run's faults); "" for
  // run-level rows (no fault id).
  std::string FaultLabel(const std::optional<std::string>& fault_id) const;

 private:
  const RunData* data_;
  Nanos t0_ = 0;
  Nanos t1_ = 0;
  std::vector<FaultView> faults_;
  std::map<std::string, const MetricRecord*, std::less<>> run_metrics_;
  int passed_ = 0;
  int failed_ = 0;
};

// A verdict in words: expected "detection latency <= 300 ms", measured "12.4 ms" (or
// "not measured: <message>" when the metric could not be computed).
struct VerdictText {
  std::string expected;
  std::string measured;
};
VerdictText ExplainVerdict(const VerdictRecord& verdict);

// The columns of kFaultMetricColumns that at least one fault of the run has a value for.
std::vector<MetricColumn> PresentFaultColumns(const RunView& view);

// A value with its unit as the store names it (ms, s, GPU-s, B/s, ratio, bool, count, enum):
// "12.4 ms", "1.52 GB/s", "0.503", "yes".
std::string FormatMetric(double value, std::string_view unit);
// "survived" / "failed" / "hung" for the `outcome` metric's value.
std::string_view OutcomeName(double value);
// Seconds with millisecond precision: "52.317 s".
std::string FormatSeconds(Nanos ns);
// printf("%.*g") without trailing noise, for numbers in text.
std::string FormatNumber(double value, int significant = 4);

}  // namespace fl::reports::render
