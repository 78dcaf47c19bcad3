#include "common/yaml_util.h"

#include "common/input_file.h"

#include <catch2/catch.hpp>

namespace fl {
namespace {

constexpr const char* kDoc = R"(lab:
  hosts: 4
  rate: 1gbit
faults:
  - kind: nic_port_flap
    duraton: 5s
  - kind: tor_port_down
    duration: -2s
)";

TEST_CASE("yaml: unknown keys are reported at their line and column", "[unit]") {
  auto doc = YamlDoc::Parse(kDoc, "scenario.yaml");
  REQUIRE(doc.ok());
  const YAML::Node f0 = doc->root()["faults"][0];
  Status s = doc->CheckKeys(f0, {"kind", "duration", "target"}, "fault");
  REQUIRE(s.code() == Code::kInvalidArgument);
  CHECK(s.message() ==
        "scenario.yaml:6:5: unknown key 'duraton' in fault (allowed: kind, duration, target)");
}

TEST_CASE("yaml: typed getters point at the bad value", "[unit]") {
  auto doc = YamlDoc::Parse(kDoc, "scenario.yaml");
  REQUIRE(doc.ok());
  const YAML::Node lab = doc->root()["lab"];
  CHECK(*doc->Get<int>(lab, "hosts") == 4);
  CHECK(*doc->AsBitRate(lab["rate"], "rate") == 1'000'000'000ull);
  CHECK(*doc->GetOr<int>(lab, "gpus", 2) == 2);
  auto missing = doc->Get<int>(lab, "nics");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "scenario.yaml:2:3: missing required key 'nics'");
  auto neg = doc->AsDuration(doc->root()["faults"][1]["duration"], "duration");
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.status().message().rfind("scenario.yaml:8:15: duration: ", 0) == 0);
  auto word = doc->Get<int>(doc->root()["faults"][0], "kind");
  REQUIRE_FALSE(word.ok());
  CHECK(word.status().message() == "scenario.yaml:5:11: 'nic_port_flap' is not a valid kind");
}

TEST_CASE("yaml: lists of a bounded length, required or optional", "[unit]") {
  auto doc = YamlDoc::Parse("hosts: [a, b, c]\nnone: []\nword: x\n", "lab.yaml");
  REQUIRE(doc.ok());
  const YAML::Node root = doc->root();
  auto hosts = doc->GetList(root, "hosts", 1, 3, "hosts");
  REQUIRE(hosts.ok());
  CHECK(hosts->size() == 3);
  CHECK(doc->GetList(root, "hosts", 1, 2, "hosts").status().message() ==
        "lab.yaml:1:8: hosts must list 1 to 2 hosts");
  CHECK(doc->GetList(root, "hosts", 0, 2, "hosts").status().message() ==
        "lab.yaml:1:8: hosts must list at most 2 hosts");
  CHECK(doc->GetList(root, "none", 1, 8, "NICs").status().message() ==
        "lab.yaml:2:7: none must list 1 to 8 NICs");
  CHECK(doc->GetList(root, "none", 0, 8, "NICs")->size() == 0);
  CHECK(doc->GetList(root, "word", 0, 8, "words").status().message() ==
        "lab.yaml:3:7: word must be a list");
  CHECK(doc->GetList(root, "gone", 0, 8, "things").status().message() ==
        "lab.yaml:1:1: missing required key 'gone'");
  // Optional: a key left out is an empty list; one that is there is checked as GetList does.
  auto gone = doc->GetListOr(root, "gone", 1, 8, "things");
  REQUIRE(gone.ok());
  CHECK(gone->IsSequence());
  CHECK(gone->size() == 0);
  CHECK(doc->GetListOr(root, "none", 1, 8, "NICs").status().message() ==
        "lab.yaml:2:7: none must list 1 to 8 NICs");
  CHECK(doc->GetListOr(root, "hosts", 0, 8, "hosts")->size() == 3);
}

TEST_CASE("yaml: syntax errors carry a location, missing files are NotFound", "[unit]") {
  auto bad = YamlDoc::Parse("a: [1, 2\nb: 3\n", "broken.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().rfind("broken.yaml:", 0) == 0);
  CHECK(bad.status().message().find("YAML syntax error") != std::string::npos);
  auto none = YamlDoc::LoadFile("/nonexistent/x.yaml", InputKind::kScenario);
  CHECK(none.status().code() == Code::kNotFound);
}

}  // namespace
}  // namespace fl
