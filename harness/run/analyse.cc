#include "harness/run/analyse.h"

#include <nlohmann/json.hpp>

#include <cstdio>

#include "ccl_under_test/tools/ccl_plugins.h"
#include "common/clock.h"
#include "common/log.h"
#include "harness/run/job.h"
#include "injectors/injector.h"
#include "reports/metrics/metrics.h"
#include "reports/render/json_view.h"
#include "reports/render/markdown.h"

namespace fl::harness::run {

reports::FaultTraits LedgerTraits(std::string_view kind) {
  reports::FaultTraits t;
  if (const auto* info = injectors::BuiltinInjectors().Describe(kind)) {
    t.switch_side = info->side == injectors::FaultSide::kSwitch;
    t.instantaneous = info->instantaneous;
  }
  return t;
}

int Analyse(RunContext& run, Progress& progress, const FaultBook& book, const Console& console) {
  // Only a run whose job ran to its end is analysed: its status comes from the verdicts.
  const std::string end_reason;
  const reports::RunStatus infra_status = reports::RunStatus::kRunning;
  const Prepared& p = run.prepared;
  const std::string& run_id = run.ids.run_id;
  Results& results = run.results;
  if (uint64_t bad =
          [&] {
            std::lock_guard lock(progress.mu);
            return progress.bad_telemetry;
          }();
      bad > 0) {
    FL_LOG(kWarn, "coord") << bad << " bad telemetry record(s) from agents were dropped";
    run.Event("telemetry_dropped", {{"source", "coordinator"}, {"count", bad}});
  }
  if (results.writer) {
    Status flushed = results.writer->Flush(Deadline::After(30 * kNsPerSec));
    if (const auto ws = results.writer->GetStats(); ws.spool_pending > 0) {
      // The store does not take writes: its rows wait in the spool, and a run analysed from
      // part of them would be judged on what is missing. It ends there, unanalysed.
      std::fprintf(stderr,
                   "faultline run: the results store does not take writes (%s); the run is "
                   "not analysed\n",
                   flushed.ToUserString().c_str());
      results.Finish(run_id, reports::RunStatus::kError,
                     "not analysed: the results store did not take writes at the end of the "
                     "run; its rows were spooled to " +
                         ws.spool_path);
      return kExitInfra;
    }
    results.Keep(flushed, "telemetry rows");
  }
  const uint64_t dropped = results.dropped_telemetry.load() +
                           (results.writer ? results.writer->GetStats().dropped_rows : 0);
  auto data = results.store->LoadRun(run_id);
  if (!data.ok()) {
    std::fprintf(stderr, "faultline run: cannot read the run back: %s\n",
                 data.status().ToUserString().c_str());
    // Its rows may wait in the spool: the run then ends there too, so that a replay leaves
    // it with a final status.
    results.Finish(run_id, reports::RunStatus::kError,
                   "not analysed: the results store was unreachable at the end of the run (" +
                       data.status().message() + ")");
    return kExitInfra;
  }
  reports::AnalysisInput in;
  in.run_id = run_id;
  in.samples = data->samples;
  in.events = data->events;
  in.faults = data->faults;
  in.num_ranks = ProgressRanks(p);
  if (p.scenario.job.iterations)
    in.expected_iterations = static_cast<int64_t>(p.scenario.job.iterations);
  // Exit codes are cleared at each relaunch: a failure here is one of the last attempt.
  if (auto fail = progress.FirstFailure()) {
    in.job_failed = true;
    in.job_failure =
        "rank " + std::to_string(fail->first) + " exited with " + std::to_string(fail->second);
  }
  reports::AnalysisOptions ao;
  ao.warmup_iterations = static_cast<int64_t>(p.scenario.job.warmup_iterations);
  ao.hang_timeout = p.scenario.job.hang_timeout_ns;
  ao.black_box = !p.scenario.job.command.empty();
  auto metrics = reports::ComputeMetrics(in, ao);
  if (!metrics.ok()) {
    std::fprintf(stderr, "faultline run: analysis failed: %s\n",
                 metrics.status().ToUserString().c_str());
    return kExitInfra;
  }
  // What a black box could not tell: stored with the run (the report shows it) and printed.
  for (const auto& note : metrics->absent_notes) run.Event("black_box_note", {{"text", note}});
  if (results.writer && !metrics->absent_notes.empty())
    results.Keep(results.writer->Flush(Deadline::After(30 * kNsPerSec)), "notes");
  std::vector<reports::MetricRecord> rows = metrics->ToRecords();
  rows.push_back({"", std::nullopt, "telemetry_dropped", static_cast<double>(dropped), "rows"});
  for (auto& r : rows) r.run_id = run_id;
  results.Keep(results.store->ReplaceMetrics(run_id, rows), "metrics");
  // The detection ledger: when each layer noticed each fault (reports/metrics/ledger.h).
  reports::LedgerInput li;
  li.faults = data->faults;
  li.events = data->events;
  li.nics = data->nics;
  li.gap_factor = ao.gap_factor;
  if (p.scenario.job.command.empty()) {
    auto plugin = ccl::FindCclPlugin(p.scenario.job.ccl);
    li.ccl_reports_health = plugin.ok() && (*plugin)->fails_over;
  }
  li.traits = LedgerTraits;
  std::vector<reports::DetectionRecord> ledger = reports::ComputeLedger(li, *metrics);
  results.Keep(results.store->ReplaceDetections(run_id, ledger), "detection ledger");
  std::vector<reports::VerdictRecord> verdicts =
      reports::EvaluateExpectations(*metrics, p.scenario.expect);
  // A planned fault that never fired (the job ended first) tested nothing: say so, and fail.
  for (const auto& pf : p.plan.faults) {
    bool fired = false;
    for (const auto& f : book.faults()) fired = fired || (f.plan.id == pf.id && f.injected);
    if (fired) continue;
    reports::VerdictRecord v;
    v.fault_id = pf.id;
    v.expectation = "fault_fired";
    v.passed = false;
    bool skipped = false;
    for (const auto& f : book.faults()) skipped = skipped || (f.plan.id == pf.id && f.skipped);
    if (skipped)
      v.message = pf.id + " never fired: it was timed during " + pf.anchor + ", which was over " +
                  "before its " + pf.anchor_event + " came";
    else if (!pf.anchor.empty())
      v.message = pf.id + " never fired: no " + pf.anchor_event + " of " + pf.anchor +
                  " was seen before the job ended";
    else
      v.message =
          "the job ended before " + pf.id + " fired: make the job longer or the fault earlier";
    verdicts.push_back(v);
  }
  // A fault left applied is the worst outcome a harness can have: the next night's job lands
  // on a broken node. Every fault that took effect must have been reverted and read back
  // gone; an instantaneous one (a kill) has nothing to revert.
  {
    reports::VerdictRecord v;
    v.expectation = "faults_reverted";
    v.passed = true;
    std::string left;
    for (const auto& f : data->faults) {
      if (!f.effective_wall_ns) continue;
      const injectors::InjectorInfo* info = injectors::BuiltinInjectors().Describe(f.kind);
      if (info != nullptr && info->instantaneous) continue;
      if (f.revert_verified.value_or(false)) continue;
      v.passed = false;
      left += (left.empty() ? "" : "; ") + f.fault_id + " (" + f.kind + " on " + f.target + ", " +
              (f.revert_verified.has_value() ? "its revert failed or was not read back gone"
                                             : "never reverted") +
              ")";
    }
    v.message = v.passed ? "every fault that took effect was reverted and verified gone"
                         : "fault(s) may still be applied: " + left +
                               " - check the target, or `faultline lab down`/the agent's "
                               "journal to revert it";
    if (!data->faults.empty()) verdicts.push_back(v);
  }
  for (auto& v : verdicts) v.run_id = run_id;
  if (dropped > 0) {
    reports::VerdictRecord v;
    v.run_id = run_id;
    v.expectation = "telemetry_complete";
    v.passed = false;
    v.message = std::to_string(dropped) + " telemetry row(s) were dropped: the metrics are " +
                "computed from an incomplete record";
    verdicts.push_back(v);
  }
  results.Keep(results.store->ReplaceVerdicts(run_id, verdicts), "verdicts");
  bool all_passed = true;
  for (const auto& v : verdicts) all_passed = all_passed && v.passed;
  reports::RunStatus status =
      infra_status != reports::RunStatus::kRunning
          ? infra_status
          : (all_passed ? reports::RunStatus::kPassed : reports::RunStatus::kFailed);
  results.Finish(run_id, status, end_reason);

  // The summary is the stored run's, rendered as `faultline report RUN` does (text or JSON):
  // one text summary of a run, whichever command prints it.
  reports::RunData& view = *data;
  view.run.status = status;
  view.run.end_wall_ns = WallNowNs();
  view.run.message = end_reason;
  view.metrics = rows;
  view.verdicts = verdicts;
  view.detections = ledger;
  for (const auto& note : metrics->absent_notes) {
    reports::EventRecord e;
    e.run_id = run_id;
    e.kind = "black_box_note";
    e.detail_json = nlohmann::json({{"text", note}}).dump();
    view.events.push_back(std::move(e));
  }
  if (p.opts.json) {
    std::printf("%s\n", reports::render::RunJson(view).c_str());
  } else {
    if (console.tty()) std::fprintf(stderr, "\n");
    std::printf("\n%s", reports::render::RenderTextSummary(view).c_str());
    if (dropped > 0)
      std::printf("telemetry: %llu row(s) dropped\n", static_cast<unsigned long long>(dropped));
    std::printf("results in %s (run %s; faultline report %s --html FILE)\n", p.opts.db_path.c_str(),
                run_id.c_str(), run_id.c_str());
  }
  if (const std::vector<std::string> lost = results.Lost(); !lost.empty()) {
    std::fprintf(stderr, "faultline run: results incomplete; lost:\n");
    for (const auto& l : lost) std::fprintf(stderr, "  %s\n", l.c_str());
    return kExitInfra;
  }
  if (infra_status != reports::RunStatus::kRunning) return kExitInfra;
  return all_passed ? kExitPass : kExitExpectation;
}

int FinishUnanalysed(RunContext& run, int rc, const std::string& failure) {
  if (!failure.empty() && rc != kExitInterrupted)
    std::fprintf(stderr, "\nfaultline run: %s\n", failure.c_str());
  reports::RunStatus st =
      rc == kExitInterrupted ? reports::RunStatus::kAborted : reports::RunStatus::kError;
  Results& results = run.results;
  if (results.writer)
    results.Keep(results.writer->Flush(Deadline::After(10 * kNsPerSec)), "telemetry rows");
  results.Finish(run.ids.run_id, st, failure);
  for (const auto& l : results.Lost()) std::fprintf(stderr, "faultline run: lost %s\n", l.c_str());
  return rc;
}

}  // namespace fl::harness::run
