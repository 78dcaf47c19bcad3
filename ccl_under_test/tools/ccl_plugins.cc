#include "ccl_under_test/tools/ccl_plugins.h"

#include <algorithm>

#include "common/plugin_list.h"

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

std::vector<std::string> CclNames() { return PluginNames(CclPlugins()); }

std::string CclOptionSummary() { return PluginOptionSummary(CclPlugins(), false); }

StatusOr<const CclPlugin*> FindCclPlugin(std::string_view name) {
  return FindPlugin(CclPlugins(), name, "ccl");
}

}  // namespace fl::ccl
