// A registry of named factories: how plug-ins (injectors, CCLs, workloads, transports, labs)
// are found by the name a scenario or flag gives.
//
// Registration is explicit: each plug-in family has a RegisterBuiltin...() function that adds
// its factories to a registry it owns. There is no static-initialiser registration, because
// static libraries drop unreferenced objects and the registry would silently miss entries.
//
// A plug-in registers its factory and its option schema (common/options.h) together, in its
// one registration line; Schema(name) hands the schema to whoever parses the plug-in's options
// (the CCL's typed values then reach the factory in its config, never through the
// environment).
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

#include "common/options.h"
#include "common/status.h"

namespace fl {

template <typename Interface, typename... Args>
class Registry {
 public:
  using Factory = std::function<StatusOr<std::unique_ptr<Interface>>(Args...)>;

  // kind names what is registered, for error messages ("injector", "ccl").
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  // A second registration of the same name is FailedPrecondition: names must be unique.
  Status Register(std::string name, Factory factory, OptionSchema schema = {}) {
    if (!factory) return InvalidArgumentError("null factory for " + kind_ + " '" + name + "'");
    auto [it, inserted] =
        factories_.emplace(std::move(name), Entry{std::move(factory), std::move(schema)});
    if (!inserted) return FailedPreconditionError(kind_ + " '" + it->first + "' registered twice");
    return OkStatus();
  }

  // The options `name` takes (an empty schema when it registered none); nullptr for unknown
  // names.
  const OptionSchema* Schema(std::string_view name) const {
    auto it = factories_.find(name);
    return it == factories_.end() ? nullptr : &it->second.schema;
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
    return it->second.factory(std::forward<Args>(args)...);
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& [n, f] : factories_) names.push_back(n);
    return names;
  }

  const std::string& kind() const { return kind_; }

 private:
  struct Entry {
    Factory factory;
    OptionSchema schema;
  };
  std::string kind_;
  std::map<std::string, Entry, std::less<>> factories_;
};

}  // namespace fl
