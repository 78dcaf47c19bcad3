#include "harness/suite/suite_file.h"

#include <unistd.h>

#include "ccl_under_test/tools/ccl_plugins.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "common/yaml_util.h"
#include "harness/scenario/scenario_loader.h"

namespace fl::harness::suite {
namespace {

using reports::compare::ParseTolerance;
using reports::compare::Tolerance;

// Bounds on the suite's numbers (docs/suites.md).
constexpr uint32_t kMaxRepeat = 1000;
constexpr uint32_t kMaxBaselineRuns = 1000;
constexpr size_t kMaxScenarios = 1000;
constexpr size_t kMaxCcls = 16;
constexpr Nanos kMaxRunTimeout = 7 * 24 * 3600 * kNsPerSec;
constexpr double kMaxRelative = 10.0;
constexpr double kMaxAbsolute = 1e12;

Status ParseTags(const YamlDoc& doc, const YAML::Node& n, std::map<std::string, std::string>* out) {
  FL_RETURN_IF_ERROR(doc.ExpectMap(n, "tags"));
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->second.IsScalar()) return doc.Error(it->second, "tag values must be single values");
    std::string k = it->first.Scalar();
    if (k.empty() || k.find('=') != std::string::npos || k.find(',') != std::string::npos)
      return doc.Error(it->first, "tag key '" + k + "' must be non-empty without '=' or ','");
    if (k == "suite_run")
      return doc.Error(it->first, "tag 'suite_run' is set by faultline suite itself");
    (*out)[k] = it->second.Scalar();
  }
  return OkStatus();
}

StatusOr<uint32_t> ParseRepeat(const YamlDoc& doc, const YAML::Node& map) {
  return doc.GetBounded<uint32_t>(map, "repeat", 1, kMaxRepeat);
}

Status ParseScenarioEntry(const YamlDoc& doc, const YAML::Node& n, const std::string& suite_path,
                          SuiteScenario* s) {
  s->where = doc.Where(n);
  // Copy-constructed, never assigned: assigning a YAML::Node rewrites the node it refers to.
  const YAML::Node path_node = n.IsMap() ? n["path"] : n;
  if (!n.IsScalar()) {
    FL_RETURN_IF_ERROR(doc.ExpectMap(n, "scenario entry"));
    FL_RETURN_IF_ERROR(doc.CheckKeys(n, {"path", "ccls", "repeat", "seed", "tags"}, "scenario"));
    if (!doc.Has(n, "path")) return doc.Error(n, "missing required key 'path'");
    if (doc.Has(n, "ccls")) FL_RETURN_IF_ERROR(ParseCcls(doc, n["ccls"], &s->ccls));
    if (doc.Has(n, "repeat")) {
      FL_ASSIGN_OR_RETURN(s->repeat, ParseRepeat(doc, n));
    }
    if (doc.Has(n, "seed")) {
      FL_ASSIGN_OR_RETURN(s->seed, doc.Get<uint64_t>(n, "seed"));
    }
    if (doc.Has(n, "tags")) FL_RETURN_IF_ERROR(ParseTags(doc, n["tags"], &s->tags));
  }
  FL_ASSIGN_OR_RETURN(std::string rel, doc.As<std::string>(path_node, "path"));
  s->path = PathBeside(rel, suite_path);
  if (access(s->path.c_str(), R_OK) != 0)
    return doc.Error(path_node, "scenario file '" + rel + "' not found (looked beside " +
                                    suite_path + ", in the current directory and above the suite)");
  return OkStatus();
}

StatusOr<Tolerance> ParseToleranceNode(const YamlDoc& doc, const YAML::Node& n) {
  if (n.IsScalar()) {
    auto t = ParseTolerance(n.Scalar());
    if (!t.ok()) return doc.Error(n, t.status().message());
    return *t;
  }
  FL_RETURN_IF_ERROR(doc.ExpectMap(n, "tolerance"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(n, {"relative", "absolute"}, "tolerance"));
  Tolerance t;
  for (const char* key : {"relative", "absolute"}) {
    if (!doc.Has(n, key)) continue;
    // relative: a fraction (10 = 1000 %); absolute: in the metric's own unit.
    FL_ASSIGN_OR_RETURN(
        double v, doc.GetBounded<double>(n, key, 0.0, key[0] == 'r' ? kMaxRelative : kMaxAbsolute));
    (key[0] == 'r' ? t.relative : t.absolute) = v;
  }
  if (!t.relative && !t.absolute) return doc.Error(n, "a tolerance needs relative or absolute");
  return t;
}

Status ParseRegression(const YamlDoc& doc, const YAML::Node& n, RegressionSpec* r) {
  FL_RETURN_IF_ERROR(doc.ExpectMap(n, "regression"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(
      n, {"enabled", "baseline_runs", "metrics", "confidence", "resamples", "shift_nights"},
      "regression"));
  FL_ASSIGN_OR_RETURN(r->enabled, doc.GetOr<bool>(n, "enabled", true));
  FL_ASSIGN_OR_RETURN(r->baseline_runs,
                      doc.GetBoundedOr<uint32_t>(n, "baseline_runs", 1, 1, kMaxBaselineRuns));
  if (doc.Has(n, "metrics")) {
    FL_RETURN_IF_ERROR(doc.ExpectSequence(n["metrics"], "metrics"));
    for (const auto& m : n["metrics"]) {
      FL_ASSIGN_OR_RETURN(std::string name, doc.As<std::string>(m, "metric"));
      if (reports::compare::DefaultPolicy(name).direction == reports::compare::Direction::kNeutral)
        return doc.Error(m, "metric '" + name +
                                "' has no worse direction (see docs/metrics.md): it cannot "
                                "regress");
      r->metrics.push_back(name);
    }
  }
  // Open at both ends: the bounded read rejects NaN and what lies outside, this the ends.
  FL_ASSIGN_OR_RETURN(r->confidence,
                      doc.GetBoundedOr<double>(n, "confidence", r->confidence, 0.5, 1.0));
  if (r->confidence <= 0.5 || r->confidence >= 1)
    return doc.Error(n["confidence"], "confidence must be in (0.5, 1), e.g. 0.95");
  FL_ASSIGN_OR_RETURN(r->resamples,
                      doc.GetBoundedOr<int>(n, "resamples", r->resamples, 100, 1000000));
  FL_ASSIGN_OR_RETURN(r->shift_nights,
                      doc.GetBoundedOr<uint32_t>(n, "shift_nights", r->shift_nights, 0, 365));
  return OkStatus();
}

}  // namespace

namespace {

StatusOr<CclSpec> ParseCcl(const YamlDoc& doc, const YAML::Node& n) {
  CclSpec c;
  if (n.IsScalar()) {
    c.name = n.Scalar();
  } else {
    FL_RETURN_IF_ERROR(doc.ExpectMap(n, "ccl"));
    FL_RETURN_IF_ERROR(doc.CheckKeys(n, {"name", "options"}, "ccl"));
    FL_ASSIGN_OR_RETURN(c.name, doc.Get<std::string>(n, "name"));
  }
  // Names and options are checked against the CCL's own descriptor (ccl_plugins.h).
  auto plugin = ccl::FindCclPlugin(c.name);
  if (!plugin.ok()) return doc.Error(n.IsMap() ? n["name"] : n, plugin.status().message());
  if (n.IsMap() && doc.Has(n, "options")) {
    const YAML::Node o = n["options"];
    FL_RETURN_IF_ERROR(doc.ExpectMap(o, "options"));
    for (auto it = o.begin(); it != o.end(); ++it) {
      if (!it->second.IsScalar())
        return doc.Error(it->second, "option values must be single values");
      const std::string k = it->first.Scalar();
      if (std::string why = (*plugin)->options.Check(k, it->second.Scalar()); !why.empty())
        return doc.Error((*plugin)->options.Find(k) ? it->second : it->first, why);
      c.options[k] = it->second.Scalar();
    }
  }
  return c;
}

}  // namespace

Status ParseCcls(const YamlDoc& doc, const YAML::Node& n, std::vector<CclSpec>* out) {
  FL_RETURN_IF_ERROR(doc.ExpectSequence(n, "ccls"));
  if (n.size() == 0) return doc.Error(n, "ccls must name at least one CCL (or be left out)");
  if (n.size() > kMaxCcls)
    return doc.Error(n, "ccls names at most " + std::to_string(kMaxCcls) + " CCLs");
  for (const auto& c : n) {
    FL_ASSIGN_OR_RETURN(CclSpec spec, ParseCcl(doc, c));
    out->push_back(std::move(spec));
  }
  return OkStatus();
}

StatusOr<Suite> LoadSuiteFile(const std::string& path) {
  auto text = ReadInputFile(path, InputKind::kSuite);
  if (!text.ok()) return InvalidArgumentError(path + ": cannot read the suite file");
  return ParseSuite(*text, path);
}

StatusOr<Suite> ParseSuite(std::string_view text, const std::string& name) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, name));
  const YAML::Node root = doc.root();
  FL_RETURN_IF_ERROR(doc.ExpectMap(root, "suite"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(root,
                                   {"name", "description", "repeat", "tags", "ccls", "scenarios",
                                    "run_timeout", "tolerances", "regression"},
                                   "suite"));
  Suite s;
  s.path = name;
  FL_ASSIGN_OR_RETURN(s.name, doc.Get<std::string>(root, "name"));
  FL_ASSIGN_OR_RETURN(s.description, doc.GetOr<std::string>(root, "description", ""));
  if (doc.Has(root, "repeat")) {
    FL_ASSIGN_OR_RETURN(s.repeat, ParseRepeat(doc, root));
  }
  if (doc.Has(root, "tags")) FL_RETURN_IF_ERROR(ParseTags(doc, root["tags"], &s.tags));
  if (doc.Has(root, "ccls")) FL_RETURN_IF_ERROR(ParseCcls(doc, root["ccls"], &s.ccls));
  FL_ASSIGN_OR_RETURN(s.run_timeout_ns, doc.GetDurationIn(root, "run_timeout", s.run_timeout_ns,
                                                          kNsPerSec, kMaxRunTimeout));
  FL_ASSIGN_OR_RETURN(const YAML::Node sc,
                      doc.GetList(root, "scenarios", 1, kMaxScenarios, "scenario files"));
  for (const auto& e : sc) {
    SuiteScenario entry;
    FL_RETURN_IF_ERROR(ParseScenarioEntry(doc, e, name, &entry));
    s.scenarios.push_back(std::move(entry));
  }
  if (doc.Has(root, "tolerances")) {
    const YAML::Node t = root["tolerances"];
    FL_RETURN_IF_ERROR(doc.ExpectMap(t, "tolerances"));
    for (auto it = t.begin(); it != t.end(); ++it) {
      std::string metric = it->first.Scalar();
      if (reports::compare::DefaultPolicy(metric).direction ==
          reports::compare::Direction::kNeutral)
        return doc.Error(it->first, "metric '" + metric +
                                        "' has no worse direction (see docs/metrics.md): a "
                                        "tolerance for it means nothing");
      FL_ASSIGN_OR_RETURN(Tolerance tol, ParseToleranceNode(doc, it->second));
      s.policies.SetTolerance(metric, tol);
    }
  }
  if (doc.Has(root, "regression"))
    FL_RETURN_IF_ERROR(ParseRegression(doc, root["regression"], &s.regression));
  return s;
}

}  // namespace fl::harness::suite
