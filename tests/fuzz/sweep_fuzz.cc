// Fuzzes the sweep file loader and the axis parser (harness/suite/sweep_plan.h): ParseSweep,
// with the input named as a file in configs/sweeps/ so that the scenario resolves as the
// shipped sweep's does; a sweep that parses with at most 64 points is planned (every point's
// scenario text made) and each point must load as YAML again. Each `vary` line is an axis.
// Seeds: configs/sweeps/.
#include <yaml-cpp/yaml.h>

#include "harness/suite/sweep_plan.h"
#include "tests/fuzz/fuzz_util.h"

using namespace fl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string kName = FL_SOURCE_DIR "/configs/sweeps/fuzz-input.yaml";
  const std::string text(fuzz::AsText(data, size));
  // The first line alone, as a --vary flag.
  const std::string line = text.substr(0, text.find('\n'));
  auto axis = harness::suite::ParseAxis(line, "--vary");
  if (axis.ok()) {
    FL_FUZZ_CHECK(axis->values.size() >= 1 && axis->values.size() <= 100);
    FL_FUZZ_CHECK(axis->numbers.size() == axis->values.size());
  }
  auto sweep = harness::suite::ParseSweep(text, kName);
  if (!sweep.ok()) {
    fuzz::CheckLoaderError(sweep.status(), kName);
    return 0;
  }
  FL_FUZZ_CHECK(sweep->repeats >= 1 && sweep->repeats <= 100);
  FL_FUZZ_CHECK(sweep->ccl_sets.size() == sweep->ccls.size());
  size_t points = 1;
  for (const auto& a : sweep->axes) points *= a.values.size();
  if (sweep->axes.empty() || points > 64) return 0;
  auto planned = harness::suite::PlanPoints(*sweep);
  if (!planned.ok()) return 0;  // a path the scenario does not have: said, not planned
  FL_FUZZ_CHECK(planned->size() == points);
  for (const auto& p : *planned) {
    try {
      YAML::Node n = YAML::Load(p.yaml);
      FL_FUZZ_CHECK(n.IsMap());
    } catch (const YAML::Exception&) {
      FL_FUZZ_CHECK(false);  // a point's text is always YAML
    }
  }
  return 0;
}
