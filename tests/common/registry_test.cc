#include "common/registry.h"

#include <catch2/catch.hpp>

namespace fl {
namespace {

struct Shape {
  virtual ~Shape() = default;
  virtual int Sides() const = 0;
};
struct Poly : Shape {
  explicit Poly(int n) : n(n) {}
  int Sides() const override { return n; }
  int n;
};

TEST_CASE("registry: create by name, with arguments", "[unit]") {
  Registry<Shape, int> reg("shape");
  REQUIRE(reg.Register("poly",
                       [](int n) -> StatusOr<std::unique_ptr<Shape>> {
                         if (n < 3) return InvalidArgumentError("a polygon has at least 3 sides");
                         return std::unique_ptr<Shape>(new Poly(n));
                       })
              .ok());
  auto s = reg.Create("poly", 5);
  REQUIRE(s.ok());
  CHECK((*s)->Sides() == 5);
  auto bad = reg.Create("poly", 2);
  CHECK(bad.status().code() == Code::kInvalidArgument);
  CHECK(reg.Contains("poly"));
  CHECK(reg.Names() == std::vector<std::string>{"poly"});
}

TEST_CASE("registry: a factory registers with its option schema", "[unit]") {
  Registry<Shape> reg("shape");
  auto tri = []() -> StatusOr<std::unique_ptr<Shape>> {
    return std::unique_ptr<Shape>(new Poly(3));
  };
  OptionSchema schema("triangle", {{"sides", OptionType::kInt, 3, 3, {}, "3", "always three"}});
  REQUIRE(reg.Register("triangle", tri, schema).ok());
  REQUIRE(reg.Register("plain", tri).ok());
  REQUIRE(reg.Schema("triangle") != nullptr);
  CHECK(reg.Schema("triangle")->Names() == std::vector<std::string>{"sides"});
  CHECK(reg.Schema("triangle")->Check("sides", "4") ==
        "triangle option sides must be within 3..3, not 4");
  REQUIRE(reg.Schema("plain") != nullptr);  // registered without one: takes no options
  CHECK(reg.Schema("plain")->specs().empty());
  CHECK(reg.Schema("circle") == nullptr);
}

TEST_CASE("registry: unknown names list the known ones, duplicates are refused", "[unit]") {
  Registry<Shape> reg("injector");
  auto factory = []() -> StatusOr<std::unique_ptr<Shape>> {
    return std::unique_ptr<Shape>(new Poly(4));
  };
  REQUIRE(reg.Register("nic_port_flap", factory).ok());
  REQUIRE(reg.Register("container_kill", factory).ok());
  Status dup = reg.Register("nic_port_flap", factory);
  CHECK(dup.code() == Code::kFailedPrecondition);
  auto missing = reg.Create("nic_flap");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK(missing.status().message() ==
        "unknown injector 'nic_flap' (known: container_kill, nic_port_flap)");
}

TEST_CASE("registry: entries describe themselves, callers ask rather than name them", "[unit]") {
  struct Info {
    bool stops = false;
  };
  DescribedRegistry<Shape, Info> reg("shape");
  auto factory = []() -> StatusOr<std::unique_ptr<Shape>> {
    return std::unique_ptr<Shape>(new Poly(3));
  };
  REQUIRE(reg.Register("b", factory, Info{true}).ok());
  REQUIRE(reg.Register("a", factory).ok());
  REQUIRE(reg.Register("c", factory, Info{true}).ok());
  REQUIRE(reg.Describe("b") != nullptr);
  CHECK(reg.Describe("b")->stops);
  CHECK_FALSE(reg.Describe("a")->stops);  // registered without one: the default
  CHECK(reg.Describe("z") == nullptr);
  CHECK(reg.NamesWhere([](const Info& i) { return i.stops; }) ==
        std::vector<std::string>{"b", "c"});
}

}  // namespace
}  // namespace fl
