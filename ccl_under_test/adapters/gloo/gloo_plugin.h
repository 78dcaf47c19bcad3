// Gloo as a plug-in (see ccl_under_test/api/ccl_plugin.h): no options; fail-stop, so a path
// fault fails the collective as soon as TCP reports it.
#pragma once

#include "ccl_under_test/api/ccl_plugin.h"

namespace fl::ccl::adapters {

const CclPlugin& GlooPlugin();

}  // namespace fl::ccl::adapters
