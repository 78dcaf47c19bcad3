#include "reports/render/openmetrics.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "common/name_chars.h"

namespace fl::reports::render {
namespace {

// A stored metric (name, unit as in docs/metrics.md) as a gauge family in base units.
struct Family {
  std::string name;  // without the faultline_run_ / faultline_fault_ prefix
  double scale = 1;  // stored value × scale = exported value
  std::string help;
};

std::optional<Family> FamilyOf(const MetricRecord& m) {
  auto strip = [](const std::string& n, std::string_view suffix) {
    return n.size() > suffix.size() &&
                   n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0
               ? n.substr(0, n.size() - suffix.size())
               : n;
  };
  const std::string help = m.name + " (" + m.unit + " in the results database, docs/metrics.md)";
  if (m.unit == "ms") return Family{strip(m.name, "_ms") + "_seconds", 1e-3, help};
  if (m.unit == "s") return Family{strip(m.name, "_s") + "_seconds", 1, help};
  if (m.unit == "GPU-s") return Family{strip(m.name, "_gpu_s") + "_gpu_seconds", 1, help};
  if (m.unit == "B/s") return Family{m.name + "_bytes_per_second", 1, help};
  if (m.unit == "ratio") return Family{m.name, 1, help};
  if (m.unit == "bool") return Family{m.name, 1, help + ", 1 = yes"};
  if (m.unit == "count" || m.unit == "rows") return Family{m.name, 1, help};
  return std::nullopt;  // enums (outcome) are exported as a state set below
}

// The text format's escapes: backslash and line feed always (HELP text), double quote too
// where the text stands in quotes (label values).
std::string Escape(const std::string& v, bool in_quotes) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"' && in_quotes)
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string EscapeHelp(const std::string& v) { return Escape(v, /*in_quotes=*/false); }

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string LabelText(const Labels& labels) {
  std::string s = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) s += ",";
    s += labels[i].first + "=\"" + EscapeLabelValue(labels[i].second) + "\"";
  }
  return s + "}";
}

// Families in output order; each family's samples together, as the format requires.
class Writer {
 public:
  void Add(const std::string& name, const std::string& help, const Labels& labels, double v) {
    auto [it, fresh] = index_.emplace(name, families_.size());
    if (fresh) families_.push_back({name, help, {}});
    families_[it->second].lines.push_back(name + LabelText(labels) + " " + FormatValue(v));
  }
  std::string Text() const {
    std::string out;
    for (const auto& f : families_) {
      out += "# HELP " + f.name + " " + EscapeHelp(f.help) + "\n";
      out += "# TYPE " + f.name + " gauge\n";
      for (const auto& l : f.lines) out += l + "\n";
    }
    return out;
  }

 private:
  struct Fam {
    std::string name, help;
    std::vector<std::string> lines;
  };
  std::vector<Fam> families_;
  std::map<std::string, size_t> index_;
};

}  // namespace

std::string EscapeLabelValue(const std::string& v) { return Escape(v, /*in_quotes=*/true); }

std::string TagLabelName(const std::string& key) {
  std::string s = "tag_";
  for (char c : key) s += IsNameChar(c, "") ? c : '_';
  return s;
}

std::string RenderOpenMetrics(const RunData& d) {
  const RunRecord& r = d.run;
  auto tag = [&](const std::string& k) {
    auto it = r.tags.find(k);
    return it == r.tags.end() ? std::string() : it->second;
  };
  Labels run_labels = {{"run", r.id},
                       {"scenario", r.scenario_name},
                       {"ccl", tag("ccl")},
                       {"cluster", tag("cluster")}};
  {  // the other tags, under names that cannot clash with ours
    std::map<std::string, std::string> extra;
    for (const auto& [k, v] : r.tags)
      if (k != "ccl" && k != "cluster") extra[TagLabelName(k)] = v;  // later duplicates lose
    for (const auto& [k, v] : extra) run_labels.emplace_back(k, v);
  }
  std::map<std::string, const FaultRecord*> faults;
  for (const auto& f : d.faults) faults[f.fault_id] = &f;

  Writer w;
  w.Add("faultline_run_start_timestamp_seconds", "when the run started (Unix time)", run_labels,
        static_cast<double>(r.start_wall_ns) / 1e9);
  if (r.end_wall_ns)
    w.Add("faultline_run_duration_seconds", "how long the run took", run_labels,
          static_cast<double>(*r.end_wall_ns - r.start_wall_ns) / 1e9);
  w.Add("faultline_run_passed", "1 when the run passed (status passed), else 0", run_labels,
        r.status == RunStatus::kPassed ? 1 : 0);

  for (const auto& m : d.metrics) {
    Labels labels = run_labels;
    std::string prefix = "faultline_run_";
    if (m.fault_id) {
      prefix = "faultline_fault_";
      labels.emplace_back("fault", *m.fault_id);
      auto it = faults.find(*m.fault_id);
      labels.emplace_back("kind", it == faults.end() ? "" : it->second->kind);
      labels.emplace_back("target", it == faults.end() ? "" : it->second->target);
    }
    if (m.name == "outcome" && m.unit == "enum") {  // a state set: one series per outcome
      static const char* kOutcomes[] = {"survived", "failed", "hung"};
      for (int i = 0; i < 3; ++i) {
        Labels l = labels;
        l.emplace_back("outcome", kOutcomes[i]);
        w.Add(prefix + "outcome", "the run's outcome: 1 for the one it had", l,
              std::lround(m.value) == i ? 1 : 0);
      }
      continue;
    }
    auto fam = FamilyOf(m);
    if (!fam) continue;
    w.Add(prefix + fam->name, fam->help, labels, m.value * fam->scale);
  }
  for (const auto& v : d.verdicts) {
    Labels labels = run_labels;
    labels.emplace_back("fault", v.fault_id.value_or(""));
    labels.emplace_back("expectation", v.expectation);
    w.Add("faultline_expectation_passed", "1 when the expectation held, else 0", labels,
          v.passed ? 1 : 0);
  }
  return w.Text();
}

}  // namespace fl::reports::render
