// A registry of named factories: how plug-ins (injectors, CCLs, workloads, transports, labs)
// are found by the name a scenario or flag gives.
//
// Registration is explicit: each plug-in family has a RegisterBuiltin...() function that adds
// its factories to a registry it owns. There is no static-initialiser registration, because
// static libraries drop unreferenced objects and the registry would silently miss entries.
//
// Thread-safety: Register() must finish before concurrent Create() calls begin (register at
// start-up); Create() and Names() are safe to call concurrently afterwards.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fl {

template <typename Interface, typename... Args>
class Registry {
 public:
  using Factory = std::function<StatusOr<std::unique_ptr<Interface>>(Args...)>;

  // kind names what is registered, for error messages ("injector", "ccl").
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  // A second registration of the same name is FailedPrecondition: names must be unique.
  Status Register(std::string name, Factory factory) {
    if (!factory) return InvalidArgumentError("null factory for " + kind_ + " '" + name + "'");
    auto [it, inserted] = factories_.emplace(std::move(name), std::move(factory));
    if (!inserted) return FailedPreconditionError(kind_ + " '" + it->first + "' registered twice");
    return OkStatus();
  }

  bool Contains(std::string_view name) const { return factories_.find(name) != factories_.end(); }

  // Unknown names are NotFound with the list of known ones, so a typo in a scenario is
  // answered with what would have worked.
  StatusOr<std::unique_ptr<Interface>> Create(std::string_view name, Args... args) const {
    auto it = factories_.find(name);
    if (it == factories_.end()) {
      std::string known;
      for (const auto& [n, f] : factories_) known += (known.empty() ? "" : ", ") + n;
      return NotFoundError("unknown " + kind_ + " '" + std::string(name) +
                           "' (known: " + (known.empty() ? "none" : known) + ")");
    }
    return it->second(std::forward<Args>(args)...);
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& [n, f] : factories_) names.push_back(n);
    return names;
  }

  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::map<std::string, Factory, std::less<>> factories_;
};

}  // namespace fl
