// A results store with one run in it ("r1", started at t0), for the writer's tests.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "reports/store/store.h"

namespace fl::reports::testing {

inline std::unique_ptr<Store> OpenWithRun(const std::string& path, Nanos t0) {
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  RunRecord r;
  r.id = "r1";
  r.scenario_name = "s";
  r.start_wall_ns = t0;
  REQUIRE(store.value()->CreateRun(r).ok());
  return std::move(store).value();
}

}  // namespace fl::reports::testing
