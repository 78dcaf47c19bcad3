#include "harness/run/timeline_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "common/units.h"
#include "harness/run/agents.h"
#include "harness/run/timeline.h"

namespace fl::harness::run {

namespace pb = faultline::v1;

// The interpreter of the pure timeline (timeline.h): it looks (clock, telemetry), asks
// NextTimelineStep what to do, does it over the control plane, prints, and sleeps until the
// step's wake time (at most 5 ms, so that progress and fault events are printed as they come).
int RunTimeline(RunContext& run, Progress& progress, FaultBook& book, Console& console, Job& job) {
  const Prepared& p = run.prepared;
  const JobSpec& j = p.scenario.job;
  std::vector<ActiveFault>& faults = book.faults();
  TimelineConfig cfg;
  // Warm-up: every rank past warmup_iterations (or the whole job, if it is shorter).
  cfg.warmup_iterations = std::min<uint64_t>(j.warmup_iterations,
                                             j.iterations ? j.iterations - 1 : j.warmup_iterations);
  cfg.wait_for_warmup = WaitsForWarmup(j);
  cfg.warmup_limit_ns = 120 * kNsPerSec + j.hang_timeout_ns;
  cfg.hang_timeout_ns = j.hang_timeout_ns;
  cfg.send_ahead_ns = kSendAheadNs;
  cfg.restart_enabled = p.scenario.restart.enabled;
  cfg.max_restarts = static_cast<int>(p.scenario.restart.max_restarts);
  cfg.tolerate_rank_loss = ToleratesRankLoss(j);
  TimelineState state;
  state.start = MonoNowNs();

  auto announce = [&](const ActiveFault& f) {
    console.Say("[fault] " + f.plan.id + " " + f.plan.kind + " on " + f.plan.target + ": injected" +
                    (f.record.scheduled_wall_ns
                         ? " " +
                               FormatDuration(std::max<Nanos>(
                                   0, *f.record.effective_wall_ns - *f.record.scheduled_wall_ns)) +
                               " after its time"
                         : "") +
                    (f.plan.duration_ns > 0 ? ", for " + FormatDuration(f.plan.duration_ns) : ""),
                Tone::kFault);
  };
  auto inject_failed = [&](const ActiveFault& f, const Status& st) {
    std::fprintf(stderr, "\nfaultline run: %s\n", st.ToUserString().c_str());
    run.Event("inject_failed", {{"fault", f.plan.id}, {"error", st.ToUserString()}});
    return kExitInfra;
  };

  while (true) {
    run.LabEvents();
    if (!Interrupted()) {
      if (auto host = LostAgent(run, book)) {
        std::fprintf(stderr, "\nfaultline run: lost the agent of host %s; ending the run\n",
                     host->c_str());
        return kExitInfra;
      }
    }
    // Faults sent ahead whose agent has answered (it fired them, or could not).
    for (auto& f : faults) {
      if (!f.ahead || f.ahead->wait_for(std::chrono::seconds(0)) != std::future_status::ready)
        continue;
      StatusOr<pb::Ack> fired = f.ahead->get();
      f.ahead.reset();
      // Armed at its agent: its time is when the ranks there passed the iteration.
      if (fired.ok() && fired->triggered_wall_ns() > 0)
        f.record.scheduled_wall_ns = fired->triggered_wall_ns() - run.session.OffsetOf(f.agent);
      if (Status st = book.FinishInject(f, std::move(fired)); !st.ok()) return inject_failed(f, st);
      announce(f);
    }
    // Reverts sent ahead that the agent has carried out.
    for (auto& f : faults) {
      if (!f.revert_ahead ||
          f.revert_ahead->wait_for(std::chrono::seconds(0)) != std::future_status::ready)
        continue;
      StatusOr<pb::Ack> done = f.revert_ahead->get();
      f.revert_ahead.reset();
      // Recorded (revert_verified false) and said; the faults_reverted verdict judges it.
      if (Status st = book.FinishRevert(f, std::move(done)); !st.ok())
        std::fprintf(stderr, "\nfaultline run: %s\n", st.ToUserString().c_str());
    }

    job.PollRestart();
    TimelineInput in;
    in.now = MonoNowNs();
    in.min_iteration = progress.MinIteration(ProgressRanks(p), cfg.tolerate_rank_loss);
    in.exited = progress.Exited();
    in.world = p.world;
    in.failed = progress.FirstFailure().has_value();
    in.failed_ranks = progress.FailedRanks();
    {
      std::lock_guard lock(progress.mu);
      in.last_sample = progress.last_sample_mono;
    }
    in.interrupted = Interrupted();
    state.steady = book.steady_mono();
    state.restarts = job.restarts();
    state.faults.resize(faults.size());
    for (size_t i = 0; i < faults.size(); ++i) {
      ActiveFault& f = faults[i];
      TimelineFault& t = state.faults[i];
      if (t.plan.id.empty()) {
        t.plan = f.plan;
        t.agent = f.agent;
      }
      if (!f.plan.anchor.empty() && f.anchor_due_wall == 0 && !f.injected && !f.skipped)
        f.anchor_due_wall = book.AnchorDueWall(f);
      t.anchor_due = f.anchor_due_wall ? in.now - (WallNowNs() - f.anchor_due_wall) : 0;
      t.phase = f.ahead      ? FaultPhase::kSentAhead
                : f.skipped  ? FaultPhase::kSkipped
                : f.failed   ? FaultPhase::kFailed
                : f.reverted ? FaultPhase::kReverted
                : f.injected ? FaultPhase::kInjected
                             : FaultPhase::kPending;
      t.revert_at = f.revert_at_mono;
      t.revert_sent = f.revert_ahead != nullptr;
      t.armable = f.plan.after_iteration_trigger && !cfg.tolerate_rank_loss &&
                  !ProgressRanksOn(p, f.agent).empty();
    }

    const TimelineStep step = NextTimelineStep(state, cfg, in);
    for (const TimelineAction& a : step.actions) {
      switch (a.kind) {
        case TimelineActionKind::kBeginSteady:
          book.BeginSteady();
          break;
        case TimelineActionKind::kSendAhead:
          book.SendAhead(faults[a.fault]);
          break;
        case TimelineActionKind::kArm:
          book.ArmAtAgent(faults[a.fault]);
          break;
        case TimelineActionKind::kInject: {
          ActiveFault& f = faults[a.fault];
          if (f.plan.after_iteration_trigger) f.record.scheduled_wall_ns = WallNowNs();
          if (f.anchor_due_wall) f.record.scheduled_wall_ns = f.anchor_due_wall;
          if (Status st = book.InjectDue(f); !st.ok()) return inject_failed(f, st);
          announce(f);
          break;
        }
        case TimelineActionKind::kRevertAhead:
          book.RevertAhead(faults[a.fault]);
          break;
        case TimelineActionKind::kRevert:
          // A failed revert is recorded (revert_verified false) and said; the run goes on so
          // that analysis judges it: the faults_reverted verdict fails the run, naming it.
          if (Status st = book.RevertFault(faults[a.fault]); !st.ok())
            std::fprintf(stderr, "\nfaultline run: %s\n", st.ToUserString().c_str());
          break;
        case TimelineActionKind::kSkip: {
          ActiveFault& f = faults[a.fault];
          f.skipped = true;
          console.Say("[fault] " + f.plan.id + " " + f.plan.kind + " on " + f.plan.target +
                          ": skipped, " + f.plan.anchor + " was no longer in effect",
                      Tone::kBad);
          run.Event("fault_skipped", {{"fault", f.plan.id}, {"anchor", f.plan.anchor}});
          break;
        }
        case TimelineActionKind::kRestart:
          if (int rc = job.Restart(); rc >= 0) return rc;
          break;
        case TimelineActionKind::kEndPass:
          return kExitPass;
        case TimelineActionKind::kEndHung: {
          run.Event("job_hung", {{"idle_ns", in.now - in.last_sample}});
          return kExitPass;  // analysed as hung
        }
        case TimelineActionKind::kEndWarmupTimeout:
          run.Event("warmup_timeout", {{"limit_ns", cfg.warmup_limit_ns}});
          std::fprintf(stderr, "\nfaultline run: ranks did not finish warm-up within %s\n",
                       FormatDuration(cfg.warmup_limit_ns).c_str());
          return kExitInfra;
        case TimelineActionKind::kEndInterrupted:
          return kExitInterrupted;
      }
    }
    if (book.steady_mono() > 0) console.PrintFaultEvents(book);
    console.PrintProgress(book, book.steady_mono() > 0 ? "running" : "warm-up");
    // While a relaunch's first sample is awaited, the loop looks every 5 ms (its cost).
    const Nanos wait = job.restart_pending()
                           ? std::min<Nanos>(step.wake_at - MonoNowNs(), 5 * kNsPerMs)
                           : step.wake_at - MonoNowNs();
    if (wait <= 0) continue;
    // A fault timed by another's event is injected as soon as that event is in: its arrival
    // ends the wait.
    bool anchored_pending = false;
    for (const auto& f : faults)
      anchored_pending = anchored_pending || (!f.plan.anchor.empty() && !f.injected && !f.skipped);
    // A revert at its agent whose time has come: its answer ends the wait (a fault timed by
    // that revert, and the revert's line, go at once).
    std::shared_ptr<std::future<StatusOr<pb::Ack>>> reverting;
    for (const auto& f : faults)
      if (f.revert_ahead && f.revert_at_mono <= MonoNowNs() + wait) reverting = f.revert_ahead;
    if (reverting) {
      reverting->wait_for(std::chrono::nanoseconds(wait));
      continue;
    }
    if (!anchored_pending) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
      continue;
    }
    std::unique_lock lock(progress.mu);
    const size_t seen = progress.anchor_events.size();
    progress.anchor_event_cv.wait_for(lock, std::chrono::nanoseconds(wait),
                                      [&] { return progress.anchor_events.size() != seen; });
  }
}

}  // namespace fl::harness::run
