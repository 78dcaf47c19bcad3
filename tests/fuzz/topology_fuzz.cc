// Fuzzes the lab topology loader (harness/lab/topology.h): ParseTopology, then, for a
// topology that parses, the plan of its kernel objects (names, links, addresses) and the
// ToR names, as `faultline lab up` computes them before touching anything.
// Seeds: configs/labs/.
#include "harness/lab/topology.h"
#include "tests/fuzz/fuzz_util.h"

using namespace fl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string kName = FL_SOURCE_DIR "/configs/labs/fuzz-input.yaml";
  auto topology = lab::ParseTopology(fuzz::AsText(data, size), kName);
  if (!topology.ok()) {
    fuzz::CheckLoaderError(topology.status(), kName);
    return 0;
  }
  const lab::Topology& t = *topology;
  FL_FUZZ_CHECK(t.hosts > 0 && t.hosts_per_tor > 0);
  FL_FUZZ_CHECK(lab::IsValidLabName(t.name));
  lab::LabPlan plan = lab::PlanLab(t, t.name, 0);
  FL_FUZZ_CHECK(!plan.nodes.empty());
  for (int rail = 0; rail < t.nics_per_host; ++rail)
    for (int plane = 0; plane < t.tors_per_rail; ++plane)
      for (int pod = 0; pod < t.pods(); ++pod) (void)lab::TorName(t, rail, plane, pod);
  return 0;
}
