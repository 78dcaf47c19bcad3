#include "reports/analysis/failure_rates.h"

#include <yaml-cpp/yaml.h>

#include <set>

#include "common/clock.h"
#include "common/input_file.h"
#include "common/name_chars.h"
#include "common/yaml_util.h"

namespace fl::reports::analysis {
namespace {

// A component shared by more GPUs than the largest cluster a projection takes, or failing more
// often than every 15 minutes, is a typo, not a fleet.
constexpr double kMaxGpusPerComponent = 1'000'000;
constexpr double kMaxFailuresPerDay = 100;
constexpr Nanos kMaxCost = 30 * 24 * 3600 * kNsPerSec;
constexpr size_t kMaxClasses = 256;

bool IsName(std::string_view s) { return IsNameOf(s, 64, "_-."); }

StatusOr<FailureClass> ParseClass(const YamlDoc& doc, const YAML::Node& n) {
  FL_RETURN_IF_ERROR(doc.ExpectMap(n, "a failure class"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(
      n, {"name", "fault_kind", "cost", "restart", "gpus_per_component", "failures_per_day"},
      "failure class"));
  FailureClass c;
  c.where = doc.Where(n);
  FL_ASSIGN_OR_RETURN(c.name, doc.Get<std::string>(n, "name"));
  if (!IsName(c.name))
    return doc.Error(n["name"], "a class name is 1 to 64 letters, digits, '_', '-' or '.', not '" +
                                    c.name + "'");
  const bool has_kind = doc.Has(n, "fault_kind"), has_cost = doc.Has(n, "cost");
  if (has_kind == has_cost)
    return doc.Error(n, "class '" + c.name +
                            "' needs exactly one of fault_kind (a measured fault kind) or cost "
                            "(a fixed cost per failure)");
  if (has_kind) {
    FL_ASSIGN_OR_RETURN(c.fault_kind, doc.Get<std::string>(n, "fault_kind"));
    if (!IsName(c.fault_kind))
      return doc.Error(n["fault_kind"], "'" + c.fault_kind + "' is not a fault kind");
    if (doc.Has(n, "restart"))
      return doc.Error(n["restart"],
                       "restart goes with cost: a measured fault kind's runs say whether the job "
                       "restarted");
  } else {
    FL_ASSIGN_OR_RETURN(Nanos cost, doc.AsDurationIn(n["cost"], "cost", 0, kMaxCost));
    c.cost_s = static_cast<double>(cost) / kNsPerSec;
    FL_ASSIGN_OR_RETURN(c.restart, doc.GetOr<bool>(n, "restart", false));
  }
  FL_ASSIGN_OR_RETURN(c.gpus_per_component, doc.GetBoundedOr<double>(n, "gpus_per_component", 1.0,
                                                                     1.0, kMaxGpusPerComponent));
  FL_ASSIGN_OR_RETURN(c.failures_per_day,
                      doc.GetBounded<double>(n, "failures_per_day", 0.0, kMaxFailuresPerDay));
  return c;
}

}  // namespace

StatusOr<FailureRates> ParseFailureRates(std::string_view text, const std::string& name) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, name));
  const YAML::Node root = doc.root();
  FL_RETURN_IF_ERROR(doc.ExpectMap(root, "a failure rates file"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(root, {"classes"}, "failure rates file"));
  FL_ASSIGN_OR_RETURN(const YAML::Node classes,
                      doc.GetList(root, "classes", 1, kMaxClasses, "failure classes"));
  FailureRates r;
  r.source = name;
  std::set<std::string> seen;
  for (const auto& n : classes) {
    FL_ASSIGN_OR_RETURN(FailureClass c, ParseClass(doc, n));
    if (!seen.insert(c.name).second)
      return doc.Error(n["name"], "class '" + c.name + "' is named twice");
    r.classes.push_back(std::move(c));
  }
  return r;
}

StatusOr<FailureRates> LoadFailureRates(const std::string& path) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, InputKind::kFailureRates));
  return ParseFailureRates(text, path);
}

}  // namespace fl::reports::analysis
