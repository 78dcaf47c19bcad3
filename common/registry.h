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

// A registry whose entries carry a description of their own (Info): what the plug-in says
// about itself, so that code outside its folder asks the entry instead of spelling the name
// (STYLE: "a plug-in answers questions about itself"). Registry below is the common case,
// with the option schema as the Info.
template <typename Interface, typename Info, typename... Args>
class DescribedRegistry {
 public:
  using Factory = std::function<StatusOr<std::unique_ptr<Interface>>(Args...)>;

  // kind names what is registered, for error messages ("injector", "ccl").
  explicit DescribedRegistry(std::string kind) : kind_(std::move(kind)) {}

  // A second registration of the same name is FailedPrecondition: names must be unique.
  Status Register(std::string name, Factory factory, Info info = {}) {
    if (!factory) return InvalidArgumentError("null factory for " + kind_ + " '" + name + "'");
    auto [it, inserted] =
        factories_.emplace(std::move(name), Entry{std::move(factory), std::move(info)});
    if (!inserted) return FailedPreconditionError(kind_ + " '" + it->first + "' registered twice");
    return OkStatus();
  }

  // What `name` says of itself (a default Info when it registered none); nullptr for unknown
  // names.
  const Info* Describe(std::string_view name) const {
    auto it = factories_.find(name);
    return it == factories_.end() ? nullptr : &it->second.info;
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

  // The names whose Info satisfies `pred`, in name order.
  template <typename Pred>
  std::vector<std::string> NamesWhere(Pred pred) const {
    std::vector<std::string> names;
    for (const auto& [n, e] : factories_)
      if (pred(e.info)) names.push_back(n);
    return names;
  }

  const std::string& kind() const { return kind_; }

 private:
  struct Entry {
    Factory factory;
    Info info;
  };
  std::string kind_;
  std::map<std::string, Entry, std::less<>> factories_;
};

// The registry whose entries describe themselves by their option schema.
template <typename Interface, typename... Args>
class Registry : public DescribedRegistry<Interface, OptionSchema, Args...> {
 public:
  using DescribedRegistry<Interface, OptionSchema, Args...>::DescribedRegistry;

  // The options `name` takes (an empty schema when it registered none); nullptr for unknown
  // names.
  const OptionSchema* Schema(std::string_view name) const { return this->Describe(name); }
};

}  // namespace fl
