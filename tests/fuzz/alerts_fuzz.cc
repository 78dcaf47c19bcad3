// Fuzzes the alerts files of `faultline score` (reports/analysis/alerts.h): ParseAlerts (a
// detector's JSON lines, Alertmanager's webhook notifications), then, for a file that parses,
// the scores against two fixed runs (reports/analysis/detector_score.h): every alert counted
// once (true + false = in windows, plus outside), precision and recall in [0, 1], latencies
// within the skew and grace of a fault. Seeds: tests/fuzz/corpus/alerts/.
#include "reports/analysis/alerts.h"
#include "reports/analysis/detector_score.h"
#include "tests/fuzz/fuzz_util.h"

using namespace fl;
using namespace fl::reports::analysis;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto set = ParseAlerts(fuzz::AsText(data, size), "a.jsonl");
  if (!set.ok()) {
    fuzz::CheckLoaderError(set.status(), "a.jsonl");
    return 0;
  }
  FL_FUZZ_CHECK(set->alerts.size() <= set->copies);
  constexpr Nanos kT = 1'796'582'998 * kNsPerSec;
  std::vector<TruthRun> runs(2);
  runs[0] = {"r1", kT, kT + 60 * kNsPerSec, {}};
  runs[0].faults.push_back({"f0", "packet_loss", "h1.nic0", kT + kNsPerSec, kT + 5 * kNsPerSec});
  runs[1] = {"r2", kT + 100 * kNsPerSec, kT + 160 * kNsPerSec, {}};
  runs[1].faults.push_back({"f0", "nic_port_flap", "leaf0:swp1", kT + 101 * kNsPerSec, {}});
  ScoreOptions o;
  ScoreReport r = ScoreDetectors(runs, set->alerts, {"never"}, o);
  size_t counted = r.outside;
  for (const auto& d : r.detectors) {
    FL_FUZZ_CHECK(d.true_alerts + d.false_alarms == d.alerts);
    FL_FUZZ_CHECK(d.detected <= d.faults && d.faults == 2);
    FL_FUZZ_CHECK(d.latencies_s.size() == d.detected);
    FL_FUZZ_CHECK(!d.precision || (*d.precision >= 0 && *d.precision <= 1));
    FL_FUZZ_CHECK(d.recall >= 0 && d.recall <= 1 && d.f1 >= 0 && d.f1 <= 1);
    for (double l : d.latencies_s) FL_FUZZ_CHECK(l >= -1 && l <= 60 + 60);
    counted += d.alerts;
  }
  FL_FUZZ_CHECK(counted == set->alerts.size());
  (void)RenderScoreText(r);
  (void)ScoreJson(r);
  return 0;
}
