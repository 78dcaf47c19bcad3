#include "ccl_under_test/tools/ccl_builtin.h"

#include <cctype>

#include "ccl_under_test/ftccl/ftccl.h"
#ifdef FL_HAVE_GLOO_ADAPTER
#include "ccl_under_test/adapters/gloo/gloo_communicator.h"
#endif
#ifdef FL_HAVE_NCCL_ADAPTER
#include "ccl_under_test/adapters/nccl/nccl_communicator.h"
#endif

namespace fl::ccl {

Status RegisterBuiltinCcls(CclRegistry& registry) {
  FL_RETURN_IF_ERROR(ftccl::RegisterFtccl(registry));
#ifdef FL_HAVE_GLOO_ADAPTER
  FL_RETURN_IF_ERROR(adapters::RegisterGloo(registry));
#endif
#ifdef FL_HAVE_NCCL_ADAPTER
  FL_RETURN_IF_ERROR(adapters::RegisterNccl(registry));
#endif
  return OkStatus();
}

StatusOr<OptionValues> CclOptionsFromEnvironment(
    const CclRegistry& registry, std::string_view ccl,
    const std::map<std::string, std::string>& defaults) {
  const OptionSchema* schema = registry.Schema(ccl);
  if (!schema) return OptionValues{};
  std::string prefix;
  for (char c : ccl) prefix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return schema->FromEnvironment(prefix + "_", defaults);
}

}  // namespace fl::ccl
