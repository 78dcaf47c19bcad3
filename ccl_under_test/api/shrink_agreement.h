// Survivor agreement for shrinking a communicator after a rank loss: every surviving rank of
// a group must pass the SAME exclude list to Communicator::Shrink (and resume at the same
// iteration), although each noticed the loss on its own, at its own time. They agree through
// the job's rendezvous Store (Set and Get with a deadline; no compare-and-set needed):
//
//   1. each survivor r sets "<prefix>/<generation>/alive/<r>" = the iteration it must redo
//      (the first it has not completed), then waits up to `grace` from its own arrival for
//      every rank's alive key: the ranks it heard from are its view;
//   2. after its grace it looks for "<prefix>/<generation>/decision"; when it is there, that
//      is the answer. Otherwise the lowest rank of its view is the leader: a survivor that is
//      the lowest of its own view writes the decision (its view, and the smallest iteration
//      in it), every other survivor waits for the decision (decision_timeout).
//
// Only one survivor can be the writer: a rank b decides only when it heard no lower rank
// within its grace, so any lower rank a arrived after b's grace ended, and a, after its own
// grace, finds b's decision (b writes it right after its grace; this holds while a store
// write takes less than `grace`). A rank that arrives after the decision finds itself
// excluded (ShrinkDecision::new_rank == -1): it must leave the job. A slow rank that arrives
// within the leader's grace is kept.
//
// `generation` counts the shrinks the group has been through (0 for the first): each shrink
// has its own keys, and the group of generation g+1 numbers its ranks 0..n-1 again.
//
// Blocking: at most grace + decision_timeout (plus the store's own round trips).
// Thread-safety: a free function; ranks run it concurrently on their own threads/processes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ccl_under_test/api/rendezvous.h"
#include "common/clock.h"
#include "common/status.h"

namespace fl::ccl {

struct ShrinkAgreementOptions {
  // The job's keys, e.g. "shrink/<job_id>" (several jobs may share a store).
  std::string prefix = "shrink/job";
  uint64_t generation = 0;
  int rank = 0;        // in the group being shrunk
  int world_size = 1;  // of the group being shrunk
  // The first iteration this rank has not completed (it redoes it after the shrink).
  uint64_t resume_iteration = 0;
  // How long a survivor waits for the others after it arrived. Must cover the spread of the
  // survivors' detection times (a rank that waits in a collective notices the loss only at
  // that collective's deadline).
  Nanos grace = 10 * kNsPerSec;
  // How long a non-leader waits for the leader's decision after its grace.
  Nanos decision_timeout = 10 * kNsPerSec;
};

struct ShrinkDecision {
  int leader = -1;
  std::vector<int> survivors;     // sorted ranks of the old group
  std::vector<int> excluded;      // sorted ranks of the old group: the rest
  uint64_t resume_iteration = 0;  // the smallest of the survivors' resume iterations
  int new_rank = -1;              // this rank in the new group; -1: excluded (it came late)
  int new_size = 0;
};

// InvalidArgument for a bad rank/world size; DeadlineExceeded when the leader's decision did
// not come; the store's own errors; DataLoss for a decision that does not parse.
StatusOr<ShrinkDecision> AgreeOnSurvivors(Store& store, const ShrinkAgreementOptions& options);

// The decision's text in the store ("leader;resume;r0,r1,...") and back. Exposed for tests.
std::string EncodeShrinkDecision(int leader, uint64_t resume, const std::vector<int>& survivors);
StatusOr<ShrinkDecision> DecodeShrinkDecision(const std::string& text, int rank, int world_size);

}  // namespace fl::ccl
