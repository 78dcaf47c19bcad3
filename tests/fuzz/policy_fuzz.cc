// Fuzzes the agent policy loader (harness/agent/agent_policy.h): ParseAgentPolicy.
// Seeds: configs/policies/.
#include "harness/agent/agent_policy.h"
#include "tests/fuzz/fuzz_util.h"

using namespace fl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto policy = harness::ParseAgentPolicy(fuzz::AsText(data, size), "policy.yaml");
  if (!policy.ok()) fuzz::CheckLoaderError(policy.status(), "policy.yaml");
  return 0;
}
