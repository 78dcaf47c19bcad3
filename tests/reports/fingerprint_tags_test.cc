// Run tags from the hosts' fingerprints (firmware A/B without hand tagging).
#include <catch2/catch.hpp>

#include "reports/store/fingerprint_tags.h"

namespace fl::reports {
namespace {

HostRecord Host(const std::string& name, const std::string& fp) {
  HostRecord h;
  h.name = name;
  h.fingerprint_json = fp;
  return h;
}

TEST_CASE("FingerprintTags: agreed values as they are, differing ones listed", "[unit]") {
  std::vector<HostRecord> hosts = {
      Host("h0", R"({"kernel":"6.1.0-28-amd64","ccl_build":"ftccl 0.1.0","nics":[)"
                 R"({"name":"nic0","driver":"mlx5_core","firmware":"22.39"},)"
                 R"({"name":"nic1","driver":"mlx5_core","firmware":"22.39"}]})"),
      Host("h1", R"({"kernel":"6.1.0-28-amd64","ccl_build":"ftccl 0.1.0","nccl_version":"2.21.5",)"
                 R"("nics":[{"name":"nic0","driver":"mlx5_core","firmware":"22.41"}]})"),
      Host("h2", "not json"),                   // ignored
      Host("h3", R"({"kernel":"","nics":7})"),  // empty values and wrong shapes: ignored
  };
  auto tags = FingerprintTags(hosts);
  CHECK(tags["kernel"] == "6.1.0-28-amd64");
  CHECK(tags["ccl_build"] == "ftccl 0.1.0");
  CHECK(tags["nic.driver"] == "mlx5_core");
  CHECK(tags["nic.firmware"] == "22.39,22.41");
  CHECK(tags["fw"] == "22.39,22.41");
  CHECK(tags["nccl"] == "2.21.5");

  hosts.resize(1);
  tags = FingerprintTags(hosts);
  CHECK(tags["fw"] == "22.39");
  CHECK(tags.count("nccl") == 0);  // absent, not empty
  CHECK(FingerprintTags({}).empty());
}

}  // namespace
}  // namespace fl::reports
