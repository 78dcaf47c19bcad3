#include "ccl_under_test/tools/ccl_builtin.h"

#include <cctype>

#include "ccl_under_test/tools/ccl_plugins.h"

// The registration functions of the CCLs in ccls.cmake's table whose engine library this build
// has, generated at configure time.
#include "ccl_list_builtin.inc"

namespace fl::ccl {

Status RegisterBuiltinCcls(CclRegistry& registry) {
  for (const generated::ListedRegistration& r : generated::kRegistrations) {
    FL_RETURN_IF_ERROR(r.register_ccl(registry));
    // The factory must register under its table name, with its descriptor's schema.
    FL_ASSIGN_OR_RETURN(const CclPlugin* plugin, FindCclPlugin(r.name));
    const OptionSchema* schema = registry.Schema(r.name);
    if (!schema || schema->Names() != plugin->options.Names())
      return InternalError(std::string("ccl '") + r.name +
                           "' did not register under its name with its descriptor's options");
  }
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
