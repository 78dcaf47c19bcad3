// `faultline serve` on a large store: a generator of nightly runs (clusters x scenarios x
// repeats a night, each with four metrics and the hosts' fingerprint tags; the firmware tag
// changes four fifths of the way, after which scenario_7 recovers 40% slower), then the
// server's time per request, in-process (ResultsSite::Handle: the store's queries and the
// rendering, no HTTP), median over repetitions, and the process's peak RSS.
//
//   bench_serve_store [--runs 100000] [--db FILE | --postgres URI] [--reuse] [--repeat 7]
// --reuse: a store that already holds the runs is measured as it is (generation takes minutes).
// --postgres: a server's database URI (its runs are written there; drop it afterwards).
#include <sys/resource.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "common/clock.h"
#include "reports/compare/run_metrics.h"
#include "reports/serve/results_site.h"
#include "reports/store/store.h"

namespace fl::reports {
namespace {

struct Config {
  int64_t runs = 100'000;
  int clusters = 3, scenarios = 20, repeats = 3;
  std::string db = "/tmp/fl_serve_bench.db";
  std::string postgres;
  bool reuse = false;
  int repeat = 7;
};

double MedianMs(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Status Generate(Store& store, const Config& c) {
  const Nanos t0 = 1'760'000'000 * kNsPerSec;
  const int per_night = c.clusters * c.scenarios * c.repeats;
  const int64_t nights = (c.runs + per_night - 1) / per_night;
  uint32_t rng = 1;
  auto noise = [&] {
    rng = rng * 1103515245u + 12345u;
    return static_cast<double>((rng >> 16) % 1001) / 10000.0 - 0.05;  // +/- 5%
  };
  int64_t made = 0;
  const Nanos started = MonoNowNs();
  for (int64_t n = 0; n < nights && made < c.runs; ++n) {
    const bool new_fw = n >= nights * 4 / 5;  // inside the newest 2000 runs trends read
    for (int cl = 0; cl < c.clusters; ++cl)
      for (int s = 0; s < c.scenarios; ++s)
        for (int k = 0; k < c.repeats && made < c.runs; ++k, ++made) {
          RunRecord r;
          char id[64];
          std::snprintf(id, sizeof id, "bench-%07lld", static_cast<long long>(made));
          r.id = id;
          r.scenario_name = "scenario_" + std::to_string(s);
          r.scenario_text = "name: " + r.scenario_name + "\nseed: 1\n";
          r.lab_text = "name: rack" + std::to_string(cl) + "\n";
          r.start_wall_ns = t0 + n * 86400 * kNsPerSec + (cl * 3600 + s * 60 + k) * kNsPerSec;
          r.tags = {{"cluster", "rack" + std::to_string(cl)},
                    {"suite", "nightly"},
                    {"fw", new_fw ? "22.41" : "22.39"},
                    {"kernel", "6.1.0-27"},
                    {"suite_run", "night-" + std::to_string(n)}};
          FL_RETURN_IF_ERROR(store.CreateRun(r));
          const double slower = new_fw && s == 7 ? 1.4 : 1.0;  // the shift trends must find
          std::vector<MetricRecord> m = {
              {r.id, std::string("f0"), "recovery_ms", 800 * slower * (1 + noise()), "ms"},
              {r.id, std::string("f0"), "detection_latency_ms", 40 * (1 + noise()), "ms"},
              {r.id, std::string("f0"), "degraded_ratio", 0.8 * (1 + noise()), "ratio"},
              {r.id, std::nullopt, "baseline_algbw", 9.5e9 * (1 + noise()), "B/s"}};
          FL_RETURN_IF_ERROR(store.ReplaceMetrics(r.id, m));
          const bool failed = (made % 97) == 0;
          if (k == 0 && (n + s) % 4 == 0) {  // some runs in full: a fault, ledger, verdicts
            FaultRecord f;
            f.run_id = r.id;
            f.fault_id = "f0";
            f.kind = "nic_port_flap";
            f.target = "h0/nic0";
            f.scheduled_wall_ns = r.start_wall_ns + 10 * kNsPerSec;
            f.effective_wall_ns = *f.scheduled_wall_ns + 2 * kNsPerMs;
            f.reverted_wall_ns = *f.effective_wall_ns + 5 * kNsPerSec;
            f.revert_verified = true;
            FL_RETURN_IF_ERROR(store.PutFault(f));
            const std::vector<DetectionRecord> ledger = {
                {r.id, "f0", "injector", f.effective_wall_ns, 0.0, "carrier went down"},
                {r.id, "f0", "ccl", *f.effective_wall_ns + 40 * kNsPerMs, 40.0,
                 "fault_detected (rank 0)"}};
            FL_RETURN_IF_ERROR(store.ReplaceDetections(r.id, ledger));
            const std::vector<VerdictRecord> verdicts = {
                {r.id, std::nullopt, "survives", !failed, 0.0, std::nullopt, "outcome survived"},
                {r.id, std::string("f0"), "max_recovery_ms", !failed, m[0].value, 2000.0,
                 "recovery_ms <= 2000 ms"}};
            FL_RETURN_IF_ERROR(store.ReplaceVerdicts(r.id, verdicts));
          }
          FL_RETURN_IF_ERROR(store.FinishRun(r.id, failed ? RunStatus::kFailed : RunStatus::kPassed,
                                             r.start_wall_ns + 60 * kNsPerSec,
                                             failed ? "expectations failed" : ""));
          if (made % 10000 == 0 && made)
            std::fprintf(stderr, "generate: %lld runs (%.0f s)\n", static_cast<long long>(made),
                         static_cast<double>(MonoNowNs() - started) / 1e9);
        }
  }
  std::fprintf(stderr, "generate: %lld runs in %.0f s\n", static_cast<long long>(made),
               static_cast<double>(MonoNowNs() - started) / 1e9);
  return OkStatus();
}

int Main(int argc, char** argv) {
  Config c;
  CLI::App app{"faultline serve's request times on a large store (docs/performance.md)"};
  app.add_option("--runs", c.runs, "runs to generate")->capture_default_str();
  app.add_option("--db", c.db, "SQLite file")->capture_default_str();
  app.add_option("--postgres", c.postgres, "a PostgreSQL database URI instead");
  app.add_flag("--reuse", c.reuse, "measure the store as it is, generate nothing");
  app.add_option("--repeat", c.repeat, "requests per endpoint")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const std::string target = c.postgres.empty() ? c.db : c.postgres;
  if (!c.reuse) {
    if (c.postgres.empty()) {
      std::error_code ec;
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(c.db + suffix, ec);
    }
    auto store = Store::Open(target);
    if (!store.ok()) {
      std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
      return 1;
    }
    if (Status st = Generate(**store, c); !st.ok()) {
      std::fprintf(stderr, "generate: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  auto reader = compare::RunReader::Open(target);
  if (!reader.ok()) {
    std::fprintf(stderr, "%s\n", reader.status().ToString().c_str());
    return 1;
  }
  serve::ResultsSite site(**reader, {});
  std::printf("| request | median ms | min ms | max ms | bytes |\n|---|---|---|---|---|\n");
  for (const char* t : {"/", "/api/v1/overview", "/metrics", "/api/v1/runs?limit=100",
                        "/api/v1/trends?scenario=scenario_7", "/trends?scenario=scenario_7",
                        "/api/v1/trends?scenario=scenario_7&metric=recovery_ms",
                        "/api/v1/accept?baseline=tag:fw%3D22.39&candidate=tag:fw%3D22.41&"
                        "scenario=scenario_7"}) {
    std::vector<double> ms;
    size_t bytes = 0;
    int status = 0;
    for (int i = 0; i < c.repeat; ++i) {
      const Nanos a = MonoNowNs();
      auto r = site.Handle("GET", t);
      ms.push_back(static_cast<double>(MonoNowNs() - a) / 1e6);
      bytes = r.body.size();
      status = r.status;
    }
    std::printf("| `%s` (%d) | %.1f | %.1f | %.1f | %zu |\n", t, status, MedianMs(ms),
                *std::min_element(ms.begin(), ms.end()), *std::max_element(ms.begin(), ms.end()),
                bytes);
    std::fflush(stdout);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("peak RSS %.0f MiB\n", static_cast<double>(ru.ru_maxrss) / 1024);
  return 0;
}

}  // namespace
}  // namespace fl::reports

int main(int argc, char** argv) { return fl::reports::Main(argc, argv); }
