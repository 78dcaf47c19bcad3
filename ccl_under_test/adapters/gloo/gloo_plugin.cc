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
      /*may_shrink=*/false,
      /*nic_binding=*/NicBinding::kOnePerRank,  // a gloo TCP device binds one address
      /*needs_gpu=*/false,
      /*fails_over=*/false,
  };
  return *p;
}

}  // namespace fl::ccl::adapters
