#include "ccl_under_test/adapters/gloo/gloo_plugin.h"

namespace fl::ccl::adapters {

const CclPlugin& GlooPlugin() {
  static const CclPlugin* p = new CclPlugin{
      "gloo",
      "Gloo (CPU, TCP, fail-stop): the baseline that restarts",
      OptionSchema("gloo", {}),
      nullptr,
      [](const OptionValues&, const std::map<std::string, std::string>&, bool) {
        return CclTimeouts{};
      },
  };
  return *p;
}

}  // namespace fl::ccl::adapters
