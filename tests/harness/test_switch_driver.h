// A SwitchDriver for unit tests, registered as "test-driver": it never talks to a switch
// (every operation fails with Internal); its port pattern is Ethernet<N>[/<N>] or swp<N>.
#pragma once

#include <memory>
#include <regex>
#include <string>

#include "injectors/switch/switch_driver.h"
#include "injectors/switch_drivers.h"

namespace fl::testing {

// A driver that never talks to a switch: its port pattern is Ethernet<N>[/<N>] or swp<N>.
class TestSwitchDriver : public injectors::SwitchDriver {
 public:
  explicit TestSwitchDriver(injectors::SwitchConn c) : conn_(std::move(c)) {}
  const injectors::SwitchConn& conn() const override { return conn_; }
  bool Supports(injectors::SwitchOp) const override { return false; }
  Status CheckPortName(std::string_view port) const override {
    static const std::regex kPattern("Ethernet[0-9]+(/[0-9]+)?|swp[0-9]+");
    if (std::regex_match(std::string(port), kPattern)) return OkStatus();
    return InvalidArgumentError(
        "'" + std::string(port) +
        "' does not match the port pattern Ethernet[0-9]+(/[0-9]+)?|swp[0-9]+");
  }
  Status SetPortAdmin(const std::string&, bool, Deadline) override { return No(); }
  StatusOr<injectors::SwitchPortState> ReadPort(const std::string&, Deadline) override {
    return No();
  }
  Status AddDrop(const std::string&, injectors::SwitchStage, const std::string&,
                 Deadline) override {
    return No();
  }
  Status RemoveDrop(const std::string&, injectors::SwitchStage, const std::string&,
                    Deadline) override {
    return No();
  }
  Status AddRateLimit(const std::string&, injectors::SwitchStage, uint64_t, const std::string&,
                      Deadline) override {
    return No();
  }
  Status RemoveRateLimit(const std::string&, injectors::SwitchStage, const std::string&,
                         Deadline) override {
    return No();
  }
  StatusOr<injectors::SwitchCounters> ReadCounters(const std::string&, Deadline) override {
    return No();
  }
  StatusOr<injectors::PfcWatchdogSettings> ReadPfcWatchdog(const std::string&, Deadline) override {
    return No();
  }

 private:
  static Status No() { return InternalError("test driver: no switch"); }
  injectors::SwitchConn conn_;
};

inline void RegisterTestSwitchDriver() {
  injectors::RegisterSwitchDriver("test-driver", [](const injectors::SwitchConn& c) {
    return StatusOr<std::unique_ptr<injectors::SwitchDriver>>(
        std::make_unique<TestSwitchDriver>(c));
  });
}

}  // namespace fl::testing
