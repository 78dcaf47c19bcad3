#include "harness/run/live_metrics.h"

#include <cstdio>

#include "harness/alerts/http_server.h"
#include "reports/render/openmetrics.h"

namespace fl::harness::run {
namespace {

void Metric(std::string& out, const char* name, const char* type, const char* help,
            const std::string& labels, double value) {
  char num[64];
  std::snprintf(num, sizeof num, "%.17g", value);
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
         name + labels + " " + num + "\n";
}

}  // namespace

StatusOr<std::unique_ptr<LiveMetrics>> LiveMetrics::Start(const std::string& listen) {
  std::unique_ptr<LiveMetrics> m(new LiveMetrics());
  alerts::HttpServerOptions o;
  o.listen = listen;
  o.max_body = 4096;
  LiveMetrics* self = m.get();
  FL_ASSIGN_OR_RETURN(m->server_,
                      alerts::HttpServer::Start(o, [self](const alerts::HttpRequest& r) {
                        if (r.method != "GET")
                          return alerts::HttpReply{405, "text/plain", "GET /metrics\n"};
                        if (r.target != "/metrics" && r.target.rfind("/metrics?", 0) != 0)
                          return alerts::HttpReply{404, "text/plain", "GET /metrics\n"};
                        return alerts::HttpReply{200, "text/plain; version=0.0.4", self->Render()};
                      }));
  return m;
}

LiveMetrics::~LiveMetrics() {
  if (server_) server_->Stop();  // before the members its handler reads go
}

int LiveMetrics::port() const { return server_ ? server_->port() : 0; }

void LiveMetrics::Attach(const std::string& run_id, const std::string& scenario, int world,
                         Progress* progress) {
  std::lock_guard lock(mu_);
  run_id_ = run_id;
  scenario_ = scenario;
  world_ = world;
  progress_ = progress;
}

void LiveMetrics::Detach() {
  std::lock_guard lock(mu_);
  progress_ = nullptr;
}

std::string LiveMetrics::Render() {
  std::lock_guard lock(mu_);
  std::string out;
  Metric(out, "faultline_run_info", "gauge", "The run this coordinator drives.",
         "{run_id=\"" + reports::render::EscapeLabelValue(run_id_) + "\",scenario=\"" +
             reports::render::EscapeLabelValue(scenario_) + "\"}",
         1);
  if (!progress_) return out;
  uint64_t samples = 0, mismatches = 0;
  Nanos last = 0;
  {
    std::lock_guard plock(progress_->mu);
    samples = progress_->samples;
    mismatches = progress_->mismatches;
    last = progress_->last_sample_mono;
  }
  const int64_t iteration = progress_->MinIteration(world_);
  const int failed = progress_->FailedRanks();
  Metric(out, "faultline_job_samples_total", "counter",
         "Iterations the ranks reported, over all ranks.", "", static_cast<double>(samples));
  Metric(out, "faultline_job_mismatches_total", "counter",
         "Verified collective results that were wrong.", "", static_cast<double>(mismatches));
  Metric(out, "faultline_job_iteration", "gauge",
         "The least last completed iteration over the ranks (-1 before every rank reported).", "",
         static_cast<double>(iteration));
  Metric(out, "faultline_job_ranks", "gauge", "Ranks of the job.", "", world_);
  Metric(out, "faultline_job_ranks_failed", "gauge", "Ranks whose process ended badly.", "",
         failed);
  if (last > 0)
    Metric(out, "faultline_job_last_sample_age_seconds", "gauge",
           "Seconds since any rank last reported an iteration.", "",
           static_cast<double>(MonoNowNs() - last) / 1e9);
  return out;
}

}  // namespace fl::harness::run
