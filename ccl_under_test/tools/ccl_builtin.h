// The CCLs this build has, registered by name: "ftccl" always, "gloo" when built with Gloo,
// "nccl" when built with NCCL headers (libnccl is loaded when a communicator is created).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ccl_under_test/api/communicator.h"

namespace fl::ccl {

Status RegisterBuiltinCcls(CclRegistry& registry);

// A CCL's options for stand-alone tools (ftccl-perf) whose documented input is the
// environment: NAME_OPTION in upper case (FTCCL_DEAD_TIMEOUT_MS=900) over `defaults` (options
// the CCL does not take are dropped), checked against the schema the CCL registered with:
// an invalid value is InvalidArgument, never silently the default.
StatusOr<OptionValues> CclOptionsFromEnvironment(
    const CclRegistry& registry, std::string_view ccl,
    const std::map<std::string, std::string>& defaults = {});

}  // namespace fl::ccl
