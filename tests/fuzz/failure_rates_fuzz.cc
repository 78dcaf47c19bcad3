// Fuzzes the failure rates loader of `faultline project` (reports/analysis/failure_rates.h):
// ParseFailureRates, then, for a file that parses, the projection (reports/analysis/goodput.h)
// on a small job with one measured fault of every kind the file names, whose expected ETTR
// must be at most 1 and whose simulated figures must lie in [0, 1] and in order.
// Seeds: configs/failure_rates/.
#include "reports/analysis/failure_rates.h"
#include "reports/analysis/goodput.h"
#include "tests/fuzz/fuzz_util.h"

using namespace fl;
using namespace fl::reports::analysis;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto rates = ParseFailureRates(fuzz::AsText(data, size), "rates.yaml");
  if (!rates.ok()) {
    fuzz::CheckLoaderError(rates.status(), "rates.yaml");
    return 0;
  }
  std::vector<MeasuredFault> measured;
  for (const auto& c : rates->classes) {
    MeasuredFault f;
    f.kind = c.fault_kind;
    f.throughput_loss_s = 3;
    measured.push_back(f);
  }
  ProjectionOptions o;
  o.cluster_gpus = 8;
  o.job_days = 1;
  o.trials = 20;
  auto p = ProjectGoodput(*rates, measured, o);
  FL_FUZZ_CHECK(p.ok());
  FL_FUZZ_CHECK(p->expected_ettr <= 1);
  FL_FUZZ_CHECK(0 <= p->ettr_p5 && p->ettr_p5 <= p->ettr_median && p->ettr_median <= p->ettr_p95 &&
                p->ettr_p95 <= 1);
  FL_FUZZ_CHECK(p->classes.size() == rates->classes.size());
  (void)RenderProjectionText(*p);
  (void)ProjectionJson(*p);
  return 0;
}
