#include "reports/compare/sweep_map.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "reports/analysis/stats.h"

namespace fl::reports::compare {

const std::vector<SweepMetricDef>& SweepMetricDefs() {
  static const std::vector<SweepMetricDef> defs = {
      {"recovery_ms", "recovery time", "ms",
       "the longest recovery of the run's faults (back to 90% of the baseline's throughput)"},
      {"throughput_loss_s", "throughput loss", "s",
       "the sum over the run's faults of the time lost against the baseline's throughput"},
      {"failovers", "failovers", "count", "faults a rank failed over from"},
      {"failbacks", "failbacks", "count", "faults after which a rank failed back to its NIC"},
      {"mismatches", "wrong results", "count", "collectives whose result was checked and wrong"},
      {"hung", "hung", "share", "repeats in which the job hung"},
      {"not_survived", "did not survive", "share", "repeats in which the job failed or hung"},
      {"restart_cost_ms", "restart cost", "ms",
       "time from the failure to the relaunched job's progress (fail-stop CCLs with a restart)"},
  };
  return defs;
}

std::map<std::string, double> SweepRunValues(const RunMetricSet& run) {
  std::map<std::string, double> out;
  auto add = [&](const std::string& k, double v, bool take_max) {
    auto it = out.find(k);
    if (it == out.end())
      out[k] = v;
    else
      it->second = take_max ? std::max(it->second, v) : it->second + v;
  };
  bool any_fault = false;
  for (const auto& [key, v] : run.values) {
    const std::string_view name = BareName(key);
    const bool per_fault = key.find('/') != std::string::npos;
    if (!per_fault) {
      if (name == "mismatches") out["mismatches"] = v;
      if (name == "outcome") {
        out["hung"] = v == 2 ? 1 : 0;
        out["not_survived"] = v != 0 ? 1 : 0;
      }
      continue;
    }
    if (name == "fault_applied" && v > 0) any_fault = true;
    if (name == "recovery_ms") add("recovery_ms", v, true);
    if (name == "throughput_loss_s") add("throughput_loss_s", v, false);
    if (name == "failover_ms") add("failovers", 1, false);
    if (name == "failed_back") add("failbacks", v > 0 ? 1 : 0, false);
    if (name == "restart_cost_ms") add("restart_cost_ms", v, false);
  }
  if (any_fault) {
    out.try_emplace("failovers", 0);
    out.try_emplace("failbacks", 0);
    out.try_emplace("throughput_loss_s", 0);
  }
  return out;
}

std::string PointLabel(const SweepMapInput& in, size_t point) {
  std::string s;
  size_t rest = point;
  std::vector<size_t> coords(in.axes.size());
  for (size_t i = in.axes.size(); i-- > 0;) {
    coords[i] = rest % in.axes[i].values.size();
    rest /= in.axes[i].values.size();
  }
  for (size_t i = 0; i < in.axes.size(); ++i)
    s += (s.empty() ? "" : " ") + in.axes[i].label + "=" + in.axes[i].values[coords[i]];
  return s;
}

std::string FormatMapValue(double v, const std::string& unit) {
  char buf[64];
  if (unit == "ms") {
    if (v >= 1000)
      std::snprintf(buf, sizeof buf, "%.3g s", v / 1000);
    else
      std::snprintf(buf, sizeof buf, "%.3g ms", v);
  } else if (unit == "s") {
    std::snprintf(buf, sizeof buf, "%.3g s", v);
  } else if (unit == "share") {
    std::snprintf(buf, sizeof buf, "%.0f%%", v * 100);
  } else if (v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2g", v);
  }
  return buf;
}

namespace {

size_t PointCount(const SweepMapInput& in) {
  size_t n = 1;
  for (const auto& a : in.axes) n *= a.values.size();
  return in.axes.empty() ? 0 : n;
}

std::vector<size_t> Coords(const SweepMapInput& in, size_t point) {
  std::vector<size_t> c(in.axes.size());
  for (size_t i = in.axes.size(); i-- > 0;) {
    c[i] = point % in.axes[i].values.size();
    point /= in.axes[i].values.size();
  }
  return c;
}

size_t PointOf(const SweepMapInput& in, const std::vector<size_t>& c) {
  size_t p = 0;
  for (size_t i = 0; i < in.axes.size(); ++i) p = p * in.axes[i].values.size() + c[i];
  return p;
}

PanelMap BuildPanel(const SweepMapInput& in, const std::string& panel, const SweepMetricDef& def) {
  PanelMap m;
  m.panel = panel;
  const size_t points = PointCount(in);
  m.values.resize(points);
  for (const auto& cell : in.cells) {
    if (cell.panel != panel || cell.point >= points) continue;
    std::vector<double> vs;
    for (const auto& r : cell.runs)
      if (auto it = r.find(def.key); it != r.end()) vs.push_back(it->second);
    if (vs.empty()) continue;
    CellValue& v = m.values[cell.point];
    v.has = true;
    v.n = vs.size();
    v.lo = *std::min_element(vs.begin(), vs.end());
    v.hi = *std::max_element(vs.begin(), vs.end());
    if (def.unit == "share") {
      double sum = 0;
      for (double x : vs) sum += x;
      v.median = sum / static_cast<double>(vs.size());
    } else {
      v.median = analysis::Median(vs);
    }
  }
  double lo = 0, hi = 0;
  for (size_t p = 0; p < points; ++p) {
    const CellValue& v = m.values[p];
    if (!v.has) continue;
    if (!m.any || v.median > m.values[m.worst].median) m.worst = p;
    if (!m.any) lo = hi = v.median;
    lo = std::min(lo, v.median);
    hi = std::max(hi, v.median);
    m.any = true;
  }
  if (!m.any) return m;
  const double w = m.values[m.worst].median;
  for (size_t p = 0; p < points; ++p)
    if (m.values[p].has && w > 0 && m.values[p].median >= 0.8 * w) m.region.push_back(p);
  if (m.region.empty()) m.region.push_back(m.worst);
  // Cliffs: neighbours along each axis.
  const double spread = hi - lo;
  if (spread > 0) {
    for (size_t p = 0; p < points; ++p) {
      if (!m.values[p].has) continue;
      std::vector<size_t> c = Coords(in, p);
      for (size_t axis = 0; axis < in.axes.size(); ++axis) {
        if (c[axis] + 1 >= in.axes[axis].values.size()) continue;
        std::vector<size_t> d = c;
        ++d[axis];
        const size_t q = PointOf(in, d);
        if (!m.values[q].has) continue;
        const double a = m.values[p].median, b = m.values[q].median;
        const double small = std::min(a, b), big = std::max(a, b);
        if (big - small < 0.5 * spread) continue;
        if (small > 0 && big < 3 * small) continue;
        // A jump the repeats themselves span is noise, not a cliff.
        const CellValue &x = m.values[p], &y = m.values[q];
        if (x.hi >= y.lo && y.hi >= x.lo) continue;
        m.cliffs.push_back({axis, p, q, a, b});
      }
    }
    std::stable_sort(m.cliffs.begin(), m.cliffs.end(), [](const Cliff& x, const Cliff& y) {
      return std::fabs(x.b - x.a) > std::fabs(y.b - y.a);
    });
    if (m.cliffs.size() > 3) m.cliffs.resize(3);
  }
  return m;
}

// "every 152ms..351ms, duration 500ms": the span of a set of points on each axis.
std::string RegionText(const SweepMapInput& in, const std::vector<size_t>& points) {
  std::string s;
  for (size_t axis = 0; axis < in.axes.size(); ++axis) {
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t p : points) {
      size_t c = Coords(in, p)[axis];
      lo = std::min(lo, c);
      hi = std::max(hi, c);
    }
    const auto& a = in.axes[axis];
    s += (s.empty() ? "" : ", ") + a.label + " " + a.values[lo] +
         (hi != lo ? ".." + a.values[hi] : "");
  }
  return s;
}

std::string CliffText(const SweepMapInput& in, const SweepMetricDef& def, const Cliff& c) {
  const auto& a = in.axes[c.axis];
  std::vector<size_t> cf = Coords(in, c.from), ct = Coords(in, c.to);
  std::string at;
  for (size_t i = 0; i < in.axes.size(); ++i)
    if (i != c.axis)
      at += (at.empty() ? " at " : ", ") + in.axes[i].label + "=" + in.axes[i].values[cf[i]];
  return "cliff along " + a.label + at + ": " + a.values[cf[c.axis]] + " -> " +
         a.values[ct[c.axis]] + ", " + def.title + " " + FormatMapValue(c.a, def.unit) + " -> " +
         FormatMapValue(c.b, def.unit);
}

}  // namespace

SweepMaps BuildSweepMaps(SweepMapInput input) {
  SweepMaps maps;
  maps.input = std::move(input);
  for (const auto& def : SweepMetricDefs()) {
    MetricMap mm;
    mm.def = def;
    bool any = false;
    for (const auto& panel : maps.input.panels) {
      mm.panels.push_back(BuildPanel(maps.input, panel, def));
      any = any || mm.panels.back().any;
    }
    if (any) maps.metrics.push_back(std::move(mm));
  }
  return maps;
}

std::string SweepCallouts(const SweepMaps& maps, const MetricMap& mm, const PanelMap& pm) {
  const SweepMapInput& in = maps.input;
  if (!pm.any) return "  no values\n";
  std::string s;
  const CellValue& w = pm.values[pm.worst];
  if (w.median <= 0) return "  0 everywhere\n";
  s += "  worst: " + PointLabel(in, pm.worst) + " (" + FormatMapValue(w.median, mm.def.unit) + ")";
  if (pm.region.size() > 1)
    s += "; within 20% of it: " + std::to_string(pm.region.size()) + " points, " +
         RegionText(in, pm.region);
  s += "\n";
  for (const auto& c : pm.cliffs) s += "  " + CliffText(in, mm.def, c) + "\n";
  return s;
}

std::string RenderSweepText(const SweepMaps& maps) {
  const SweepMapInput& in = maps.input;
  std::string out;
  if (in.axes.empty()) return "no axes\n";
  const SweepMapAxis& rows = in.axes[0];
  const bool two = in.axes.size() > 1;
  for (const auto& mm : maps.metrics) {
    for (const auto& pm : mm.panels) {
      out += mm.def.title + (pm.panel.empty() ? "" : " [" + pm.panel + "]") +
             " (median of the repeats)\n";
      char buf[64];
      std::snprintf(buf, sizeof buf, "  %-12s",
                    (rows.label + (two ? " \\ " + in.axes[1].label : "")).c_str());
      out += buf;
      const size_t cols = two ? in.axes[1].values.size() : 1;
      for (size_t c = 0; c < cols; ++c) {
        std::snprintf(buf, sizeof buf, " %10s", two ? in.axes[1].values[c].c_str() : "");
        out += buf;
      }
      out += "\n";
      for (size_t r = 0; r < rows.values.size(); ++r) {
        std::snprintf(buf, sizeof buf, "  %-12s", rows.values[r].c_str());
        out += buf;
        for (size_t c = 0; c < cols; ++c) {
          const size_t p = r * cols + c;
          std::string cell = "-";
          for (const auto& x : in.cells)
            if (x.panel == pm.panel && x.point == p && !x.invalid.empty()) cell = "n/a";
          if (pm.values[p].has) cell = FormatMapValue(pm.values[p].median, mm.def.unit);
          std::snprintf(buf, sizeof buf, " %10s", cell.c_str());
          out += buf;
        }
        out += "\n";
      }
      out += SweepCallouts(maps, mm, pm);
    }
  }
  std::string shortfalls;
  for (const auto& c : in.cells)
    if (c.repeats)
      if (std::string v = VerdictShortfall(*c.repeats); !v.empty())
        shortfalls += "  " + PointLabel(in, c.point) +
                      (c.panel.empty() ? "" : " [" + c.panel + "]") + ": " + v + "\n";
  if (!shortfalls.empty()) out += "expectations not met by every repeat\n" + shortfalls;
  return out;
}

std::string VerdictShortfall(const RepeatSummary& r) {
  std::string s;
  for (const auto& v : r.verdicts)
    if (v.met < v.runs)
      s += (s.empty() ? "" : ", ") + std::to_string(v.met) + "/" + std::to_string(v.runs) +
           " met " + v.expectation + (v.fault_id.empty() ? "" : " " + v.fault_id);
  return s;
}

// An axis in SweepMapsJson: its fields under their own names.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SweepMapAxis, label, path, values, log)

std::string SweepMapsJson(const SweepMaps& maps) {
  using nlohmann::json;
  const SweepMapInput& in = maps.input;
  json axes = in.axes;
  json cells = json::array();
  for (const auto& c : in.cells)
    cells.push_back(
        {{"point", c.point},
         {"label", PointLabel(in, c.point)},
         {"panel", c.panel},
         {"runs", c.run_ids},
         {"errors", c.errors},
         {"invalid", c.invalid.empty() ? json(nullptr) : json(c.invalid)},
         {"repeats", c.repeats ? json::parse(RepeatsJson(*c.repeats)) : json(nullptr)}});
  json metrics = json::array();
  for (const auto& mm : maps.metrics) {
    json panels = json::array();
    for (const auto& pm : mm.panels) {
      json values = json::array();
      for (const auto& v : pm.values)
        values.push_back(v.has
                             ? json{{"median", v.median}, {"min", v.lo}, {"max", v.hi}, {"n", v.n}}
                             : json(nullptr));
      json cliffs = json::array();
      for (const auto& c : pm.cliffs)
        cliffs.push_back({{"axis", in.axes[c.axis].label},
                          {"from", PointLabel(in, c.from)},
                          {"to", PointLabel(in, c.to)},
                          {"from_value", c.a},
                          {"to_value", c.b}});
      json region = json::array();
      for (size_t p : pm.region) region.push_back(PointLabel(in, p));
      panels.push_back({{"panel", pm.panel},
                        {"values", values},
                        {"worst", pm.any ? json(PointLabel(in, pm.worst)) : json(nullptr)},
                        {"region", region},
                        {"cliffs", cliffs}});
    }
    metrics.push_back(
        {{"key", mm.def.key}, {"title", mm.def.title}, {"unit", mm.def.unit}, {"panels", panels}});
  }
  json j = {{"name", in.name},     {"sweep_id", in.sweep_id}, {"axes", axes},
            {"panels", in.panels}, {"cells", cells},          {"metrics", metrics}};
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace fl::reports::compare
