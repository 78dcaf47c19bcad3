#include "harness/lab/lab_catalog.h"

#include <algorithm>
#include <set>

#include "injectors/injector.h"

namespace fl::harness {

std::vector<std::string> TargetClassesOfKind(const std::string& kind) {
  const injectors::InjectorInfo* info = injectors::BuiltinInjectors().Describe(kind);
  return info == nullptr ? std::vector<std::string>{} : info->target_classes;
}

LabFaultCatalog::LabFaultCatalog(const lab::Topology& topology, const lab::LabPlan& plan,
                                 std::vector<std::string> injector_kinds)
    : kinds_(std::move(injector_kinds)) {
  std::set<std::string> rails;
  for (const auto& l : plan.links) {
    if (l.kind == lab::LinkKind::kHost) {
      targets_["nic"].push_back(l.a_name);
      targets_["tor_port"].push_back(l.b_name);
      rails.insert("rail" + std::to_string(l.rail));
    } else if (l.kind == lab::LinkKind::kUplink) {
      targets_["uplink"].push_back(l.a_name);
    }
  }
  targets_["rail"].assign(rails.begin(), rails.end());
  for (int h = 0; h < topology.hosts; ++h) {
    targets_["host"].push_back("h" + std::to_string(h));
    for (int g = 0; g < topology.gpus_per_host; ++g) {
      targets_["container"].push_back("h" + std::to_string(h) + ".rank" + std::to_string(g));
      targets_["rank"].push_back("rank" + std::to_string(h * topology.gpus_per_host + g));
    }
  }
}

std::vector<std::string> LabFaultCatalog::TargetClasses(const std::string& kind) const {
  return TargetClassesOfKind(kind);
}

std::vector<std::string> LabFaultCatalog::Targets(const std::string& target_class) const {
  auto it = targets_.find(target_class);
  return it == targets_.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace fl::harness
