// The metric rows of stored runs, read for comparisons, history and regression checks.
//
// RunReader reads what it needs (runs, tags, metrics, verdicts) without loading telemetry:
// Store::LoadRun would read every sample of every run, which history over hundreds of long
// runs cannot afford.
//
// Thread-safety: a RunReader is used by one thread at a time. Ownership: it owns its
// connections. Blocking: file I/O, at most the store's busy timeout per call.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "reports/store/records.h"
#include "reports/store/store.h"

namespace fl::reports::compare {

// One run's metrics keyed for comparison: "name" for a run-level metric, "FAULT/name" for a
// per-fault one ("f0/detection_latency_ms"); fault ids are the scenario's, so the same key
// means the same fault across runs of one scenario.
struct RunMetricSet {
  RunRecord run;  // scenario_text left empty
  std::string group;
  std::map<std::string, double> values;
  std::map<std::string, std::string> units;
};

std::string MetricKey(const MetricRecord& m);
// The metric name of a key: "f0/detection_latency_ms" -> "detection_latency_ms".
std::string_view BareName(std::string_view key);
// What runs are compared within: the scenario name, plus "[ccl]" when the run carries a
// "ccl" tag (a suite runs one scenario on several CCLs).
std::string GroupOf(const RunRecord& run);

RunMetricSet ToMetricSet(RunRecord run, const std::vector<MetricRecord>& metrics);

class RunReader {
 public:
  // NotFound when the database does not exist (it is never created here).
  [[nodiscard]] static StatusOr<std::unique_ptr<RunReader>> Open(const std::string& db_path);

  Store& store() { return *store_; }
  [[nodiscard]] StatusOr<std::vector<MetricRecord>> Metrics(const std::string& run_id);
  [[nodiscard]] StatusOr<std::vector<VerdictRecord>> Verdicts(const std::string& run_id);
  [[nodiscard]] StatusOr<RunMetricSet> Load(const RunRecord& run);

  // A selector names runs: a run id, "latest", "date:2026-12-01[..2026-12-07]" (every finished
  // run started on those UTC days), or "tag:k=v[,k=v...]" (every finished run —
  // passed or failed — carrying those tags; aborted, errored and running ones have no
  // trustworthy metrics). scenario, when set, narrows a tag selection. Newest first.
  // NotFound when nothing matches.
  [[nodiscard]] StatusOr<std::vector<RunMetricSet>> Select(
      const std::string& selector, const std::optional<std::string>& scenario = std::nullopt);
  // Every run any of the selectors names, each once, in the order first named; an error names
  // its selector ("tag:fw=B: ...").
  [[nodiscard]] StatusOr<std::vector<RunMetricSet>> SelectAll(
      const std::vector<std::string>& selectors,
      const std::optional<std::string>& scenario = std::nullopt);

 private:
  explicit RunReader(std::unique_ptr<Store> store) : store_(std::move(store)) {}
  std::unique_ptr<Store> store_;
};

}  // namespace fl::reports::compare
