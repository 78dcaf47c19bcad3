#include "harness/suite/sweep_plan.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/name_chars.h"
#include "common/units.h"
#include "common/yaml_util.h"
#include "harness/scenario/scenario_loader.h"
#include "reports/store/store.h"

namespace fl::harness::suite {
namespace {

constexpr size_t kMaxAxes = 3;
constexpr size_t kMaxValues = 100;
constexpr size_t kMaxRuns = 10000;
constexpr uint32_t kMaxRepeats = 100;

bool IsPlainNumber(std::string_view t, double* out) {
  if (t.empty()) return false;
  std::string s(t);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// A value's unit and its number in the unit's base (seconds, bytes).
AxisUnit UnitOf(std::string_view t, double* number) {
  if (IsPlainNumber(t, number)) return AxisUnit::kNone;
  if (auto d = ParseDuration(t); d.ok()) {
    *number = static_cast<double>(*d) / 1e9;
    return AxisUnit::kDuration;
  }
  if (auto b = ParseBytes(t); b.ok()) {
    *number = static_cast<double>(*b);
    return AxisUnit::kBytes;
  }
  *number = std::numeric_limits<double>::quiet_NaN();
  return AxisUnit::kNone;
}

double RoundSignificant(double v, int digits) {
  if (v == 0) return 0;
  const double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(v))));
  return std::round(v * scale) / scale;
}

std::string Trimmed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// A value as the scenario takes it: "152ms", "1.23s", "64KiB", "0.5".
std::string FormatValue(double v, AxisUnit unit) {
  switch (unit) {
    case AxisUnit::kDuration:
      if (v < 1e-3) return Trimmed(RoundSignificant(v * 1e6, 3)) + "us";
      if (v < 1) return Trimmed(RoundSignificant(v * 1e3, 3)) + "ms";
      return Trimmed(RoundSignificant(v, 3)) + "s";
    case AxisUnit::kBytes: {
      // Whole bytes; a whole number of MiB or KiB is written so.
      const double b = std::round(v);
      const double kib = b / 1024, mib = b / (1024.0 * 1024);
      if (b >= 1024 * 1024 && mib == std::floor(mib)) return Trimmed(mib) + "MiB";
      if (b >= 1024 && kib == std::floor(kib)) return Trimmed(kib) + "KiB";
      return Trimmed(b);
    }
    case AxisUnit::kNone:
      break;
  }
  return Trimmed(RoundSignificant(v, 3));
}

bool ValidPath(std::string_view path) {
  // key(.key)* with an optional [index] after a key.
  size_t i = 0;
  bool need_key = true;
  while (i < path.size()) {
    if (need_key) {
      size_t start = i;
      while (i < path.size() && IsNameChar(path[i], "_-")) ++i;
      if (i == start) return false;
      need_key = false;
    } else if (path[i] == '[') {
      size_t start = ++i;
      while (i < path.size() && std::isdigit(static_cast<unsigned char>(path[i]))) ++i;
      if (i == start || i >= path.size() || path[i] != ']' || i - start > 4) return false;
      ++i;
    } else if (path[i] == '.') {
      ++i;
      need_key = true;
    } else {
      return false;
    }
  }
  return !need_key;
}

struct Segment {
  std::string key;
  std::optional<size_t> index;
};

std::vector<Segment> Segments(const std::string& path) {
  std::vector<Segment> out;
  size_t i = 0;
  while (i < path.size()) {
    Segment s;
    size_t end = path.find_first_of(".[", i);
    s.key = path.substr(i, end == std::string::npos ? std::string::npos : end - i);
    i = end == std::string::npos ? path.size() : end;
    if (i < path.size() && path[i] == '[') {
      size_t close = path.find(']', i);
      s.index = std::stoul(path.substr(i + 1, close - i - 1));
      i = close + 1;
    }
    if (i < path.size() && path[i] == '.') ++i;
    out.push_back(std::move(s));
  }
  return out;
}

// The node a path names, created when only its last map key is missing. Nodes are re-seated
// with reset(): assigning a YAML::Node would overwrite the node it refers to.
StatusOr<YAML::Node> Resolve(YAML::Node root, const SweepAxis& axis, bool create = false) {
  std::vector<Segment> segs = Segments(axis.path);
  YAML::Node cur;
  cur.reset(root);
  for (size_t i = 0; i < segs.size(); ++i) {
    const Segment& s = segs[i];
    const bool last = i + 1 == segs.size();
    if (!cur.IsMap())
      return InvalidArgumentError(axis.where + ": '" + axis.path + "': '" + s.key +
                                  "' is not under a map of the scenario");
    YAML::Node next = cur[s.key];
    if (!next.IsDefined() && create && !s.index) {
      cur[s.key] = YAML::Node(YAML::NodeType::Map);
      next.reset(cur[s.key]);
    }
    if (!next.IsDefined() && !(last && !s.index))
      return InvalidArgumentError(axis.where + ": '" + axis.path + "': the scenario has no '" +
                                  s.key + "' there");
    cur.reset(next);
    if (s.index) {
      if (!cur.IsSequence() || *s.index >= cur.size())
        return InvalidArgumentError(axis.where + ": '" + axis.path + "': '" + s.key +
                                    "' has no element " + std::to_string(*s.index));
      YAML::Node el = cur[*s.index];
      cur.reset(el);
    }
  }
  return cur;
}

// The map holding a path's last key (the fault of faults[0].every).
StatusOr<YAML::Node> Parent(YAML::Node root, const SweepAxis& axis, bool create = false) {
  size_t dot = axis.path.rfind('.');
  if (dot == std::string::npos) return root;
  SweepAxis p = axis;
  p.path = axis.path.substr(0, dot);
  return Resolve(root, p, create);
}

Status CheckAxisValue(const SweepAxis& a, const std::string& v) {
  if (v.empty() || v.size() > 64 || v.find_first_of("\n\r\t{}[]#&*!|>'\"%@`") != std::string::npos)
    return InvalidArgumentError(a.where + ": value '" + v +
                                "' must be 1-64 characters without YAML punctuation");
  return OkStatus();
}

}  // namespace

StatusOr<SweepAxis> ParseAxis(std::string_view text, const std::string& where) {
  SweepAxis a;
  a.where = where;
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return InvalidArgumentError(where + ": want PATH=LO..HI:log|lin:N or PATH=V1,V2,..., got '" +
                                std::string(text) + "'");
  a.path = std::string(text.substr(0, eq));
  if (!ValidPath(a.path))
    return InvalidArgumentError(where + ": '" + a.path +
                                "' is not a path of scenario keys (e.g. faults[0].every, "
                                "job.size)");
  a.label = a.path.substr(a.path.rfind('.') == std::string::npos ? 0 : a.path.rfind('.') + 1);
  const std::string rhs(text.substr(eq + 1));
  const size_t dots = rhs.find("..");
  if (dots != std::string::npos) {
    // LO..HI:MODE:N
    const std::string lo_s = rhs.substr(0, dots);
    const std::string rest = rhs.substr(dots + 2);
    const size_t c1 = rest.find(':');
    const size_t c2 = c1 == std::string::npos ? std::string::npos : rest.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos)
      return InvalidArgumentError(where + ": a range is LO..HI:log:N or LO..HI:lin:N, got '" + rhs +
                                  "'");
    const std::string hi_s = rest.substr(0, c1), mode = rest.substr(c1 + 1, c2 - c1 - 1),
                      n_s = rest.substr(c2 + 1);
    if (mode != "log" && mode != "lin")
      return InvalidArgumentError(where + ": spacing '" + mode + "' must be log or lin");
    double n_d = 0;
    if (!IsPlainNumber(n_s, &n_d) || n_d != std::floor(n_d) || n_d < 2 || n_d > kMaxValues)
      return InvalidArgumentError(where + ": the number of values '" + n_s +
                                  "' must be a whole number from 2 to " +
                                  std::to_string(kMaxValues));
    double lo = 0, hi = 0;
    const AxisUnit ulo = UnitOf(lo_s, &lo), uhi = UnitOf(hi_s, &hi);
    if (std::isnan(lo) || std::isnan(hi))
      return InvalidArgumentError(where + ": range ends '" + lo_s + "' and '" + hi_s +
                                  "' must be numbers, durations or sizes");
    if (ulo != uhi)
      return InvalidArgumentError(where + ": range ends '" + lo_s + "' and '" + hi_s +
                                  "' must have the same kind of unit");
    if (!(lo < hi)) return InvalidArgumentError(where + ": the range must go up: " + rhs);
    a.unit = ulo;
    a.log = mode == "log";
    if (a.log && lo <= 0)
      return InvalidArgumentError(where + ": a log range must start above 0, not at " + lo_s);
    const int n = static_cast<int>(n_d);
    for (int i = 0; i < n; ++i) {
      const double f = static_cast<double>(i) / (n - 1);
      const double v = a.log ? lo * std::pow(hi / lo, f) : lo + (hi - lo) * f;
      std::string s = FormatValue(v, a.unit);
      if (!a.values.empty() && s == a.values.back())
        return InvalidArgumentError(where + ": " + std::to_string(n) + " values between " + lo_s +
                                    " and " + hi_s + " repeat at 3 significant digits (" + s +
                                    "): ask for fewer");
      double num = 0;
      UnitOf(s, &num);
      a.values.push_back(std::move(s));
      a.numbers.push_back(num);
    }
  } else {
    size_t start = 0;
    for (;;) {
      size_t comma = rhs.find(',', start);
      std::string v =
          rhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      FL_RETURN_IF_ERROR(CheckAxisValue(a, v));
      if (std::find(a.values.begin(), a.values.end(), v) != a.values.end())
        return InvalidArgumentError(where + ": value '" + v + "' is listed twice");
      a.values.push_back(v);
      if (a.values.size() > kMaxValues)
        return InvalidArgumentError(where + ": at most " + std::to_string(kMaxValues) + " values");
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    // One unit for all, or words.
    std::vector<AxisUnit> units;
    for (const auto& v : a.values) {
      double num = 0;
      units.push_back(UnitOf(v, &num));
      a.numbers.push_back(num);
    }
    const bool numeric =
        std::none_of(a.numbers.begin(), a.numbers.end(), [](double x) { return std::isnan(x); });
    if (numeric &&
        std::all_of(units.begin(), units.end(), [&](AxisUnit u) { return u == units.front(); }))
      a.unit = units.front();
    else
      std::fill(a.numbers.begin(), a.numbers.end(), std::numeric_limits<double>::quiet_NaN());
  }
  return a;
}

namespace {

StatusOr<SweepSpec> BaseOf(const std::string& scenario_path) {
  SweepSpec s;
  FL_ASSIGN_OR_RETURN(Scenario sc, LoadScenarioFile(scenario_path));
  s.scenario_path = scenario_path;
  s.scenario_text = sc.text;
  s.name = sc.name;
  return s;
}

}  // namespace

StatusOr<SweepSpec> SweepOfScenario(const std::string& scenario_path) {
  FL_ASSIGN_OR_RETURN(SweepSpec s, BaseOf(scenario_path));
  s.source = scenario_path;
  return s;
}

bool LooksLikeSweepFile(const std::string& path) {
  auto text = ReadInputFile(path, InputKind::kSweep);
  if (!text.ok()) return false;
  try {
    YAML::Node root = YAML::Load(*text);
    return root.IsMap() && (root["vary"].IsDefined() || root["scenario"].IsDefined());
  } catch (const YAML::Exception&) {
    return false;
  }
}

StatusOr<SweepSpec> ParseSweep(std::string_view text, const std::string& name) {
  FL_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, name));
  const YAML::Node& root = doc.root();
  FL_RETURN_IF_ERROR(doc.ExpectMap(root, "sweep file"));
  FL_RETURN_IF_ERROR(doc.CheckKeys(root,
                                   {"name", "description", "scenario", "vary", "ccls", "repeats",
                                    "window", "seed", "run_timeout"},
                                   "sweep"));
  FL_ASSIGN_OR_RETURN(std::string scenario, doc.Get<std::string>(root, "scenario"));
  const std::string resolved = PathBeside(scenario, name);
  auto base = BaseOf(resolved);
  if (!base.ok()) return doc.Error(root["scenario"], base.status().message());
  SweepSpec s = std::move(*base);
  s.source = name;
  FL_ASSIGN_OR_RETURN(s.name, doc.GetOr<std::string>(root, "name", s.name));
  if (doc.Has(root, "vary")) {
    const YAML::Node v = root["vary"];
    FL_RETURN_IF_ERROR(doc.ExpectSequence(v, "vary"));
    for (const auto& item : v) {
      FL_ASSIGN_OR_RETURN(std::string t, doc.As<std::string>(item, "vary entry"));
      auto axis = ParseAxis(t, doc.Where(item));
      if (!axis.ok()) return axis.status();
      for (const auto& other : s.axes)
        if (other.path == axis->path) return doc.Error(item, "'" + axis->path + "' varied twice");
      s.axes.push_back(std::move(*axis));
    }
  }
  if (doc.Has(root, "ccls")) {
    const YAML::Node ccls = root["ccls"];
    FL_RETURN_IF_ERROR(doc.ExpectSequence(ccls, "ccls"));
    // Each entry's `set:` is the sweep's own; the rest is a suite's ccls entry.
    YAML::Node plain(YAML::NodeType::Sequence);
    for (const auto& c : ccls) {
      std::vector<std::pair<std::string, std::string>> sets;
      if (c.IsMap() && c["set"].IsDefined()) {
        const YAML::Node set = c["set"];
        FL_RETURN_IF_ERROR(doc.ExpectMap(set, "set"));
        for (auto it = set.begin(); it != set.end(); ++it) {
          const std::string path = it->first.Scalar();
          if (!ValidPath(path))
            return doc.Error(it->first, "'" + path + "' is not a path of scenario keys");
          if (!it->second.IsScalar())
            return doc.Error(it->second, "set values must be single values");
          sets.emplace_back(path, it->second.Scalar());
        }
        YAML::Node copy(YAML::NodeType::Map);
        for (auto it = c.begin(); it != c.end(); ++it)
          if (it->first.Scalar() != "set") copy[it->first.Scalar()] = it->second;
        plain.push_back(copy);
      } else {
        plain.push_back(c);
      }
      s.ccl_sets.push_back(std::move(sets));
    }
    FL_RETURN_IF_ERROR(ParseCcls(doc, plain, &s.ccls));
  }
  FL_ASSIGN_OR_RETURN(s.repeats, doc.GetBoundedOr<uint32_t>(root, "repeats", 1, 1, kMaxRepeats));
  FL_ASSIGN_OR_RETURN(s.window_ns, doc.GetDurationOr(root, "window", 0));
  if (s.window_ns > 24 * 3600 * kNsPerSec)
    return doc.Error(root["window"], "window must be at most 24h");
  if (doc.Has(root, "seed")) {
    FL_ASSIGN_OR_RETURN(uint64_t seed, doc.As<uint64_t>(root["seed"], "seed"));
    s.seed = seed;
  }
  FL_ASSIGN_OR_RETURN(s.run_timeout_ns, doc.GetDurationOr(root, "run_timeout", s.run_timeout_ns));
  if (s.run_timeout_ns < kNsPerSec || s.run_timeout_ns > 24 * 3600 * kNsPerSec)
    return doc.Error(root["run_timeout"], "run_timeout must be between 1s and 24h");
  return s;
}

StatusOr<SweepSpec> LoadSweepFile(const std::string& path) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, InputKind::kSweep));
  return ParseSweep(text, path);
}

Status ApplyVaryFlags(const std::vector<std::string>& flags, SweepSpec* spec) {
  for (const auto& f : flags) {
    FL_ASSIGN_OR_RETURN(SweepAxis a, ParseAxis(f, "--vary '" + f + "'"));
    auto same = std::find_if(spec->axes.begin(), spec->axes.end(),
                             [&](const SweepAxis& x) { return x.path == a.path; });
    if (same != spec->axes.end())
      *same = std::move(a);
    else
      spec->axes.push_back(std::move(a));
  }
  return OkStatus();
}

Status CheckSweep(const SweepSpec& spec) {
  if (spec.axes.empty())
    return InvalidArgumentError(spec.source +
                                ": nothing to sweep: give --vary PATH=... (or `vary:` in a sweep "
                                "file)");
  if (spec.axes.size() > kMaxAxes)
    return InvalidArgumentError(spec.source + ": at most " + std::to_string(kMaxAxes) +
                                " axes, not " + std::to_string(spec.axes.size()));
  size_t points = 1;
  for (const auto& a : spec.axes) points *= a.values.size();
  const size_t runs = points * std::max<size_t>(1, spec.ccls.size()) * spec.repeats;
  if (runs > kMaxRuns)
    return InvalidArgumentError(spec.source + ": " + std::to_string(runs) + " runs (" +
                                std::to_string(points) + " points) is more than " +
                                std::to_string(kMaxRuns) + ": fewer values or repeats");
  // Labels tell axes apart in the map: the whole path when two share a last key.
  return OkStatus();
}

StatusOr<std::vector<SweepPoint>> PlanPoints(const SweepSpec& spec) {
  FL_RETURN_IF_ERROR(CheckSweep(spec));
  YAML::Node base;
  try {
    base = YAML::Load(spec.scenario_text);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(spec.scenario_path + ": " + e.what());
  }
  // The lab file is named absolutely: the point's text runs from a temporary file.
  FL_ASSIGN_OR_RETURN(Scenario sc, ParseScenario(spec.scenario_text, spec.scenario_path));
  if (base["lab"].IsMap()) {
    YAML::Node lab = base["lab"];
    if (lab["topology"].IsDefined() && !sc.lab.topology.empty())
      lab["topology"] = std::filesystem::absolute(sc.lab.topology).string();
    if (lab["inventory"].IsDefined() && !sc.lab.inventory.empty())
      lab["inventory"] = std::filesystem::absolute(sc.lab.inventory).string();
  }
  std::vector<SweepAxis> axes = spec.axes;
  for (size_t i = 0; i < axes.size(); ++i)
    for (size_t k = 0; k < spec.axes.size(); ++k)
      if (k != i && spec.axes[k].label == axes[i].label) axes[i].label = axes[i].path;
  size_t points = 1;
  for (const auto& a : axes) points *= a.values.size();
  std::vector<SweepPoint> out;
  for (size_t p = 0; p < points; ++p) {
    SweepPoint pt;
    pt.index = p;
    pt.coords.resize(axes.size());
    size_t rest = p;
    for (size_t i = axes.size(); i-- > 0;) {
      pt.coords[i] = rest % axes[i].values.size();
      rest /= axes[i].values.size();
    }
    YAML::Node doc = YAML::Clone(base);
    for (size_t i = 0; i < axes.size(); ++i) {
      const SweepAxis& a = axes[i];
      const std::string& v = a.values[pt.coords[i]];
      FL_ASSIGN_OR_RETURN(YAML::Node parent, Parent(doc, a));
      if (!parent.IsMap())
        return InvalidArgumentError(a.where + ": '" + a.path + "' is not a key of a map");
      const std::string key =
          a.path.substr(a.path.rfind('.') == std::string::npos ? 0 : a.path.rfind('.') + 1);
      if (key.find('[') != std::string::npos) {
        FL_ASSIGN_OR_RETURN(YAML::Node node, Resolve(doc, a));
        node = v;
      } else {
        parent[key] = v;
      }
      if (key == "every" && spec.window_ns > 0) {
        auto every = ParseDuration(v);
        if (!every.ok() || *every <= 0)
          return InvalidArgumentError(a.where + ": '" + v + "' is not a period");
        parent["count"] = std::max<int64_t>(1, spec.window_ns / *every);
      }
      pt.label += (pt.label.empty() ? "" : " ") + a.label + "=" + v;
    }
    pt.yaml = EmitYaml(doc);
    out.push_back(std::move(pt));
  }
  return out;
}

StatusOr<std::string> ApplySets(const std::string& yaml,
                                const std::vector<std::pair<std::string, std::string>>& sets,
                                const std::string& where) {
  if (sets.empty()) return yaml;
  YAML::Node doc;
  try {
    doc = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(where + ": " + e.what());
  }
  for (const auto& [path, value] : sets) {
    SweepAxis a;
    a.path = path;
    a.where = where;
    FL_ASSIGN_OR_RETURN(YAML::Node parent, Parent(doc, a, /*create=*/true));
    const std::string key =
        path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
    if (!parent.IsMap() || key.find('[') != std::string::npos)
      return InvalidArgumentError(where + ": '" + path + "' is not a key of a map");
    parent[key] = value;
  }
  return EmitYaml(doc);
}

std::string PlanHash(const SweepSpec& spec) {
  std::string s = spec.scenario_text + "\n--\n";
  for (const auto& a : spec.axes) {
    s += a.path + "=";
    for (const auto& v : a.values) s += v + ",";
    s += "\n";
  }
  for (size_t i = 0; i < spec.ccls.size(); ++i) {
    const CclSpec& c = spec.ccls[i];
    s += "ccl " + c.name;
    for (const auto& [k, v] : c.options) s += " " + k + "=" + v;
    if (i < spec.ccl_sets.size())
      for (const auto& [k, v] : spec.ccl_sets[i]) s += " set " + k + "=" + v;
    s += "\n";
  }
  s += "repeats " + std::to_string(spec.repeats) + " window " + std::to_string(spec.window_ns) +
       " seed " + (spec.seed ? std::to_string(*spec.seed) : "-");
  return reports::ScenarioHash(s).substr(0, 16);
}

}  // namespace fl::harness::suite
