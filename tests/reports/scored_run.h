// AddScoredRun: a finished run with what compare, history and the suite's regression check
// read, written through the Store: the metrics baseline_algbw, ranks (4) and, when given,
// f0/detection_latency_ms; one max_detection_ms verdict (limit 2000 ms, passed when the run
// passed); and, when asked, samples_per_rank iterations of ranks 0 and 1.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reports/store/store.h"

namespace fl::testing {

inline reports::RunRecord AddScoredRun(reports::Store& store, const std::string& id, Nanos start,
                                       reports::RunStatus status,
                                       std::map<std::string, std::string> tags,
                                       std::optional<double> detection, double algbw,
                                       int samples_per_rank = 0) {
  reports::RunRecord r;
  r.id = id;
  r.scenario_name = "blackhole";
  r.scenario_text = "name: blackhole\n";
  r.start_wall_ns = start;
  r.tags = std::move(tags);
  REQUIRE(store.CreateRun(r).ok());
  std::vector<reports::SampleRecord> samples;
  for (int rank = 0; rank < 2 && samples_per_rank > 0; ++rank)
    for (int it = 0; it < samples_per_rank; ++it)
      samples.push_back({id, rank, it, start + it * kNsPerMs, start + it * kNsPerMs + 800,
                         uint64_t{1} << 20, true, false});
  if (!samples.empty()) REQUIRE(store.InsertSamples(samples).ok());
  std::vector<reports::MetricRecord> m = {{id, std::nullopt, "baseline_algbw", algbw, "B/s"},
                                          {id, std::nullopt, "ranks", 4, "count"}};
  if (detection) m.push_back({id, "f0", "detection_latency_ms", *detection, "ms"});
  REQUIRE(store.ReplaceMetrics(id, m).ok());
  std::vector<reports::VerdictRecord> v = {
      reports::VerdictRecord{id, "f0", "max_detection_ms", status == reports::RunStatus::kPassed,
                             detection, 2000.0, "msg"}};
  REQUIRE(store.ReplaceVerdicts(id, v).ok());
  REQUIRE(store.FinishRun(id, status, start + 10, "").ok());
  r.status = status;
  r.end_wall_ns = start + 10;
  return r;
}

}  // namespace fl::testing
