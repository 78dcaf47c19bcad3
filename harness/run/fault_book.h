// The run's faults as they happen: the plan's firings from the steady state on, each sent to
// its agent (at once, ahead of its time, or armed at an iteration), answered, reverted (ahead
// of its time, when due, at the run's end, or from a lost agent's journal) and recorded. It
// also answers which fault an event belongs to (InWindow) and when an event-timed fault is due
// (AnchorDueWall); the timeline loop decides when to call what (timeline.h).
//
// Thread-safety: driver's thread only (the calls sent ahead run on threads of their own and
// are only joined here). Blocking: InjectDue, RevertFault and RevertAll wait for the agents'
// answers (at most 30 s).
#pragma once

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/narrate.h"
#include "common/status.h"
#include "harness/proto/faultline.pb.h"
#include "harness/run/run_context.h"
#include "harness/run/telemetry_sink.h"
#include "harness/scenario/plan.h"
#include "reports/store/records.h"

namespace fl::harness::run {

// How long before its time a time-scheduled fault (and a due revert) goes to its agent.
inline constexpr Nanos kSendAheadNs = 500 * kNsPerMs;

struct ActiveFault {
  PlannedFault plan;
  reports::FaultRecord record;
  std::string agent;
  bool injected = false;
  bool reverted = false;
  bool failed = false;
  bool skipped = false;       // timed during its anchor, which was over first: never fires
  Nanos anchor_due_wall = 0;  // event-timed: its anchor's event + delay, once seen; else 0
  Nanos revert_at_mono = 0;   // 0: at the end of the job
  std::string handle_id;      // the agent's journal entry for it
  // Sent ahead (FaultBook::SendAhead): its inject call, answered when the agent fired it.
  std::shared_ptr<std::future<StatusOr<faultline::v1::Ack>>> ahead;
  // Its revert sent ahead (FaultBook::RevertAhead): answered when the agent reverted it.
  std::shared_ptr<std::future<StatusOr<faultline::v1::Ack>>> revert_ahead;
};

class FaultBook {
 public:
  // say: a line for a person (the console's Say); the book tells of each fault reverted.
  using SayFn = std::function<void(const std::string& line, Tone tone)>;
  FaultBook(RunContext& run, Progress& progress, SayFn say)
      : run_(run), progress_(progress), say_(std::move(say)) {}

  std::vector<ActiveFault>& faults() { return faults_; }
  const std::vector<ActiveFault>& faults() const { return faults_; }
  // When the steady state began (MonoNowNs; 0 before).
  Nanos steady_mono() const { return steady_mono_; }

  // The steady state starts: its times, and the plan's faults as the timeline tracks them.
  void BeginSteady();
  // Injects a due fault now and waits for its agent's answer.
  Status InjectDue(ActiveFault& f);
  // Faults sent ahead: a time-scheduled fault goes to its agent kSendAheadNs before its time
  // (at steady state when that is closer; when: timeline.h) with its due time on the agent's
  // clock; the agent prepares it at once and fires it then, and answers the inject when it
  // fired.
  void SendAhead(ActiveFault& f);
  // An iteration-triggered fault armed at its agent: fired there when the progress ranks of
  // its host pass the iteration (answered then, like a fault sent ahead).
  void ArmAtAgent(ActiveFault& f);
  // A fault in effect: its revert goes to its agent kSendAheadNs before its time, with that
  // time on the agent's clock, and is answered when the agent reverted it.
  void RevertAhead(ActiveFault& f);
  // The inject's answer (immediate or sent ahead): fills the fault's record as the ack says.
  Status FinishInject(ActiveFault& f, StatusOr<faultline::v1::Ack> ack);
  // Reverts a fault in effect (or sent ahead) now; OK at once for one that is not.
  Status RevertFault(ActiveFault& f);
  // RevertFault after its Call: the record, as the revert's ack says.
  Status FinishRevert(ActiveFault& f, StatusOr<faultline::v1::Ack> ack);
  // Every fault in effect or sent ahead reverted: the agents in parallel (FanOut), each
  // agent's faults in turn; the records written afterwards, in the plan's order.
  void RevertAll();
  // The faults of an agent that ended on its own: reverted by its lab from the journal
  // (verified for the handles in `reverted`), recorded so.
  void RevertedFromJournal(const std::string& host, const std::vector<std::string>& reverted);

  // Overlapping faults (docs/metrics.md): the window in which an event of kind `kind` belongs
  // to fault a (from its request, or its revert for path_restored, up to the next injected
  // fault not nested in it: reports::NestedIn over the anchors).
  // fired_ahead_counts: a fault sent ahead and due counts from its due time before its answer
  // is in (for anchors; what is printed waits for the answer's times).
  bool InWindow(const ActiveFault& a, const std::string& kind, Nanos wall,
                bool fired_ahead_counts = false) const;
  // The wall time an event-timed fault is due, once its anchor's event is seen (0 before).
  Nanos AnchorDueWall(const ActiveFault& f);

 private:
  RunContext& run_;
  Progress& progress_;
  SayFn say_;
  std::vector<ActiveFault> faults_;
  std::map<std::string, std::string> anchor_of_;  // fault id -> its anchor (after_event / during)
  Nanos steady_mono_ = 0;
  Nanos steady_wall_ = 0;
};

// A fault the run still has to revert: in effect, or sent ahead and not answered yet.
bool Outstanding(const ActiveFault& f);

}  // namespace fl::harness::run
