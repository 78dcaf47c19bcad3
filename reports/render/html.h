// The HTML report of one run: one self-contained page (no network, no external file; it opens
// from file://) with the run summary, the verdicts (expected vs measured), the faults and
// their metrics, the environment fingerprint of every host, and two charts drawn by uPlot
// (inlined from reports/render/web_assets.h):
//   - per-rank throughput over time (BinThroughput), with every fault's window shaded from
//     its request to its revert (the run's end when never reverted), its effective time
//     marked, and CCL/coordinator events (fault_detected, failover_done, path_restored, ...)
//     as markers (not the per-collective progress events);
//   - detection, failover, first progress, recovery, failback per fault (log scale).
// Also: the job's throughput with its baseline and degraded levels, a timeline bar per fault
// (detected, first progress, recovered, reverted, failed back, with the expectation limits),
// and per-NIC traffic (RunData::nics, BinNicTraffic) with the fault windows shaded. The header
// has the run's duration and the replay command.
// Every text from the database is escaped (escape.h). The page's script writes what it drew
// into <div id="fl-render-status"> (charts, non-blank pixels, fault windows, markers, script
// errors) and the drawn data (NIC series, timeline bars) as JSON into <div id="fl-drawn">, so
// that a headless browser test can read it back from the DOM.
//
// Thread-safety: pure function of its arguments.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "reports/store/records.h"

namespace fl::reports::render {

struct HtmlOptions {
  size_t max_points = 1200;  // time bins per rank in the throughput chart
  // Bins are at least this many median sample durations wide: narrower bins would show each
  // gap between two iterations as a drop to zero.
  double min_bin_samples = 4;
  size_t max_markers = 4000;  // event markers drawn (the tables list every kind and count)
  // The results database the run is in: the header's replay command names it ("" = default).
  std::string db_path;
};

// Event kinds that are progress reports, not incidents: listed in the events table, never
// drawn as markers (a run has one pair per collective per rank).
bool IsProgressEvent(std::string_view kind);

std::string RenderHtml(const RunData& run, const HtmlOptions& options = {});

// The pieces other pages drawn with the same library share (`faultline history --html`): the
// script that records script errors and console.error calls into window.flErrors (first thing
// in <head>), uPlot's licence comment and script, and an inline <script> of js that no
// "</script" inside it can end early.
std::string ErrorCaptureScript();
std::string UplotScripts();
std::string InlineScriptElement(std::string_view js);

}  // namespace fl::reports::render
