// RenderSweepHtml (sweep_map.h): a sweep's maps as one self-contained HTML page: per metric a
// heat map per panel (CCL), the cell's colour its median against the worst, the spread and
// the runs in the cell's tooltip, the worst point, its region and the cliffs under it.
#include <cstdio>

#include "reports/compare/sweep_map.h"
#include "reports/render/escape.h"

namespace fl::reports::compare {
namespace {

using render::HtmlEscape;

constexpr const char* kStyle = R"(
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin:28px 0 4px}
p.how{color:#555;margin:0 0 8px;font-size:13px}
.panels{display:flex;flex-wrap:wrap;gap:24px}
table{border-collapse:collapse;font-size:12px}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:right;min-width:54px}
th{background:#f4f4f4;font-weight:600}
td.na{color:#999;background:#fafafa}
td.worst{outline:2px solid #000}
td.region{font-weight:700}
ul.callouts{font-size:12px;margin:6px 0 0;padding-left:18px}
.panel h3{font-size:13px;margin:0 0 4px}
)";

std::string CellHtml(const SweepMaps& maps, const MetricMap& mm, const PanelMap& pm, size_t p) {
  const SweepMapInput& in = maps.input;
  const SweepMapCell* cell = nullptr;
  for (const auto& c : in.cells)
    if (c.panel == pm.panel && c.point == p) cell = &c;
  std::string tip = PointLabel(in, p);
  if (cell && !cell->invalid.empty())
    return "<td class=\"na\" title=\"" + HtmlEscape(tip + ": " + cell->invalid) + "\">n/a</td>";
  const CellValue& v = pm.values[p];
  if (!v.has)
    return "<td class=\"na\" title=\"" +
           HtmlEscape(tip + (cell && cell->errors ? ": no finished repeat" : ": not run")) +
           "\">-</td>";
  const double w = pm.values[pm.worst].median;
  const double share = w > 0 ? v.median / w : 0;
  char bg[64];
  std::snprintf(bg, sizeof bg, "background:rgba(214,39,40,%.2f)", 0.08 + 0.8 * share);
  tip += "\nmedian " + FormatMapValue(v.median, mm.def.unit) + " of " + std::to_string(v.n) +
         " repeat(s), min " + FormatMapValue(v.lo, mm.def.unit) + ", max " +
         FormatMapValue(v.hi, mm.def.unit);
  if (cell) {
    tip += "\nruns:";
    for (const auto& id : cell->run_ids) tip += " " + id;
    if (cell->errors) tip += "\n" + std::to_string(cell->errors) + " repeat(s) without a result";
    if (cell->repeats) {
      int shown = 0;
      for (const auto& m : cell->repeats->metrics)
        if (BareName(m.key) == mm.def.key && ++shown <= 3)
          tip += "\n" + m.key + ": median " + FormatMapValue(m.median, mm.def.unit) +
                 ", 95% interval [" + FormatMapValue(m.interval.lo, mm.def.unit) + ", " +
                 FormatMapValue(m.interval.hi, mm.def.unit) + "]";
      const std::string v = VerdictShortfall(*cell->repeats);
      tip += "\nexpectations: " + (v.empty() ? std::string("every repeat met every one") : v);
    }
  }
  std::string cls;
  if (p == pm.worst && w > 0) cls = "worst";
  for (size_t r : pm.region)
    if (r == p && w > 0) cls += cls.empty() ? "region" : " region";
  return "<td" + (cls.empty() ? std::string() : " class=\"" + cls + "\"") + " style=\"" + bg +
         "\" title=\"" + HtmlEscape(tip) + "\">" +
         HtmlEscape(FormatMapValue(v.median, mm.def.unit)) + "</td>";
}

}  // namespace

std::string RenderSweepHtml(const SweepMaps& maps) {
  const SweepMapInput& in = maps.input;
  std::string h = "<!doctype html><html><head><meta charset=\"utf-8\"><title>sweep " +
                  HtmlEscape(in.name) + "</title><style>" + kStyle + "</style></head><body>";
  h += "<h1>sweep " + HtmlEscape(in.name) + "</h1><p>sweep " + HtmlEscape(in.sweep_id) + "; ";
  for (size_t i = 0; i < in.axes.size(); ++i)
    h += (i ? " &times; " : "") + HtmlEscape(in.axes[i].path) + " (" +
         std::to_string(in.axes[i].values.size()) + (in.axes[i].log ? ", log" : "") + ")";
  h += "; panels: ";
  for (size_t i = 0; i < in.panels.size(); ++i)
    h += (i ? ", " : "") + HtmlEscape(in.panels[i].empty() ? "the scenario's CCL" : in.panels[i]);
  h += ". Each cell is the median of its repeats (hover for the spread and the runs); the "
       "darker, the closer to the worst point of the panel, which is outlined.</p>";
  if (in.axes.empty()) return h + "</body></html>";
  const SweepMapAxis& rows = in.axes[0];
  const bool two = in.axes.size() > 1;
  for (const auto& mm : maps.metrics) {
    h += "<h2>" + HtmlEscape(mm.def.title) + "</h2><p class=\"how\">" + HtmlEscape(mm.def.how) +
         "</p><div class=\"panels\">";
    for (const auto& pm : mm.panels) {
      h += "<div class=\"panel\"><h3>" + HtmlEscape(pm.panel.empty() ? "-" : pm.panel) +
           "</h3><table><tr><th>" +
           HtmlEscape(rows.label + (two ? " \\ " + in.axes[1].label : "")) + "</th>";
      const size_t cols = two ? in.axes[1].values.size() : 1;
      for (size_t c = 0; c < cols; ++c)
        h += "<th>" + (two ? HtmlEscape(in.axes[1].values[c]) : std::string()) + "</th>";
      h += "</tr>";
      for (size_t r = 0; r < rows.values.size(); ++r) {
        h += "<tr><th>" + HtmlEscape(rows.values[r]) + "</th>";
        for (size_t c = 0; c < cols; ++c) h += CellHtml(maps, mm, pm, r * cols + c);
        h += "</tr>";
      }
      h += "</table><ul class=\"callouts\">";
      std::string callouts = SweepCallouts(maps, mm, pm);
      size_t start = 0;
      while (start < callouts.size()) {
        size_t nl = callouts.find('\n', start);
        std::string line = callouts.substr(start, nl - start);
        while (!line.empty() && line[0] == ' ') line.erase(0, 1);
        if (!line.empty()) h += "<li>" + HtmlEscape(line) + "</li>";
        start = nl == std::string::npos ? callouts.size() : nl + 1;
      }
      h += "</ul></div>";
    }
    h += "</div>";
  }
  return h + "</body></html>";
}

}  // namespace fl::reports::compare
