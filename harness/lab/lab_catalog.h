// The FaultCatalog of a local lab: which fault kinds exist (the injector registry) and which
// topology names each kind can aim at, so that a scenario is checked against the real lab
// before anything is provisioned, and target_class draws pick from real names.
//
// Target classes and the names they hold (see docs/scenarios.md):
//   host      h0, h1, ...                  nic       h0.nic0, h0.nic1a, ...
//   rail      rail0, rail1, ...            tor_port  tor0.h0, tor1a.h3, ...
//   uplink    tor0.up0, ...                container h0.rank0, h0.rank1, ...
//   rank      rank0, rank1, ...
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/lab/topology.h"
#include "harness/scenario/scenario_loader.h"

namespace fl::harness {

class LabFaultCatalog : public FaultCatalog {
 public:
  // The kinds come from injector_kinds (the registry's names); plan gives the names.
  LabFaultCatalog(const lab::Topology& topology, const lab::LabPlan& plan,
                  std::vector<std::string> injector_kinds);
  std::vector<std::string> Kinds() const override { return kinds_; }
  std::vector<std::string> TargetClasses(const std::string& kind) const override;
  std::vector<std::string> Targets(const std::string& target_class) const override;

 private:
  std::vector<std::string> kinds_;
  std::map<std::string, std::vector<std::string>> targets_;
};

// The classes each built-in injector accepts, first the default.
std::vector<std::string> TargetClassesOfKind(const std::string& kind);

}  // namespace fl::harness

namespace fl::lab {

// The host-side fault kinds and their target classes on labs without switch access
// (inventories, Slurm): nic_port_flap, link_blackhole, packet_loss, bandwidth_throttle,
// pfc_storm take nic/host/rail, container_kill takes container/rank. Targets: host = the host
// names, nic = "<host>.<nic>", rail = rail0.., container = "<host>.rank<i>", rank = rank0..
// (hosts in rank order).
std::vector<std::string> HostSideFaultKinds();
std::unique_ptr<harness::StaticFaultCatalog> HostSideFaultCatalog(
    const std::vector<std::string>& hosts, const std::vector<std::string>& nic_names,
    int ranks_per_host);

}  // namespace fl::lab
