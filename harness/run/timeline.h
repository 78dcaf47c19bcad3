// The run's timeline as a pure function: given the plan's faults and how far each has got, the
// time and the progress the telemetry shows, the next actions and when to look again.
//
// No clock, no I/O, no printing here. Runner::Timeline() (run_driver.cc) is the interpreter:
// it reads the monotonic clock and the telemetry into a TimelineInput, projects its faults into
// a TimelineState, carries the actions out over the control plane (send a fault ahead, inject,
// revert, restart the job, end the run) and sleeps until the step's wake_at. The same state and
// input always give the same step, so the schedule is unit-tested with a fake clock
// (tests/harness/run/timeline_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "harness/scenario/plan.h"

namespace fl::harness {

enum class FaultPhase {
  kPending,    // not sent to its agent yet
  kSentAhead,  // at its agent, prepared, fired there at its time (or armed there, fired at
               // its iteration); its answer not in yet
  kInjected,   // in effect
  kFailed,     // its inject failed
  kReverted,
  kSkipped,  // never fired: timed `during` an anchor that was no longer in effect
};

struct TimelineFault {
  PlannedFault plan;
  std::string agent;  // the agent that injects it (Lab::AgentFor)
  FaultPhase phase = FaultPhase::kPending;
  Nanos revert_at = 0;       // monotonic, once injected; 0: held until the job ends
  bool revert_sent = false;  // its revert is at its agent, due at revert_at; no answer yet
  // An event-timed fault (plan.anchor set): when it is due (monotonic: its anchor's event as the
  // interpreter saw it, plus the delay); 0 while that event has not been seen.
  Nanos anchor_due = 0;
  // An iteration-triggered fault whose agent runs progress ranks (and whose job does not
  // shrink away from lost ranks): it can be armed there, and fires when those ranks pass the
  // iteration.
  bool armable = false;
};

struct TimelineConfig {
  uint64_t warmup_iterations = 0;  // every progress rank past this before the steady state
  bool wait_for_warmup = true;     // false: the job reports no progress (progress.format exit)
  Nanos warmup_limit_ns = 0;
  Nanos hang_timeout_ns = 0;             // no sample for this long: the job hangs
  Nanos send_ahead_ns = 500 * kNsPerMs;  // a time-triggered fault goes to its agent this early
  bool restart_enabled = false;
  int max_restarts = 0;
  // job.on_rank_loss: shrink: the survivors of a lost rank shrink their communicator and go
  // on, so a rank's bad exit ends nothing while another rank still runs.
  bool tolerate_rank_loss = false;
  Nanos poll_ns = 5 * kNsPerMs;  // the longest wait between two looks
};

struct TimelineState {
  std::vector<TimelineFault> faults;
  Nanos start = 0;   // monotonic: the timeline's start (warm-up begins)
  Nanos steady = 0;  // monotonic: the steady state's start; 0 while warming up
  int restarts = 0;  // restarts of the job so far
};

// What the interpreter saw at one look.
struct TimelineInput {
  Nanos now = 0;               // monotonic
  int64_t min_iteration = -1;  // least last iteration over the progress ranks; -1: not all heard
  int exited = 0;              // ranks whose process has ended
  int world = 0;
  bool failed = false;    // a rank exited badly
  int failed_ranks = 0;   // how many did (with tolerate_rank_loss: lost, not the job's end)
  Nanos last_sample = 0;  // monotonic arrival of the newest sample; 0: none yet
  bool interrupted = false;
};

enum class TimelineActionKind {
  kBeginSteady,  // warm-up is over (or cannot finish): the steady state starts now
  kSendAhead,    // send `fault` to its agent now, with its due time
  kArm,          // send `fault` to its agent armed: it fires there when its ranks pass the
                 // iteration
  kInject,       // inject `fault` now (iteration- or event-timed, or its agent was busy ahead)
  kSkip,         // `fault` (during its anchor) will never fire: the anchor is not in effect
  kRevertAhead,  // send `fault`'s revert to its agent now, due at its revert_at
  kRevert,       // revert `fault` now
  kRestart,      // a rank failed and the restart policy allows another attempt
  kEndPass,      // the job ended: every rank exited well, or one failed with no restart left
  kEndHung,      // no sample for longer than the hang timeout
  kEndWarmupTimeout,
  kEndInterrupted,
};

struct TimelineAction {
  TimelineActionKind kind;
  size_t fault = 0;  // index into TimelineState::faults, for the fault actions
  bool operator==(const TimelineAction&) const = default;
};

struct TimelineStep {
  std::vector<TimelineAction> actions;  // in order; an end action is the last
  Nanos wake_at = 0;                    // monotonic: look again by then
};

// The due time (monotonic) of a time-triggered fault; REQUIRES state.steady > 0.
inline Nanos DueAt(const TimelineState& state, const TimelineFault& f) {
  return state.steady + f.plan.at_ns;
}

// The next step. Order within it: faults to send or inject (in plan order), then reverts that
// are due, then at most one end action. A time-triggered fault goes ahead once it is within
// send_ahead_ns of its time, unless another fault of its agent is ahead or in effect (a
// prepared fault claims its objects at once); it is then injected at its time. An
// iteration-triggered fault is armed at its agent as soon as the steady state begins, when it
// is armable and its agent holds no other fault; otherwise it is injected once every progress
// rank has passed its iteration (as it is when those ranks are past it already). An
// event-timed fault is injected at its anchor_due; one timed `during` its anchor is skipped
// instead when the anchor is no longer in effect by then (reverted, failed or skipped). A
// fault in effect with a revert time has its revert sent ahead send_ahead_ns before that time
// (at once when it is closer); with send_ahead_ns 0 it is reverted at its time instead.
TimelineStep NextTimelineStep(const TimelineState& state, const TimelineConfig& config,
                              const TimelineInput& in);

const char* TimelineActionName(TimelineActionKind kind);

}  // namespace fl::harness
