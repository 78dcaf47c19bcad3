// A run's resilience metrics for dashboards: the Prometheus text exposition format that
// node_exporter's textfile collector reads (and a Pushgateway accepts), one gauge family per
// metric in base units (seconds, bytes per second, ratios), labelled with the run, scenario,
// fault, fault kind, target, CCL, cluster and the run's tags. `faultline report RUN
// --openmetrics FILE` writes it; `--pushgateway URL` pushes it (harness/cli/report_cmd.cc).
// Names and labels: docs/reports.md, "OpenMetrics".
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "reports/store/records.h"

namespace fl::reports::render {

// The text, ending with a newline; every family has # HELP and # TYPE lines, so that
// `promtool check metrics` passes on it.
std::string RenderOpenMetrics(const RunData& run);

// A label name from a tag key: characters outside [a-zA-Z0-9_] become '_', and "tag_" goes
// in front ("fw" -> "tag_fw", "nic.firmware" -> "tag_nic_firmware").
std::string TagLabelName(const std::string& key);

// A label value with backslash, double quote and line feed escaped (the text format's rules).
std::string EscapeLabelValue(const std::string& v);

}  // namespace fl::reports::render
