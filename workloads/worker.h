// The rank's iteration loop, shared by faultline-worker and the tests: runs a Workload for a
// number of iterations or a duration, verifies every check_every iterations, and reports one
// IterationSample per iteration plus the CCL's events to a TelemetrySink.
//
// A failed collective ends the loop with its status (the communicator is broken; the job is
// fail-stop from here: the coordinator's restart policy decides what happens next). A wrong
// result does not end it: the sample is marked mismatch, so correctness is measured, not
// assumed.
//
// Thread-safety: RunLoop runs on the calling thread; `stop` may be set from any thread
// (a signal handler sets it through an atomic).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "ccl_under_test/api/events.h"
#include "common/clock.h"
#include "common/status.h"
#include "workloads/workload.h"

namespace fl::workloads {

struct IterationSample {
  int rank = 0;
  uint64_t iteration = 0;
  Nanos start_wall_ns = 0;
  Nanos end_wall_ns = 0;
  uint64_t bytes = 0;
  bool verified = false;
  bool mismatch = false;
};

class TelemetrySink : public ccl::EventSink {
 public:
  virtual void OnSample(const IterationSample& sample) = 0;
  // Free-form worker events (worker_start, worker_exit, mismatch detail) as JSON objects.
  virtual void OnWorkerEvent(const std::string& kind, const std::string& detail_json) = 0;
};

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
};

struct LoopResult {
  uint64_t iterations = 0;
  uint64_t verified = 0;
  uint64_t mismatches = 0;
};

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
