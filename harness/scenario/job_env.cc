#include "harness/scenario/job_env.h"

#include "ccl_under_test/tools/ccl_plugins.h"

namespace fl::harness {
namespace {

std::map<std::string, std::string> CclDefaults(const Scenario& s, const ccl::CclEnvContext& lab) {
  auto plugin = ccl::FindCclPlugin(s.job.ccl);
  if (!plugin.ok() || !(*plugin)->default_env) return {};
  return (*plugin)->default_env(lab);
}

}  // namespace

std::map<std::string, std::string> EffectiveJobEnv(const Scenario& s,
                                                   const ccl::CclEnvContext& lab) {
  std::map<std::string, std::string> env = CclDefaults(s, lab);
  for (const auto& [k, v] : s.job.env) env[k] = v;
  return env;
}

std::string JobEnvSource(const Scenario& s, const std::string& name,
                         const ccl::CclEnvContext& lab) {
  if (s.job.env.count(name)) return "job.env";
  if (CclDefaults(s, lab).count(name)) return "the " + s.job.ccl + " default env";
  return "";
}

}  // namespace fl::harness
