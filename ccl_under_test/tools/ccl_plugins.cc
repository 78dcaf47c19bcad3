#include "ccl_under_test/tools/ccl_plugins.h"

#include <algorithm>

// The descriptors of ccls.cmake's table (its one line per CCL), generated at configure time.
#include "ccl_list_plugins.inc"

namespace fl::ccl {

const std::vector<const CclPlugin*>& CclPlugins() {
  static const auto* all = [] {
    auto* v = new std::vector<const CclPlugin*>;
    for (const auto descriptor : generated::kDescriptors) v->push_back(&descriptor());
    std::sort(v->begin(), v->end(),
              [](const CclPlugin* a, const CclPlugin* b) { return a->name < b->name; });
    return v;
  }();
  return *all;
}

std::vector<std::string> CclNames() {
  std::vector<std::string> names;
  for (const CclPlugin* p : CclPlugins()) names.push_back(p->name);
  return names;
}

std::string CclOptionSummary() {
  std::string s;
  for (const CclPlugin* p : CclPlugins()) {
    std::string names;
    for (const auto& n : p->options.Names()) names += (names.empty() ? "" : ", ") + n;
    s += (s.empty() ? "" : "; ") + p->name + ": " + (names.empty() ? "none" : names);
  }
  return s;
}

StatusOr<const CclPlugin*> FindCclPlugin(std::string_view name) {
  for (const CclPlugin* p : CclPlugins())
    if (p->name == name) return p;
  std::string known;
  for (const auto& n : CclNames()) known += (known.empty() ? "" : ", ") + n;
  return NotFoundError("unknown ccl '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace fl::ccl
