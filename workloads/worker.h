// The rank's iteration loop, shared by faultline-worker and the tests: runs a Workload for a
// number of iterations or a duration, verifies every check_every iterations, and reports one
// IterationSample per iteration plus the CCL's events to a TelemetrySink.
//
// A failed collective ends the loop with its status (the communicator is broken; the job is
// fail-stop from here: the coordinator's restart policy decides what happens next), unless
// the job asked to shrink on a rank loss (LoopOptions::on_rank_loss, the elastic alternative
// to a restart): then, when the collective failed because a peer is gone (Unavailable or
// DeadlineExceeded), the survivors agree on who is left (ccl_under_test/api/
// shrink_agreement.h), shrink the communicator (Communicator::Shrink), rebind the workload to
// the smaller group (Workload::Init again: checks use the new world size), and go on from the
// first iteration some survivor had not completed. Two CCL events time it, so that detection
// and recovery are measured as for a failover: fault_detected (cause "rank_lost") when the
// collective failed, failover_done (cause "shrunk") when the new group is ready. A wrong
// result does not end it: the sample is marked mismatch, so correctness is measured, not
// assumed.
//
// Thread-safety: RunLoop runs on the calling thread; `stop` may be set from any thread
// (a signal handler sets it through an atomic).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ccl_under_test/api/events.h"
#include "ccl_under_test/api/rendezvous.h"
#include "common/clock.h"
#include "common/status.h"
#include "workloads/sample.h"
#include "workloads/workload.h"

namespace fl::workloads {

class TelemetrySink : public ccl::EventSink {
 public:
  virtual void OnSample(const IterationSample& sample) = 0;
  // Free-form worker events (worker_start, worker_exit, mismatch detail) as JSON objects.
  virtual void OnWorkerEvent(const std::string& kind, const std::string& detail_json) = 0;
};

// What the loop does when a collective fails because a peer is gone.
enum class OnRankLoss : uint8_t {
  kAbort,   // end the loop with the error (fail-stop; the coordinator may restart the job)
  kShrink,  // shrink the communicator to the survivors and go on (needs Shrink support)
};
// "abort" | "shrink"; InvalidArgument naming the value otherwise.
StatusOr<OnRankLoss> ParseOnRankLoss(std::string_view text);

// How the loop shrinks (on_rank_loss kShrink).
struct ShrinkOptions {
  // The job's rendezvous store (borrowed) and its keys there ("shrink/<job_id>").
  ccl::Store* store = nullptr;
  std::string key_prefix = "shrink/job";
  // How long a survivor waits for the others to report in (shrink_agreement.h): it must
  // cover the spread of the survivors' detection times. A survivor that waits in a
  // collective notices the loss at that collective's deadline at the latest (with shrink,
  // every collective of the loop has workload.collective_timeout), so a little more than
  // one collective timeout (faultline-worker: the collective timeout + 5 s).
  Nanos grace = 15 * kNsPerSec;
  // Deadline of Communicator::Shrink, and of waiting for the leader's decision.
  Nanos timeout = 60 * kNsPerSec;
  // The workload is re-initialised with it on the new communicator.
  WorkloadConfig workload;
  // Where the loop keeps the communicator it shrank to (the workload is bound to it): owned
  // by the caller so that it outlives the loop's return, also an error return.
  // REQUIRES: non-null with kShrink.
  std::unique_ptr<ccl::Communicator>* shrunk = nullptr;
};

// A collective error that means a peer is gone (or unreachable for the whole deadline):
// Unavailable or DeadlineExceeded.
bool IsRankLoss(const Status& status);

struct LoopOptions {
  uint64_t iterations = 0;  // 0: run for duration_ns; else run iterations [first, iterations)
  Nanos duration_ns = 0;
  uint64_t check_every = 1;
  // A restarted job resumes here (its last checkpoint): iteration numbers stay global.
  uint64_t first_iteration = 0;
  // With a duration (or a stop request), the ranks must agree on the last iteration, or the
  // ones that go on wait forever for the ones that stopped. Every agree_every iterations
  // they AllReduce(max) a stop flag over comm, and all stop after the same iteration.
  // REQUIRES: comm when duration_ns > 0 and the job has more than one rank.
  ccl::Communicator* comm = nullptr;
  uint64_t agree_every = 10;
  // REQUIRES with kShrink: comm (which ShrinkSupport()s) and shrink.store, shrink.shrunk.
  OnRankLoss on_rank_loss = OnRankLoss::kAbort;
  ShrinkOptions shrink = {};
};

struct LoopResult {
  uint64_t iterations = 0;
  uint64_t verified = 0;
  uint64_t mismatches = 0;
  int shrinks = 0;     // times the group shrank
  int world_size = 0;  // of the group at the end (0: the loop had no communicator)
};

// With kShrink, before the first iteration: FailedPrecondition when comm cannot shrink (the
// error is the CCL's ShrinkSupport()), InvalidArgument when the store or `shrunk` is missing.
StatusOr<LoopResult> RunLoop(Workload& workload, int rank, const LoopOptions& options,
                             TelemetrySink& sink, const std::atomic<bool>& stop);

// Writes samples and events as JSON lines to a file descriptor (a Unix socket to the agent,
// or stdout). Thread-safe: CCL threads report events concurrently with the loop's samples.
class JsonLinesSink : public TelemetrySink {
 public:
  JsonLinesSink(int fd, int rank) : fd_(fd), rank_(rank) {}
  void OnSample(const IterationSample& s) override;
  void OnEvent(const ccl::Event& e) override;
  void OnWorkerEvent(const std::string& kind, const std::string& detail_json) override;
  // False once a write failed (the agent went away); writes are then dropped.
  bool healthy() const { return healthy_; }

 private:
  void WriteLine(const std::string& line);
  int fd_;
  int rank_;
  std::mutex mu_;
  std::atomic<bool> healthy_{true};
};

}  // namespace fl::workloads
