// What the lab contract implements itself: the default routing of faults to agents and the
// site options' default host. The kinds and the factory over them are elsewhere (open_lab.h).
#include "harness/lab/lab.h"

#include <cstdlib>

namespace fl::lab {

std::string DefaultAgentFor(const std::string& target, const std::vector<JobHost>& hosts) {
  for (const auto& h : hosts)
    if (target == h.name || target.rfind(h.name + ".", 0) == 0) return h.name;
  if (target.rfind("rank", 0) == 0) {
    int r = std::atoi(target.c_str() + 4);
    for (const auto& h : hosts) {
      if (r < h.ranks) return h.name;
      r -= h.ranks;
    }
  }
  return "fabric";
}

std::string Lab::AgentFor(const std::string& /*kind*/, const std::string& target) const {
  return DefaultAgentFor(target, hosts());
}

std::string SiteOptions::DefaultHost() const {
  if (!host.empty()) return host;
  const char* node = slurm_nics.empty() ? nullptr : std::getenv("SLURMD_NODENAME");
  return node ? node : "";
}

}  // namespace fl::lab
