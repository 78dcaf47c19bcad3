#include "harness/lab/fault_spec.h"

#include "common/input_file.h"
#include "common/units.h"

namespace fl::lab {

namespace {
// Target resolution errors are NotFound; any other Prepare failure (a link already down) is
// not about the spec and is left for the apply step to report.
Status CheckTarget(injectors::Injector& inj, const injectors::FaultSpec& spec,
                   const injectors::Fabric& fabric) {
  auto h = inj.Prepare(spec, fabric);
  if (!h.ok() && h.status().code() == Code::kNotFound) return h.status();
  return OkStatus();
}
}  // namespace

Status CheckFaultSpec(const injectors::FaultSpec& spec, const injectors::InjectorRegistry& registry,
                      const injectors::Fabric* fabric) {
  if (spec.duration < 0) return InvalidArgumentError("the hold time must not be negative");
  FL_ASSIGN_OR_RETURN(auto inj, registry.Create(spec.kind));
  FL_RETURN_IF_ERROR(inj->Validate(spec));
  if (fabric) FL_RETURN_IF_ERROR(CheckTarget(*inj, spec, *fabric));
  return OkStatus();
}

StatusOr<injectors::FaultSpec> ParseFaultSpec(const YamlDoc& doc, const YAML::Node& node,
                                              const injectors::InjectorRegistry& registry,
                                              const injectors::Fabric* fabric) {
  FL_RETURN_IF_ERROR(doc.CheckKeys(node, {"kind", "target", "for", "seed", "params"}, "fault"));
  injectors::FaultSpec spec;
  FL_ASSIGN_OR_RETURN(spec.kind, doc.Get<std::string>(node, "kind"));
  auto inj = registry.Create(spec.kind);
  if (!inj.ok()) return doc.Error(node["kind"], inj.status().message());
  FL_ASSIGN_OR_RETURN(spec.target, doc.Get<std::string>(node, "target"));
  if (doc.Has(node, "for")) {
    const YAML::Node& f = node["for"];
    if (f.IsScalar() && !f.Scalar().empty() && f.Scalar()[0] == '-')
      return doc.Error(f, "for: a duration must not be negative ('" + f.Scalar() + "')");
    // As a scenario's fault duration (harness/scenario/scenario_loader.h limits).
    FL_ASSIGN_OR_RETURN(spec.duration, doc.AsDurationIn(f, "for", 0, 7 * 24 * 3600 * kNsPerSec));
  }
  FL_ASSIGN_OR_RETURN(spec.seed, doc.GetOr<uint64_t>(node, "seed", 1));
  if (doc.Has(node, "params")) {
    const YAML::Node& p = node["params"];
    FL_RETURN_IF_ERROR(doc.ExpectMap(p, "params"));
    for (auto it = p.begin(); it != p.end(); ++it) {
      if (!it->second.IsScalar())
        return doc.Error(it->second, "parameter values must be single values");
      const std::string& v = it->second.Scalar();
      if (!v.empty() && v[0] == '-' && ParseDuration(v.substr(1)).ok())
        return doc.Error(it->second, it->first.Scalar() + ": must not be negative ('" + v + "')");
      spec.params[it->first.Scalar()] = v;
    }
    Status s = (*inj)->Validate(spec);
    if (!s.ok()) {
      // Point at the parameter the message names, else at params.
      for (auto it = p.begin(); it != p.end(); ++it)
        if (s.message().find("'" + it->first.Scalar() + "'") != std::string::npos)
          return doc.Error(it->first, s.message());
      return doc.Error(p, s.message());
    }
  } else {
    Status s = (*inj)->Validate(spec);
    if (!s.ok()) return doc.Error(node, s.message());
  }
  if (fabric) {
    Status s = CheckTarget(**inj, spec, *fabric);
    if (!s.ok()) return doc.Error(node["target"], s.message());
  }
  return spec;
}

StatusOr<injectors::FaultSpec> LoadFaultSpecFile(const std::string& path,
                                                 const injectors::InjectorRegistry& registry,
                                                 const injectors::Fabric* fabric) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::LoadFile(path, InputKind::kScenario));
  return ParseFaultSpec(doc, doc.root(), registry, fabric);
}

}  // namespace fl::lab
