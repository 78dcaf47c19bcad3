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

}  // namespace
}  // namespace fl
