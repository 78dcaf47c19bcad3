// The switch-driver registry (switch_drivers.h), with the built-in drivers in it.
#include "injectors/switch_drivers.h"

#include <map>
#include <mutex>

#include "injectors/switch/ssh_template/ssh_template_driver.h"

namespace fl::injectors {

namespace {

struct Entry {
  SwitchDriverFactory open;
  bool needs_preset = false;
};

struct Registry {
  std::mutex mu;
  std::map<std::string, Entry> factories;
};

Registry& TheRegistry() {
  // Never destroyed: drivers may be opened at exit. The built-in drivers are registered here,
  // by a call into their own translation units, so that a static link keeps them.
  static Registry* r = [] {
    auto* reg = new Registry;
    reg->factories["ssh-template"] = {OpenSshTemplateDriver, /*needs_preset=*/true};
    return reg;
  }();
  return *r;
}

}  // namespace

void RegisterSwitchDriver(const std::string& name, SwitchDriverFactory factory, bool needs_preset) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> l(r.mu);
  r.factories[name] = {std::move(factory), needs_preset};
}

bool SwitchDriverNeedsPreset(const std::string& name) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> l(r.mu);
  auto it = r.factories.find(name);
  return it != r.factories.end() && it->second.needs_preset;
}

std::vector<std::string> SwitchDriverNames() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> l(r.mu);
  std::vector<std::string> names;
  for (const auto& [n, f] : r.factories) names.push_back(n);
  return names;
}

StatusOr<std::unique_ptr<SwitchDriver>> OpenSwitchDriver(const SwitchConn& conn) {
  SwitchDriverFactory f;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> l(r.mu);
    auto it = r.factories.find(conn.driver);
    if (it == r.factories.end()) {
      std::string known;
      for (const auto& [n, fac] : r.factories) known += (known.empty() ? "" : ", ") + n;
      return InvalidArgumentError(conn.Describe() + ": unknown switch driver '" + conn.driver +
                                  "' (known: " + known + ")");
    }
    f = it->second.open;
  }
  return f(conn);
}

}  // namespace fl::injectors
