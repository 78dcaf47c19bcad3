// `faultline run --metrics-listen HOST:PORT`: the run's live metrics for Prometheus while it
// runs (GET /metrics, the text format 0.0.4), so that alert rules over the job itself can be
// scored against the run's faults (docs/detectors.md):
//   faultline_run_info{run_id, scenario}  1
//   faultline_job_samples_total           iterations the ranks reported, over all ranks
//   faultline_job_mismatches_total        verified results that were wrong
//   faultline_job_iteration               the least last iteration over the ranks (-1 before)
//   faultline_job_ranks, faultline_job_ranks_failed
//   faultline_job_last_sample_age_seconds how long since any rank reported
//
// Thread-safety: the server's thread reads Progress under its mutex; Attach/Detach are for
// the driver's thread. Blocking: Start binds (or fails) before it returns.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "harness/run/telemetry_sink.h"

namespace fl::harness::alerts {
class HttpServer;
}

namespace fl::harness::run {

class LiveMetrics {
 public:
  // InvalidArgument for a bad address, Unavailable when it cannot bind.
  [[nodiscard]] static StatusOr<std::unique_ptr<LiveMetrics>> Start(const std::string& listen);
  ~LiveMetrics();
  int port() const;
  // The run and the job the page shows from now on; Detach before progress goes.
  void Attach(const std::string& run_id, const std::string& scenario, int world,
              Progress* progress);
  void Detach();
  // The page as it is now (what GET /metrics answers).
  std::string Render();

 private:
  LiveMetrics() = default;
  std::mutex mu_;
  std::string run_id_, scenario_;
  int world_ = 0;
  Progress* progress_ = nullptr;
  std::unique_ptr<alerts::HttpServer> server_;
};

}  // namespace fl::harness::run
