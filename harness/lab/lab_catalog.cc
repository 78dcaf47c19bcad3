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

namespace fl::lab {

std::vector<std::string> HostSideFaultKinds() {
  return injectors::BuiltinInjectors().NamesWhere(
      [](const injectors::InjectorInfo& i) { return i.host_side(); });
}

std::unique_ptr<harness::StaticFaultCatalog> HostSideFaultCatalog(
    const std::vector<std::string>& hosts, const std::vector<std::string>& nic_names,
    int ranks_per_host) {
  auto c = std::make_unique<harness::StaticFaultCatalog>();
  // The classes of harness/coordinator/lab_catalog.cc without the switch-side ones (tor_port,
  // uplink): these labs have no switch access. First is the default.
  static const std::set<std::string> kHostClasses = {"nic", "host", "rail", "container", "rank"};
  for (const auto& kind : HostSideFaultKinds()) {
    std::vector<std::string> classes;
    for (const auto& cls : injectors::BuiltinInjectors().Describe(kind)->target_classes)
      if (kHostClasses.count(cls)) classes.push_back(cls);
    c->AddKind(kind, std::move(classes));
  }
  std::vector<std::string> host, nic, rail, container, rank;
  int r = 0;
  for (const auto& h : hosts) {
    host.push_back(h);
    for (const auto& n : nic_names) nic.push_back(h + "." + n);
    for (int g = 0; g < ranks_per_host; ++g) {
      container.push_back(h + ".rank" + std::to_string(g));
      rank.push_back("rank" + std::to_string(r++));
    }
  }
  for (size_t i = 0; i < nic_names.size(); ++i) rail.push_back("rail" + std::to_string(i));
  c->AddTargets("host", std::move(host));
  c->AddTargets("nic", std::move(nic));
  c->AddTargets("rail", std::move(rail));
  c->AddTargets("container", std::move(container));
  c->AddTargets("rank", std::move(rank));
  return c;
}

}  // namespace fl::lab
