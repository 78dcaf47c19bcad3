// The pure timeline (harness/run/timeline.h) on a fake clock: a small interpreter here
// plays the agents (a fault sent ahead fires at its time; an inject or revert is answered at
// once) and the ranks (one iteration per 10 ms), and records what was done when.
#include "harness/run/timeline.h"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fl::harness {
namespace {

constexpr Nanos kMs = kNsPerMs;

TimelineFault TimeFault(const std::string& id, const std::string& agent, Nanos at, Nanos dur) {
  TimelineFault f;
  f.plan.id = id;
  f.plan.at_ns = at;
  f.plan.duration_ns = dur;
  f.agent = agent;
  return f;
}

TimelineFault IterationFault(const std::string& id, const std::string& agent, uint64_t it,
                             Nanos dur) {
  TimelineFault f = TimeFault(id, agent, 0, dur);
  f.plan.after_iteration_trigger = true;
  f.plan.after_iteration = it;
  return f;
}

// Timed by an event of `anchor` (after_event / during).
TimelineFault EventFault(const std::string& id, const std::string& agent, const std::string& anchor,
                         const std::string& event, Nanos delay, bool during, Nanos dur) {
  TimelineFault f = TimeFault(id, agent, 0, dur);
  f.plan.anchor = anchor;
  f.plan.anchor_event = event;
  f.plan.anchor_delay_ns = delay;
  f.plan.during = during;
  return f;
}

TimelineConfig Config() {
  TimelineConfig c;
  c.warmup_iterations = 5;
  c.warmup_limit_ns = 10'000 * kMs;
  c.hang_timeout_ns = 1'000 * kMs;
  return c;
}

// One record of what the fake interpreter did.
struct Done {
  Nanos at;
  std::string what;  // "steady", "ahead f0", "inject f0", "fired f0", "revert f0", "end ..."
};

// Runs the timeline from t = 0 on a fake clock: ranks make one iteration per 10 ms from
// t = 0 (and stop at stop_ranks_at, if set); the world is 2 ranks; a fault sent ahead fires at
// its due time. Ends at the first end action or at `until`.
struct FakeRun {
  TimelineState state;
  TimelineConfig cfg = Config();
  Nanos until = 5'000 * kMs;
  Nanos stop_ranks_at = 0;  // 0: never
  Nanos fail_at = 0;        // 0: no rank fails
  // The interpreter is held up once (a restart's stop of the ranks): its first look at or
  // after stall_at happens stall_for later.
  Nanos stall_at = 0, stall_for = 0;
  // The fake CCL detects a fault this long after it took effect; the fake interpreter sees
  // the events of an anchor (fault_detected, injected, reverted) at its next look.
  Nanos detect_after = 3 * kMs;
  std::map<std::string, Nanos> took_effect, reverted;
  std::vector<Done> done;
  int steps = 0;

  std::string Run() {
    Nanos now = 0;
    Nanos last_sample = 0;
    while (now <= until) {
      ++steps;
      if (stall_for > 0 && stall_at > 0 && now >= stall_at) {
        now += stall_for;
        stall_for = 0;
      }
      const bool running = stop_ranks_at == 0 || now < stop_ranks_at;
      const int64_t min_iteration = (running ? now : stop_ranks_at) / (10 * kMs);
      // The agents: a fault sent ahead fires at its due time and is answered then; an armed
      // one when the ranks have passed its iteration.
      // A revert sent ahead is carried out at its time.
      for (auto& f : state.faults) {
        if (f.phase == FaultPhase::kInjected && f.revert_sent && now >= f.revert_at) {
          f.phase = FaultPhase::kReverted;
          done.push_back({now, "revert " + f.plan.id});
          reverted[f.plan.id] = now;
        }
      }
      for (auto& f : state.faults) {
        if (f.phase != FaultPhase::kSentAhead) continue;
        const bool armed = f.plan.after_iteration_trigger;
        if (armed ? min_iteration >= static_cast<int64_t>(f.plan.after_iteration)
                  : now >= DueAt(state, f)) {
          f.phase = FaultPhase::kInjected;
          if (f.plan.duration_ns > 0)
            f.revert_at = (armed ? now : DueAt(state, f)) + f.plan.duration_ns;
          done.push_back({now, "fired " + f.plan.id});
          took_effect[f.plan.id] = now;
        }
      }
      for (auto& f : state.faults) {
        if (f.plan.anchor.empty() || f.anchor_due > 0 || !took_effect.count(f.plan.anchor))
          continue;
        const Nanos t = took_effect[f.plan.anchor];
        std::optional<Nanos> event;
        if (f.plan.anchor_event == "injected") event = t;
        if (f.plan.anchor_event == "fault_detected" && now >= t + detect_after)
          event = t + detect_after;
        if (f.plan.anchor_event == "reverted" && reverted.count(f.plan.anchor))
          event = reverted[f.plan.anchor];
        if (event) f.anchor_due = *event + f.plan.anchor_delay_ns;
      }
      if (running) last_sample = now;
      TimelineInput in;
      in.now = now;
      in.world = 2;
      in.min_iteration = min_iteration;
      in.last_sample = last_sample;
      in.failed = fail_at > 0 && now >= fail_at;
      in.exited = in.failed ? 1 : 0;
      const TimelineStep step = NextTimelineStep(state, cfg, in);
      REQUIRE(step.wake_at >= now);
      for (const TimelineAction& a : step.actions) {
        TimelineFault* f =
            a.kind == TimelineActionKind::kSendAhead || a.kind == TimelineActionKind::kArm ||
                    a.kind == TimelineActionKind::kInject ||
                    a.kind == TimelineActionKind::kRevertAhead ||
                    a.kind == TimelineActionKind::kRevert || a.kind == TimelineActionKind::kSkip
                ? &state.faults.at(a.fault)
                : nullptr;
        switch (a.kind) {
          case TimelineActionKind::kBeginSteady:
            state.steady = now;
            done.push_back({now, "steady"});
            break;
          case TimelineActionKind::kSendAhead:
            f->phase = FaultPhase::kSentAhead;
            done.push_back({now, "ahead " + f->plan.id});
            break;
          case TimelineActionKind::kArm:
            f->phase = FaultPhase::kSentAhead;
            done.push_back({now, "arm " + f->plan.id});
            break;
          case TimelineActionKind::kInject:
            f->phase = FaultPhase::kInjected;
            if (f->plan.duration_ns > 0) f->revert_at = now + f->plan.duration_ns;
            done.push_back({now, "inject " + f->plan.id});
            took_effect[f->plan.id] = now;
            break;
          case TimelineActionKind::kSkip:
            f->phase = FaultPhase::kSkipped;
            done.push_back({now, "skip " + f->plan.id});
            break;
          case TimelineActionKind::kRevertAhead:
            f->revert_sent = true;
            done.push_back({now, "revert ahead " + f->plan.id});
            break;
          case TimelineActionKind::kRevert:
            f->phase = FaultPhase::kReverted;
            done.push_back({now, "revert " + f->plan.id});
            reverted[f->plan.id] = now;
            break;
          case TimelineActionKind::kRestart:
            state.restarts++;
            fail_at = 0;
            done.push_back({now, "restart"});
            break;
          default:
            done.push_back({now, TimelineActionName(a.kind)});
            return TimelineActionName(a.kind);
        }
      }
      // The next look: at the step's wake time, as the interpreter sleeps
      // (an end or the steady state's start asks for another look at once).
      if (step.wake_at > now)
        now = step.wake_at;
      else if (step.actions.empty())
        now += kMs;
    }
    return "until";
  }

  Nanos When(const std::string& what) const {
    for (const Done& d : done)
      if (d.what == what) return d.at;
    return -1;
  }
};

TEST_CASE(
    "timeline: warm-up, then a fault sent ahead 500 ms early, fired at its time, its revert "
    "sent ahead 500 ms early and carried out after its duration",
    "[unit]") {
  FakeRun run;
  run.until = 3'000 * kMs;
  run.state.faults = {TimeFault("f0", "h0", 1'000 * kMs, 400 * kMs)};
  CHECK(run.Run() == "until");
  const Nanos steady = run.When("steady");
  CHECK(steady == 50 * kMs);  // iteration 5 at 10 ms each
  CHECK(run.When("ahead f0") == steady + 500 * kMs);
  CHECK(run.When("fired f0") == steady + 1'000 * kMs);
  // Its revert is due 400 ms after it fired, closer than 500 ms: sent as soon as it fired.
  CHECK(run.When("revert ahead f0") == steady + 1'000 * kMs);
  CHECK(run.When("revert f0") == steady + 1'400 * kMs);
  CHECK(run.When("inject f0") == -1);
  // The interpreter sleeps until the next thing to do, never longer than the poll interval.
  CHECK(run.steps > 300);
  CHECK(run.steps < 800);
}

TEST_CASE(
    "timeline: a second fault of a busy agent is not sent ahead but injected at its time, while "
    "another agent's goes ahead",
    "[unit]") {
  FakeRun run;
  run.until = 3'000 * kMs;
  run.state.faults = {TimeFault("f0", "h0", 1'000 * kMs, 600 * kMs),
                      TimeFault("f1", "h0", 1'200 * kMs, 100 * kMs),
                      TimeFault("f2", "h1", 1'200 * kMs, 100 * kMs)};
  run.Run();
  const Nanos steady = run.When("steady");
  CHECK(run.When("ahead f0") == steady + 500 * kMs);
  CHECK(run.When("ahead f1") == -1);
  CHECK(run.When("inject f1") == steady + 1'200 * kMs);  // h0 holds f0 until 1.6 s
  CHECK(run.When("ahead f2") == steady + 700 * kMs);
  CHECK(run.When("fired f2") == steady + 1'200 * kMs);
  CHECK(run.When("revert f1") == steady + 1'300 * kMs);
  CHECK(run.When("revert f0") == steady + 1'600 * kMs);
}

TEST_CASE(
    "timeline: after the interpreter was held up, late faults on one target go one at a time, "
    "each after the revert of the one before",
    "[unit]") {
  FakeRun run;
  run.until = 3'000 * kMs;
  run.state.faults = {
      TimeFault("f0", "h1", 1'000 * kMs, 20 * kMs), TimeFault("f1", "h1", 1'100 * kMs, 20 * kMs),
      TimeFault("f2", "h1", 1'200 * kMs, 20 * kMs), TimeFault("g0", "h2", 1'100 * kMs, 20 * kMs)};
  for (auto& f : run.state.faults) f.plan.target = f.agent + ".nic0";
  run.stall_at = 900 * kMs;  // steady starts at 50 ms: held from 0.9 s to 1.3 s
  run.stall_for = 400 * kMs;
  run.Run();
  REQUIRE(run.When("steady") == 50 * kMs);
  auto effect = [&](const std::string& id) {
    const Nanos i = run.When("inject " + id), f = run.When("fired " + id);
    return i >= 0 ? i : f;
  };
  const Nanos back = 1'300 * kMs;  // the first look after the stall
  CHECK(effect("f0") == back);
  CHECK(effect("g0") == back);  // another target: at once
  for (const char* id : {"f0", "f1", "f2", "g0"}) CHECK(run.When(std::string("revert ") + id) > 0);
  CHECK(effect("f1") >= run.When("revert f0"));
  CHECK(effect("f2") >= run.When("revert f1"));
  CHECK(effect("f2") < back + 100 * kMs);  // caught up, not a period each
  // Never two faults in effect on h1.nic0.
  int held = 0;
  for (const Done& d : run.done) {
    for (const char* id : {"f0", "f1", "f2"}) {
      if (d.what == std::string("inject ") + id || d.what == std::string("fired ") + id) ++held;
      if (d.what == std::string("revert ") + id) --held;
    }
    CHECK(held <= 1);
  }
}

TEST_CASE(
    "timeline: an iteration-triggered fault is injected once every rank has passed its "
    "iteration",
    "[unit]") {
  FakeRun run;
  run.until = 2'000 * kMs;
  run.state.faults = {IterationFault("f0", "h0", 42, 100 * kMs)};
  run.Run();
  CHECK(run.When("inject f0") == 420 * kMs);
  CHECK(run.When("revert f0") == 520 * kMs);
  CHECK(run.When("ahead f0") == -1);
}

TEST_CASE(
    "timeline: an armable iteration-triggered fault goes to its agent when the steady state "
    "begins and fires there - a busy agent's is injected by the coordinator instead",
    "[unit]") {
  SECTION("armed at the steady state's start, fired by the agent at its iteration") {
    FakeRun run;
    run.until = 2'000 * kMs;
    run.state.faults = {IterationFault("f0", "h0", 42, 100 * kMs)};
    run.state.faults[0].armable = true;
    run.Run();
    const Nanos steady = run.When("steady");
    CHECK(run.When("arm f0") == steady);
    CHECK(run.When("fired f0") == 420 * kMs);
    CHECK(run.When("inject f0") == -1);
    CHECK(run.When("revert f0") == 520 * kMs);
  }
  SECTION("its agent holds another fault: injected when the ranks are past it, as before") {
    FakeRun run;
    run.until = 2'000 * kMs;
    run.state.faults = {TimeFault("f0", "h0", 100 * kMs, 1'000 * kMs),
                        IterationFault("f1", "h0", 42, 100 * kMs)};
    run.state.faults[1].armable = true;
    run.Run();
    CHECK(run.When("ahead f0") == run.When("steady"));
    CHECK(run.When("arm f1") == -1);
    CHECK(run.When("inject f1") == 420 * kMs);
  }
  SECTION("armed first: a time-triggered fault of the same agent is injected at its time") {
    FakeRun run;
    run.until = 2'000 * kMs;
    run.state.faults = {IterationFault("f0", "h0", 150, 100 * kMs),
                        TimeFault("f1", "h0", 800 * kMs, 100 * kMs)};
    run.state.faults[0].armable = true;
    run.Run();
    const Nanos steady = run.When("steady");
    CHECK(run.When("arm f0") == steady);
    CHECK(run.When("ahead f1") == -1);
    CHECK(run.When("inject f1") == steady + 800 * kMs);
    CHECK(run.When("fired f0") == 1'500 * kMs);
  }
  SECTION("not armable (its agent runs no progress rank): injected by the coordinator") {
    FakeRun run;
    run.until = 2'000 * kMs;
    run.state.faults = {IterationFault("f0", "fabric", 42, 100 * kMs)};
    run.Run();
    CHECK(run.When("arm f0") == -1);
    CHECK(run.When("inject f0") == 420 * kMs);
  }
}

TEST_CASE(
    "timeline: faults timed by an earlier fault's events land at the event plus their delay, "
    "and one timed during a fault that is over is skipped",
    "[unit]") {
  SECTION("during: the anchor's detection plus the delay, on the same agent as the anchor") {
    FakeRun run;
    run.until = 3'000 * kMs;
    run.state.faults = {TimeFault("f0", "h0", 1'000 * kMs, 400 * kMs),
                        EventFault("f1", "h0", "f0", "fault_detected", 5 * kMs, true, 50 * kMs)};
    CHECK(run.Run() == "until");
    const Nanos fired = run.When("fired f0");
    REQUIRE(fired > 0);
    CHECK(run.When("inject f1") == fired + 3 * kMs + 5 * kMs);
    CHECK(run.When("revert f1") == fired + 58 * kMs);
    CHECK(run.When("ahead f1") == -1);
    CHECK(run.When("skip f1") == -1);
  }
  SECTION("after_event reverted and injected, chained: f2 after f1 took effect") {
    FakeRun run;
    run.until = 3'000 * kMs;
    run.state.faults = {TimeFault("f0", "h0", 1'000 * kMs, 200 * kMs),
                        EventFault("f1", "h1", "f0", "reverted", 100 * kMs, false, 50 * kMs),
                        EventFault("f2", "h2", "f1", "injected", 0, false, 10 * kMs)};
    run.Run();
    const Nanos reverted = run.When("revert f0");
    CHECK(reverted == run.When("fired f0") + 200 * kMs);
    CHECK(run.When("inject f1") == reverted + 100 * kMs);
    CHECK(run.When("inject f2") == run.When("inject f1"));
  }
  SECTION("during a fault reverted before it was detected: skipped, never injected") {
    FakeRun run;
    run.until = 3'000 * kMs;
    run.detect_after = 500 * kMs;
    run.state.faults = {TimeFault("f0", "h0", 1'000 * kMs, 100 * kMs),
                        EventFault("f1", "h1", "f0", "fault_detected", 0, true, 50 * kMs)};
    CHECK(run.Run() == "until");
    CHECK(run.When("skip f1") == run.When("revert f0"));
    CHECK(run.When("inject f1") == -1);
  }
  SECTION("after_event of an event that never comes: nothing fires, nothing is skipped") {
    FakeRun run;
    run.until = 2'000 * kMs;
    run.state.faults = {TimeFault("f0", "h0", 1'000 * kMs, 0),
                        EventFault("f1", "h1", "f0", "failover_done", 0, false, 50 * kMs)};
    CHECK(run.Run() == "until");
    CHECK(run.When("inject f1") == -1);
    CHECK(run.When("skip f1") == -1);
  }
}

TEST_CASE(
    "timeline: the job's end, a hang, a failure with and without a restart, warm-up "
    "timeout and interrupt",
    "[unit]") {
  SECTION("every rank exited well: end_pass") {
    TimelineState st;
    st.steady = 1;
    TimelineInput in;
    in.now = 100;
    in.min_iteration = 9;
    in.exited = 2;
    in.world = 2;
    in.last_sample = 90;
    TimelineStep step = NextTimelineStep(st, Config(), in);
    REQUIRE(step.actions.size() == 1);
    CHECK(step.actions[0].kind == TimelineActionKind::kEndPass);
  }
  SECTION("no sample for longer than the hang timeout: end_hung, not before") {
    FakeRun run;
    run.stop_ranks_at = 800 * kMs;
    CHECK(run.Run() == "end_hung");
    // The last sample at 800 ms (or the look before it); hung once 1 s has passed since.
    CHECK(run.When("end_hung") > 1'800 * kMs - 10 * kMs);
    CHECK(run.When("end_hung") <= 1'800 * kMs + 2 * kMs);
  }
  SECTION("a rank failed: restart while the policy allows, then end_pass (a failed job)") {
    FakeRun run;
    run.cfg.restart_enabled = true;
    run.cfg.max_restarts = 1;
    run.fail_at = 300 * kMs;
    run.until = 1'000 * kMs;
    CHECK(run.Run() == "until");
    CHECK(run.When("restart") == 300 * kMs);
    run.fail_at = 1'100 * kMs;
    run.until = 2'000 * kMs;
    run.done.clear();
    CHECK(run.Run() == "end_pass");  // no restart left
    CHECK(run.When("restart") == -1);
  }
  SECTION("on_rank_loss shrink: a lost rank ends nothing while another runs; all lost does") {
    TimelineState st;
    st.steady = 1;
    TimelineConfig cfg = Config();
    cfg.tolerate_rank_loss = true;
    cfg.restart_enabled = true;
    cfg.max_restarts = 3;
    TimelineInput in;
    in.now = 100;
    in.min_iteration = 9;
    in.world = 3;
    in.exited = 1;
    in.failed = true;
    in.failed_ranks = 1;
    in.last_sample = 99;
    CHECK(NextTimelineStep(st, cfg, in).actions.empty());  // no restart, no end
    in.exited = 3;                                         // the survivors finished
    CHECK(NextTimelineStep(st, cfg, in).actions ==
          std::vector<TimelineAction>{{TimelineActionKind::kEndPass, 0}});
    in.failed_ranks = 3;  // nobody survived: the restart policy applies again
    CHECK(NextTimelineStep(st, cfg, in).actions ==
          std::vector<TimelineAction>{{TimelineActionKind::kRestart, 0}});
    cfg.tolerate_rank_loss = false;
    in.exited = 1;
    in.failed_ranks = 1;
    CHECK(NextTimelineStep(st, cfg, in).actions ==
          std::vector<TimelineAction>{{TimelineActionKind::kRestart, 0}});
  }
  SECTION("warm-up that never finishes: end_warmup_timeout after the limit") {
    TimelineState st;
    st.start = 0;
    TimelineConfig cfg = Config();
    TimelineInput in;
    in.now = cfg.warmup_limit_ns - 1;
    in.min_iteration = 2;
    in.world = 2;
    CHECK(NextTimelineStep(st, cfg, in).actions.empty());
    in.now = cfg.warmup_limit_ns + 1;
    TimelineStep step = NextTimelineStep(st, cfg, in);
    REQUIRE(step.actions.size() == 1);
    CHECK(step.actions[0].kind == TimelineActionKind::kEndWarmupTimeout);
  }
  SECTION("a job that reports no progress has no warm-up; a failure in warm-up ends it") {
    TimelineState st;
    TimelineConfig cfg = Config();
    cfg.wait_for_warmup = false;
    TimelineInput in;
    in.now = 5;
    in.world = 2;
    CHECK(NextTimelineStep(st, cfg, in).actions ==
          std::vector<TimelineAction>{{TimelineActionKind::kBeginSteady, 0}});
    cfg.wait_for_warmup = true;
    in.failed = true;
    in.exited = 1;
    CHECK(NextTimelineStep(st, cfg, in).actions ==
          std::vector<TimelineAction>{{TimelineActionKind::kBeginSteady, 0}});
  }
  SECTION("interrupted: end_interrupted before anything else") {
    TimelineState st;
    st.steady = 1;
    st.faults = {TimeFault("f0", "h0", 0, 0)};
    TimelineInput in;
    in.now = 1'000 * kMs;
    in.world = 2;
    in.interrupted = true;
    CHECK(NextTimelineStep(st, Config(), in).actions ==
          std::vector<TimelineAction>{{TimelineActionKind::kEndInterrupted, 0}});
  }
}

TEST_CASE("timeline: the same state and input give the same step", "[unit]") {
  TimelineState st;
  st.steady = 10 * kMs;
  st.faults = {TimeFault("f0", "h0", 600 * kMs, 100 * kMs), IterationFault("f1", "h1", 3, 0)};
  TimelineInput in;
  in.now = 200 * kMs;
  in.min_iteration = 4;
  in.world = 2;
  in.last_sample = 199 * kMs;
  const TimelineStep a = NextTimelineStep(st, Config(), in);
  const TimelineStep b = NextTimelineStep(st, Config(), in);
  CHECK(a.actions == b.actions);
  CHECK(a.wake_at == b.wake_at);
  CHECK(a.actions == std::vector<TimelineAction>{{TimelineActionKind::kSendAhead, 0},
                                                 {TimelineActionKind::kInject, 1}});
}

}  // namespace
}  // namespace fl::harness
