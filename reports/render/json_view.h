// Machine-readable views for `--json` on `faultline runs`, `report`, `run`, `compare`,
// `history` and `suite`: one JSON shape per thing, the same wherever it is printed. Numbers
// keep their stored units (the metric names say them: detection_latency_ms); a metric that
// could not be computed is absent (or null in the fixed per-fault fields), never 0.
// The shapes are in docs/reports.md, "JSON".
//
// Thread-safety: pure functions. The text is JSON, two-space indented, with invalid UTF-8
// from the database replaced.
#pragma once

#include <span>
#include <string>

#include "reports/store/records.h"

namespace fl::reports::render {

// A run's record: {"run_id", "scenario", "status", "seed", "git_revision", "started" (ISO
// 8601), "start_wall_ns", "end_wall_ns", "duration_s", "message", "tags": {..}}.
std::string RunRecordJson(const RunRecord& run);
// [RunRecordJson...]
std::string RunListJson(std::span<const RunRecord> runs);
// Everything but the telemetry: the record's fields plus "outcome", "hosts" (name, address,
// clock offset, the fingerprint as an object), "faults" (id, kind, target, params, times,
// "metrics": {name: value}, and the fixed fields detection_ms, first_progress_ms, recovery_ms,
// degraded_ratio, throughput_loss_s: null when absent), "metrics" (run-level {name: value}),
// "correctness" {verified, mismatches, lost, duplicated}, "verdicts" [{expectation, fault,
// passed, observed, limit, message}], "telemetry" {samples, events}, "not_measured" [what a
// black-box job could not tell].
std::string RunJson(const RunData& run);
// [{expectation, fault (null: run-level), passed, observed, limit, message}], as in RunJson.
std::string VerdictListJson(std::span<const VerdictRecord> verdicts);

}  // namespace fl::reports::render
