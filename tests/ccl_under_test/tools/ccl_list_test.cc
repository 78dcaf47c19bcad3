// The CCL table (ccl_under_test/tools/ccls.cmake, one line per CCL) is what both lists read:
// every descriptor in ccl_plugins.h, and a factory in RegisterBuiltinCcls for exactly the CCLs
// whose engine this build has (FL_CCLS_BUILT, from the same table), each under its descriptor's
// name with its descriptor's options.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ccl_under_test/tools/ccl_builtin.h"
#include "ccl_under_test/tools/ccl_plugins.h"

#ifndef FL_CCLS_BUILT
#error "FL_CCLS_BUILT must list the CCLs this build has (tests/ccl_under_test/tools)"
#endif

namespace fl::ccl {
namespace {

std::vector<std::string> Split(const std::string& csv) {
  std::vector<std::string> out;
  std::stringstream in(csv);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

TEST_CASE("ccl table: every descriptor, in name order, whether or not its engine is built",
          "[unit]") {
  CHECK(CclNames() == std::vector<std::string>{"ftccl", "gloo", "nccl"});
  for (const CclPlugin* p : CclPlugins()) {
    auto found = FindCclPlugin(p->name);
    REQUIRE(found.ok());
    CHECK(*found == p);
  }
  auto missing = FindCclPlugin("mpi");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "unknown ccl 'mpi' (known: ftccl, gloo, nccl)");
  CHECK(CclOptionSummary().rfind("ftccl: chunk_bytes, ", 0) == 0);
}

// What the harness asks a CCL instead of spelling its name (ccl_plugin.h).
TEST_CASE("ccl table: each descriptor states its NIC binding, GPU need and failover", "[unit]") {
  auto get = [](const char* name) {
    auto p = FindCclPlugin(name);
    REQUIRE(p.ok());
    return *p;
  };
  CHECK(get("ftccl")->nic_binding == NicBinding::kAllRails);
  CHECK(get("ftccl")->fails_over);
  CHECK_FALSE(get("ftccl")->needs_gpu);
  CHECK(get("gloo")->nic_binding == NicBinding::kOnePerRank);
  CHECK_FALSE(get("gloo")->fails_over);
  CHECK_FALSE(get("gloo")->needs_gpu);
  CHECK(get("nccl")->nic_binding == NicBinding::kAllRails);
  CHECK_FALSE(get("nccl")->fails_over);
  CHECK(get("nccl")->needs_gpu);
}

TEST_CASE("ccl table: RegisterBuiltinCcls adds the built CCLs, each with its descriptor's options",
          "[unit]") {
  CclRegistry registry("ccl");
  REQUIRE(RegisterBuiltinCcls(registry).ok());
  const std::vector<std::string> built = Split(FL_CCLS_BUILT);
  const std::vector<std::string> registered = registry.Names();
  CHECK(std::set<std::string>(built.begin(), built.end()) ==
        std::set<std::string>(registered.begin(), registered.end()));
  CHECK(registry.Contains("ftccl"));  // always built
  for (const std::string& name : registered) {
    auto plugin = FindCclPlugin(name);
    REQUIRE(plugin.ok());
    const OptionSchema* schema = registry.Schema(name);
    REQUIRE(schema != nullptr);
    CHECK(schema->Names() == (*plugin)->options.Names());
  }
  // A second registration of the same table into the same registry is refused by name.
  Status again = RegisterBuiltinCcls(registry);
  CHECK(again.code() == Code::kFailedPrecondition);
  CHECK(again.message() == "ccl 'ftccl' registered twice");
}

}  // namespace
}  // namespace fl::ccl
