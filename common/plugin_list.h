// What every list of plug-in descriptors answers the same way (the CCLs' and the workloads'):
// their names, one found by name, and a one-line summary of their options. A descriptor P has
// `name` and `options` (an OptionSchema, common/options.h).
//
// Thread-safety: pure over lists that do not change.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fl {

template <typename P>
std::vector<std::string> PluginNames(const std::vector<const P*>& all) {
  std::vector<std::string> names;
  for (const P* p : all) names.push_back(p->name);
  return names;
}

// NotFound "unknown WHAT 'NAME' (known: a, b)".
template <typename P>
StatusOr<const P*> FindPlugin(const std::vector<const P*>& all, std::string_view name,
                              std::string_view what) {
  std::string known;
  for (const P* p : all) {
    if (p->name == name) return p;
    known += (known.empty() ? "" : ", ") + std::string(p->name);
  }
  return NotFoundError("unknown " + std::string(what) + " '" + std::string(name) +
                       "' (known: " + known + ")");
}

// "a: x, y; b: none". With skip_bare, plug-ins without options are left out, and a list
// with none at all is "none".
template <typename P>
std::string PluginOptionSummary(const std::vector<const P*>& all, bool skip_bare) {
  std::string s;
  for (const P* p : all) {
    std::string names;
    for (const auto& n : p->options.Names()) names += (names.empty() ? "" : ", ") + n;
    if (names.empty() && skip_bare) continue;
    s += (s.empty() ? "" : "; ") + std::string(p->name) + ": " + (names.empty() ? "none" : names);
  }
  return s.empty() ? "none" : s;
}

}  // namespace fl
