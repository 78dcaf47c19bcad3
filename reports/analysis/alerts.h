// Alerts of detectors under test, read from a JSON-lines file, for `faultline score`
// (reports/analysis/detector_score.h, docs/detectors.md). Each line is one of:
//
//   {"detector": "LossHigh", "time": "2026-12-06T18:50:02.1Z", "target": "h1.nic0"}
//       a detector's own line: "time" (RFC 3339) or "time_ns" (Unix epoch ns), an optional
//       "end" / "end_ns" when it cleared, an optional "target"
//   {"version": "4", "status": "firing", "alerts": [{"labels": {"alertname": ...}, ...}]}
//       an Alertmanager webhook notification as it was POSTed (one per line): each alert's
//       labels.alertname, startsAt, endsAt (unset as "0001-01-01T00:00:00Z"), fingerprint, and
//       its target from the first of the labels faultline_target, target, host, node
//
// Blank lines and lines starting with '#' are skipped. Alertmanager sends an alert again on
// every repeat and once more when it resolves: the same detector, identity (fingerprint, or
// the labels) and start are one alert, with the end of whichever copy had one.
//
// Errors are InvalidArgument "FILE:LINE: what is wrong". Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::reports::analysis {

struct Alert {
  std::string detector;         // the rule's alertname, or the line's "detector"
  Nanos start_ns = 0;           // when it began firing
  std::optional<Nanos> end_ns;  // when it cleared, if it said so
  std::string target;           // "" when it names none: it then matches any fault
  std::string where;            // "FILE:LINE" of its first copy
};

struct AlertSet {
  std::vector<Alert> alerts;  // one per distinct alert, ordered by start, then detector
  size_t copies = 0;          // alerts read, repeats included
};

StatusOr<AlertSet> ParseAlerts(std::string_view text, const std::string& name);
// Through ReadInputFile (kind "alerts file", 64 MiB at most).
StatusOr<AlertSet> LoadAlerts(const std::string& path);

// The names of the alerting rules of a Prometheus rules file (groups[].rules[].alert), so a
// rule that never fired is scored too. InvalidArgument "FILE:LINE:COL: ..." for a file that is
// not one.
StatusOr<std::vector<std::string>> ParseAlertRuleNames(std::string_view text,
                                                       const std::string& name);
StatusOr<std::vector<std::string>> LoadAlertRuleNames(const std::string& path);

}  // namespace fl::reports::analysis
