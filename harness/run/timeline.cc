#include "harness/run/timeline.h"

#include <algorithm>
#include <set>

#include "common/enum_names.h"

namespace fl::harness {

namespace {

bool Holds(FaultPhase p) { return p == FaultPhase::kSentAhead || p == FaultPhase::kInjected; }

// When fault i's target is free for a late injection: 0 when it is; else when to look again.
// Another fault on the same target in effect (or sent ahead) holds it until its revert; one
// injected or sent ahead in this very step, until the next step knows its revert time.
Nanos TargetHeldUntil(const TimelineState& state, const TimelineStep& step, size_t i, Nanos now,
                      Nanos poll) {
  const std::string& target = state.faults[i].plan.target;
  if (target.empty()) return 0;
  for (const TimelineAction& a : step.actions)
    if ((a.kind == TimelineActionKind::kInject || a.kind == TimelineActionKind::kSendAhead) &&
        state.faults[a.fault].plan.target == target)
      return now + 1;
  Nanos held = 0;
  for (size_t j = 0; j < state.faults.size(); ++j) {
    const TimelineFault& g = state.faults[j];
    if (j == i || g.plan.target != target || !Holds(g.phase)) continue;
    const Nanos until = g.revert_at > 0 ? std::max(g.revert_at, now + 1) : now + poll;
    held = held == 0 ? until : std::min(held, until);
  }
  return held;
}

}  // namespace

TimelineStep NextTimelineStep(const TimelineState& state, const TimelineConfig& config,
                              const TimelineInput& in) {
  TimelineStep step;
  step.wake_at = in.now + config.poll_ns;
  auto end = [&](TimelineActionKind kind) {
    step.actions.push_back({kind, 0});
    step.wake_at = in.now;
    return step;
  };
  if (in.interrupted) return end(TimelineActionKind::kEndInterrupted);

  if (state.steady == 0) {  // warm-up
    const bool warm = !config.wait_for_warmup ||
                      in.min_iteration >= static_cast<int64_t>(config.warmup_iterations);
    // A job that failed or ended during warm-up never gets there: its end is judged in the
    // steady state, which starts at once.
    if (warm || in.failed || (in.world > 0 && in.exited == in.world)) {
      step.actions.push_back({TimelineActionKind::kBeginSteady, 0});
      step.wake_at = in.now;
      return step;
    }
    if (in.now - state.start > config.warmup_limit_ns)
      return end(TimelineActionKind::kEndWarmupTimeout);
    return step;
  }

  // Agents holding a fault (ahead of time or in effect), as this step leaves them.
  std::set<std::string> busy;
  for (const TimelineFault& f : state.faults)
    if (Holds(f.phase)) busy.insert(f.agent);
  for (size_t i = 0; i < state.faults.size(); ++i) {
    const TimelineFault& f = state.faults[i];
    if (f.phase != FaultPhase::kPending) continue;
    if (!f.plan.anchor.empty()) {
      const TimelineFault* anchor = nullptr;
      for (const TimelineFault& a : state.faults)
        if (a.plan.id == f.plan.anchor) anchor = &a;
      const bool anchor_over = !anchor || (anchor->phase != FaultPhase::kPending &&
                                           anchor->phase != FaultPhase::kSentAhead &&
                                           anchor->phase != FaultPhase::kInjected);
      if (f.anchor_due > 0 && in.now >= f.anchor_due) {
        if (f.plan.during && anchor_over) {
          step.actions.push_back({TimelineActionKind::kSkip, i});
        } else {
          step.actions.push_back({TimelineActionKind::kInject, i});
          busy.insert(f.agent);
        }
      } else if (f.anchor_due > 0) {
        step.wake_at = std::min(step.wake_at, f.anchor_due);
      } else if (f.plan.during && anchor_over) {
        step.actions.push_back({TimelineActionKind::kSkip, i});  // its recovery will not come
      }
      continue;
    }
    if (f.plan.after_iteration_trigger) {
      if (in.min_iteration >= static_cast<int64_t>(f.plan.after_iteration)) {
        step.actions.push_back({TimelineActionKind::kInject, i});
        busy.insert(f.agent);
      } else if (f.armable && !busy.count(f.agent)) {
        step.actions.push_back({TimelineActionKind::kArm, i});
        busy.insert(f.agent);
      }
      continue;
    }
    const Nanos due = DueAt(state, f);
    if (in.now >= due - config.send_ahead_ns && !busy.count(f.agent)) {
      step.actions.push_back({TimelineActionKind::kSendAhead, i});
      busy.insert(f.agent);
    } else if (in.now >= due) {
      // Late (the loop was held up, e.g. by a restart): faults on one target go one at a
      // time, a later one after the revert of the one before, as they were planned.
      if (Nanos held = TargetHeldUntil(state, step, i, in.now, config.poll_ns); held > 0) {
        step.wake_at = std::min(step.wake_at, held);
        continue;
      }
      step.actions.push_back({TimelineActionKind::kInject, i});
      busy.insert(f.agent);
    } else {
      // Not yet: look again when it can go ahead (or, its agent busy, when it is due).
      const Nanos next = busy.count(f.agent) ? due : due - config.send_ahead_ns;
      step.wake_at = std::min(step.wake_at, next);
    }
  }
  for (size_t i = 0; i < state.faults.size(); ++i) {
    const TimelineFault& f = state.faults[i];
    if (f.phase != FaultPhase::kInjected || f.revert_at <= 0 || f.revert_sent) continue;
    const Nanos send_at = f.revert_at - config.send_ahead_ns;
    if (in.now >= send_at)
      step.actions.push_back({config.send_ahead_ns > 0 ? TimelineActionKind::kRevertAhead
                                                       : TimelineActionKind::kRevert,
                              i});
    else
      step.wake_at = std::min(step.wake_at, send_at);
  }

  // A fault injected, reverted or skipped now may be the anchor of another: look again at once
  // (the interpreter sees its event then).
  bool anchored_pending = false;
  for (const TimelineFault& f : state.faults)
    anchored_pending =
        anchored_pending || (f.phase == FaultPhase::kPending && !f.plan.anchor.empty());
  if (anchored_pending)
    for (const TimelineAction& a : step.actions)
      if (a.kind == TimelineActionKind::kInject || a.kind == TimelineActionKind::kRevert ||
          a.kind == TimelineActionKind::kSkip)
        step.wake_at = in.now;

  const bool all_exited = in.world > 0 && in.exited == in.world;
  if (all_exited && !in.failed) return end(TimelineActionKind::kEndPass);
  // Lost ranks the survivors shrink away from: the job goes on while one of them runs, and
  // ends when all have exited (the analysis judges it).
  const bool tolerated = config.tolerate_rank_loss && in.failed_ranks < in.world;
  if (tolerated && all_exited) return end(TimelineActionKind::kEndPass);
  if (in.failed && !tolerated) {
    if (config.restart_enabled && state.restarts < config.max_restarts)
      return end(TimelineActionKind::kRestart);
    return end(TimelineActionKind::kEndPass);  // analysed as a failed job
  }
  if (in.last_sample > 0) {
    const Nanos hung_at = in.last_sample + config.hang_timeout_ns;
    if (in.now > hung_at) return end(TimelineActionKind::kEndHung);
    step.wake_at = std::min(step.wake_at, hung_at + 1);
  }
  step.wake_at = std::max(step.wake_at, in.now);
  return step;
}

constexpr NamedValue<TimelineActionKind> kTimelineActionNames[] = {
    {TimelineActionKind::kBeginSteady, "begin_steady"},
    {TimelineActionKind::kSendAhead, "send_ahead"},
    {TimelineActionKind::kArm, "arm"},
    {TimelineActionKind::kInject, "inject"},
    {TimelineActionKind::kRevertAhead, "revert_ahead"},
    {TimelineActionKind::kRevert, "revert"},
    {TimelineActionKind::kSkip, "skip"},
    {TimelineActionKind::kRestart, "restart"},
    {TimelineActionKind::kEndPass, "end_pass"},
    {TimelineActionKind::kEndHung, "end_hung"},
    {TimelineActionKind::kEndWarmupTimeout, "end_warmup_timeout"},
    {TimelineActionKind::kEndInterrupted, "end_interrupted"}};

const char* TimelineActionName(TimelineActionKind kind) {
  return NameIn(kTimelineActionNames, kind, "?").data();
}

}  // namespace fl::harness
