// Every CCL plug-in's descriptor (ccl_under_test/api/ccl_plugin.h), whether or not this build
// has its engine: what the coordinator validates options against, lints timeouts with and
// lists in `faultline ccls`. Links no engine.
//
// Adding a CCL: its folder (the engine, and a plugin.{h,cc} with its CclPlugin in a small
// library) and one fl_ccl(...) line in ccl_under_test/tools/ccls.cmake, which names its
// descriptor and its registration function: this list and RegisterBuiltinCcls
// (ccl_builtin.h) are both generated from that table.
#pragma once

#include <string_view>
#include <vector>

#include "ccl_under_test/api/ccl_plugin.h"
#include "common/status.h"

namespace fl::ccl {

// In name order.
const std::vector<const CclPlugin*>& CclPlugins();
// NotFound naming the known CCLs for an unknown name.
StatusOr<const CclPlugin*> FindCclPlugin(std::string_view name);
std::vector<std::string> CclNames();
// "ftccl: chunk_bytes, window_bytes, ...; gloo: none; nccl: none", for --help texts.
std::string CclOptionSummary();

}  // namespace fl::ccl
