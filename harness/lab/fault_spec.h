// Fault specs from YAML (a `lab inject --file`, and the scenario loader's fault actions):
//   kind: nic_port_flap
//   target: h0.nic1
//   for: 2s            # optional hold time; negative durations are errors
//   seed: 7            # optional
//   params: {period: 200ms, count: 3}
// Errors are InvalidArgument "FILE:LINE:COL: ..." pointing at the offending key or value; an
// unknown kind, parameter or target is reported where it is written. Nothing is applied.
#pragma once

#include "common/yaml_util.h"
#include "injectors/fabric.h"
#include "injectors/injector.h"

namespace fl::lab {

// fabric may be null: the target is then not checked.
StatusOr<injectors::FaultSpec> ParseFaultSpec(const YamlDoc& doc, const YAML::Node& node,
                                              const injectors::InjectorRegistry& registry,
                                              const injectors::Fabric* fabric);
StatusOr<injectors::FaultSpec> LoadFaultSpecFile(const std::string& path,
                                                 const injectors::InjectorRegistry& registry,
                                                 const injectors::Fabric* fabric);

// Checks a spec against its injector (parameters) and the fabric (target): the errors a
// command-line fault gets.
Status CheckFaultSpec(const injectors::FaultSpec& spec, const injectors::InjectorRegistry& registry,
                      const injectors::Fabric* fabric);

}  // namespace fl::lab
