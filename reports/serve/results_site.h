// What `faultline serve` answers (docs/serve.md): read-only pages and a JSON API over a results
// store, every page self-contained (assets inlined, no network). The HTTP transport is the
// caller's (harness/alerts/http_server.h); this file sees only a method and a target.
//
//   GET /                     the overview (overview.h): the latest night per cluster x suite
//   GET /runs/ID              a run's report (reports/render/html.h), live from the store
//   GET /trends?scenario=NAME a scenario's metrics over nights with change points (trends.h):
//                             &metric=NAME (repeat; default history's), &tag=K=V (repeat)
//   GET /accept?baseline=SEL&candidate=SEL[&scenario=NAME]
//                             firmware acceptance (compare/acceptance.h): the page
//                             `faultline accept --html` writes, same verdicts
//   GET /compare?a=SEL&b=SEL[&scenario=NAME]
//                             two sets of runs compared (compare/compare.h: medians, interval,
//                             verdict per metric); SEL: a run id, latest, tag:k=v (fingerprint
//                             tags too: fw, nic.driver, kernel), date:YYYY-MM-DD[..YYYY-MM-DD]
//   GET /api/v1/overview      the overview as JSON
//   GET /api/v1/runs          runs, newest first: ?scenario=NAME&status=STATUS&tag=K=V (repeat)
//                             &limit=N (1-1000, default 100)
//   GET /api/v1/runs/ID       a run as `faultline report --json` prints it
//   GET /api/v1/trends        the trends as JSON (the same parameters)
//   GET /api/v1/accept        the acceptance as JSON (`faultline accept --json`)
//   GET /api/v1/compare       the comparison as JSON (`faultline compare --json`)
//   GET /metrics              OpenMetrics: runs per status, each group's latest night and cells
//   GET /healthz              "ok" once the store answers
// Anything else is 404; a method other than GET or HEAD 405; a bad parameter 400 with what is
// wrong (JSON {"error": ...} under /api/). A store error is 503, never a crash.
//
// Thread-safety: one request at a time (the store is not shared across threads).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "reports/compare/run_metrics.h"

namespace fl::reports::serve {

struct SiteReply {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
};

struct SiteOptions {
  size_t overview_runs = 5000;  // the newest runs the overview reads (memory bound)
  std::string db_label;         // shown in page headers (the store's path, no password)
};

class ResultsSite {
 public:
  ResultsSite(compare::RunReader& reader, SiteOptions options)
      : reader_(reader), store_(reader.store()), options_(std::move(options)) {}
  SiteReply Handle(const std::string& method, const std::string& target);

 private:
  SiteReply Overview(bool json);
  SiteReply Runs(const std::string& query);
  SiteReply Run(const std::string& id, bool json);
  SiteReply Metrics();
  SiteReply Trends(const std::string& query, bool json);
  SiteReply Accept(const std::string& query, bool json);
  SiteReply CompareSets(const std::string& query, bool json);

  compare::RunReader& reader_;
  Store& store_;
  SiteOptions options_;
};

// "%2F" and '+' decoded; nullopt for a malformed escape.
std::optional<std::string> UrlDecode(std::string_view s);

}  // namespace fl::reports::serve
