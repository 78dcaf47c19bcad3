// The CCLs this build has, registered by name: "ftccl" always, "gloo" when built with Gloo,
// "nccl" when built with NCCL headers (libnccl is loaded when a communicator is created).
#pragma once

#include "ccl_under_test/api/communicator.h"

namespace fl::ccl {

Status RegisterBuiltinCcls(CclRegistry& registry);

}  // namespace fl::ccl
