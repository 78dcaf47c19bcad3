// The registry of switch drivers: the factory over the SwitchDriver contract
// (switch/switch_driver.h) and its kinds. The built-in "ssh-template" driver
// (switch/ssh_template/) is in it from the start, by a call into its own translation unit, so
// a static link keeps it; tests register their own.
//
// Thread-safety: every function may be called from any thread (the registry is locked).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "injectors/switch/switch_driver.h"

namespace fl::injectors {

// A driver for conn (conn.driver names it). Parses what it needs (the preset) and checks it;
// InvalidArgument "PRESET:LINE:COL: ..." for a bad preset. Never touches the network.
using SwitchDriverFactory =
    std::function<StatusOr<std::unique_ptr<SwitchDriver>>(const SwitchConn&)>;
// needs_preset: an inventory's switch of this driver must name a preset (ssh-template's
// command templates); the inventory loader asks SwitchDriverNeedsPreset, not the name.
void RegisterSwitchDriver(const std::string& name, SwitchDriverFactory factory,
                          bool needs_preset = false);
bool SwitchDriverNeedsPreset(const std::string& name);
StatusOr<std::unique_ptr<SwitchDriver>> OpenSwitchDriver(const SwitchConn& conn);
std::vector<std::string> SwitchDriverNames();

}  // namespace fl::injectors
