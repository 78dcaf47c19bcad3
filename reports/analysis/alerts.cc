#include "reports/analysis/alerts.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/input_file.h"
#include "common/json_util.h"
#include "common/units.h"
#include "common/yaml_util.h"

namespace fl::reports::analysis {
namespace {

// Alertmanager's zero time: an alert that has not ended.
constexpr std::string_view kZeroTime = "0001-01-01T00:00:00Z";
constexpr size_t kMaxNameLength = 256;
// The labels that name what an alert is about, first found wins (docs/detectors.md).
constexpr std::string_view kTargetLabels[] = {"faultline_target", "target", "host", "node"};

Status At(const std::string& where, const Status& st) { return Status(st).Prepend(where); }

StatusOr<Nanos> TimeOf(const nlohmann::json& v, std::string_view key, const std::string& where) {
  FL_ASSIGN_OR_RETURN(std::string text, JsonAs<std::string>(v, "'" + std::string(key) + "'"));
  auto t = ParseWallIso(text);
  if (!t.ok()) return At(where + ": '" + std::string(key) + "'", t.status());
  return *t;
}

Status CheckName(const std::string& s, const std::string& what, const std::string& where) {
  if (s.empty() || s.size() > kMaxNameLength)
    return InvalidArgumentError(where + ": " + what + " must be 1 to " +
                                std::to_string(kMaxNameLength) + " characters");
  return OkStatus();
}

// Either "KEY" (RFC 3339) or "KEY_ns" (epoch ns), or neither.
StatusOr<std::optional<Nanos>> OwnTime(const nlohmann::json& line, const std::string& key,
                                       const std::string& where) {
  const bool text = line.contains(key), ns = line.contains(key + "_ns");
  if (text && ns)
    return InvalidArgumentError(where + ": give '" + key + "' or '" + key + "_ns', not both");
  if (text) {
    FL_ASSIGN_OR_RETURN(Nanos t, TimeOf(line[key], key, where));
    return std::optional<Nanos>(t);
  }
  if (ns) {
    FL_ASSIGN_OR_RETURN(int64_t v, JsonGet<int64_t>(line, key + "_ns", where));
    if (v < 0) return InvalidArgumentError(where + ": '" + key + "_ns' is negative");
    return std::optional<Nanos>(v);
  }
  return std::optional<Nanos>();
}

struct Copy {
  Alert alert;
  std::string identity;  // fingerprint, or the labels, or the target
};

StatusOr<Copy> ParseOwn(const nlohmann::json& line, const std::string& where) {
  for (const auto& [k, v] : line.items()) {
    static const std::set<std::string> kKeys = {"detector", "time",   "time_ns",
                                                "end",      "end_ns", "target"};
    if (!kKeys.count(k))
      return InvalidArgumentError(where + ": unknown key '" + k +
                                  "' (a line has detector, time or time_ns, end or end_ns, "
                                  "target; or is an Alertmanager notification with 'alerts')");
  }
  Copy c;
  c.alert.where = where;
  FL_ASSIGN_OR_RETURN(c.alert.detector, JsonGet<std::string>(line, "detector", where));
  FL_RETURN_IF_ERROR(CheckName(c.alert.detector, "'detector'", where));
  FL_ASSIGN_OR_RETURN(auto start, OwnTime(line, "time", where));
  if (!start) return InvalidArgumentError(where + ": missing key 'time' (or 'time_ns')");
  c.alert.start_ns = *start;
  FL_ASSIGN_OR_RETURN(c.alert.end_ns, OwnTime(line, "end", where));
  FL_ASSIGN_OR_RETURN(c.alert.target, JsonGetOr<std::string>(line, "target", "", where));
  c.identity = c.alert.target;
  return c;
}

// One alert of an Alertmanager notification.
StatusOr<Copy> ParseManaged(const nlohmann::json& a, const std::string& where) {
  if (!a.is_object()) return InvalidArgumentError(where + ": expected an object");
  Copy c;
  c.alert.where = where;
  FL_ASSIGN_OR_RETURN(auto labels,
                      (JsonGet<std::map<std::string, std::string>>(a, "labels", where)));
  auto name = labels.find("alertname");
  if (name == labels.end()) return InvalidArgumentError(where + ": labels without 'alertname'");
  c.alert.detector = name->second;
  FL_RETURN_IF_ERROR(CheckName(c.alert.detector, "'alertname'", where));
  if (!a.contains("startsAt")) return InvalidArgumentError(where + ": missing key 'startsAt'");
  FL_ASSIGN_OR_RETURN(c.alert.start_ns, TimeOf(a["startsAt"], "startsAt", where));
  if (a.contains("endsAt")) {
    FL_ASSIGN_OR_RETURN(std::string ends, JsonAs<std::string>(a["endsAt"], "'endsAt'"));
    // A firing alert's endsAt is the zero time or, from Alertmanager, a time it will expire
    // at if not sent again: only a resolved one has really ended.
    FL_ASSIGN_OR_RETURN(std::string status, JsonGetOr<std::string>(a, "status", "", where));
    if (ends != kZeroTime && status == "resolved") {
      FL_ASSIGN_OR_RETURN(c.alert.end_ns, TimeOf(a["endsAt"], "endsAt", where));
    }
  }
  for (std::string_view key : kTargetLabels) {
    auto it = labels.find(std::string(key));
    if (it != labels.end()) {
      c.alert.target = it->second;
      break;
    }
  }
  FL_ASSIGN_OR_RETURN(c.identity, JsonGetOr<std::string>(a, "fingerprint", "", where));
  if (c.identity.empty())
    for (const auto& [k, v] : labels) c.identity += k + "=" + v + "\x1f";
  return c;
}

}  // namespace

StatusOr<AlertSet> ParseAlerts(std::string_view text, const std::string& name) {
  // (detector, identity, start) -> index in the result
  std::map<std::tuple<std::string, std::string, Nanos>, size_t> seen;
  AlertSet set;
  auto add = [&](Copy c) {
    ++set.copies;
    auto key = std::make_tuple(c.alert.detector, c.identity, c.alert.start_ns);
    auto [it, fresh] = seen.emplace(key, set.alerts.size());
    if (fresh) {
      set.alerts.push_back(std::move(c.alert));
      return;
    }
    Alert& first = set.alerts[it->second];
    if (!first.end_ns) first.end_ns = c.alert.end_ns;
  };
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#') continue;
    const std::string where = name + ":" + std::to_string(line_no);
    FL_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(line, where));
    if (!j.is_object()) return InvalidArgumentError(where + ": expected a JSON object");
    if (j.contains("alerts")) {
      const auto& alerts = j["alerts"];
      if (!alerts.is_array()) return InvalidArgumentError(where + ": 'alerts' must be an array");
      for (size_t i = 0; i < alerts.size(); ++i) {
        FL_ASSIGN_OR_RETURN(Copy c,
                            ParseManaged(alerts[i], where + ": alerts[" + std::to_string(i) + "]"));
        c.alert.where = where;
        add(std::move(c));
      }
    } else {
      FL_ASSIGN_OR_RETURN(Copy c, ParseOwn(j, where));
      add(std::move(c));
    }
  }
  std::stable_sort(set.alerts.begin(), set.alerts.end(), [](const Alert& a, const Alert& b) {
    return std::tie(a.start_ns, a.detector) < std::tie(b.start_ns, b.detector);
  });
  return set;
}

StatusOr<AlertSet> LoadAlerts(const std::string& path) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, InputKind::kAlerts));
  return ParseAlerts(text, path);
}

StatusOr<std::vector<std::string>> ParseAlertRuleNames(std::string_view text,
                                                       const std::string& name) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, name));
  const YAML::Node root = doc.root();
  FL_RETURN_IF_ERROR(doc.ExpectMap(root, "a Prometheus rules file"));
  if (!doc.Has(root, "groups"))
    return doc.Error(root, "missing key 'groups': not a Prometheus rules file");
  const YAML::Node groups = root["groups"];
  FL_RETURN_IF_ERROR(doc.ExpectSequence(groups, "groups"));
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& g : groups) {
    FL_RETURN_IF_ERROR(doc.ExpectMap(g, "a rule group"));
    if (!doc.Has(g, "rules")) continue;
    const YAML::Node rules = g["rules"];
    FL_RETURN_IF_ERROR(doc.ExpectSequence(rules, "rules"));
    for (const auto& r : rules) {
      FL_RETURN_IF_ERROR(doc.ExpectMap(r, "a rule"));
      if (!doc.Has(r, "alert")) continue;  // a recording rule
      FL_ASSIGN_OR_RETURN(std::string alert, doc.Get<std::string>(r, "alert"));
      if (alert.empty() || alert.size() > kMaxNameLength)
        return doc.Error(r["alert"], "an alert name must be 1 to " +
                                         std::to_string(kMaxNameLength) + " characters");
      if (seen.insert(alert).second) names.push_back(alert);
    }
  }
  if (names.empty()) return doc.Error(root, "no alerting rule (groups[].rules[].alert) in it");
  return names;
}

StatusOr<std::vector<std::string>> LoadAlertRuleNames(const std::string& path) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, InputKind::kAlertRules));
  return ParseAlertRuleNames(text, path);
}

}  // namespace fl::reports::analysis
