// Root-gated: link-state and filter injectors on a real lab. Each test: traffic flows ->
// inject -> the observed effect (TCP to the peer stalls or errors) -> revert -> traffic flows
// again -> a second revert is harmless.
#include <catch2/catch.hpp>

#include "injectors/injection.h"
#include "injectors/netlink.h"
#include "tests/injectors/lab_testing.h"

namespace fl::injectors {
namespace {

using testing::TcpPair;
using testing::TcpWorks;
using testing::TestLab;

struct Env : testing::InjectorEnv {
  explicit Env(const char* topology) { REQUIRE(Init(topology).ok()); }
  std::unique_ptr<Injector> Make(const std::string& kind) {
    auto inj = InjectorEnv::Make(kind);
    REQUIRE(inj.ok());
    return std::move(*inj);
  }
};

// The common cycle over an established connection from h0 to h1.
void StallCycle(Env& env, const FaultSpec& spec, bool expect_error_ok = true) {
  auto pair = TcpPair::Open(env.h0, env.h1, env.h1_addr);
  REQUIRE(pair.ok());
  REQUIRE((*pair)->RoundTrip(4096, 2 * kNsPerSec).ok());
  auto inj = env.Make(spec.kind);
  auto h = InjectFault(*inj, spec, env.lab->lab().fabric(), &env.journal);
  REQUIRE(h.ok());
  CHECK(h->effective_wall_ns >= h->requested_wall_ns);
  CHECK(env.journal.List()->size() == 1);
  // Observed effect: the established connection stalls (or errors).
  Status during = (*pair)->RoundTrip(4096, 400 * kNsPerMs);
  CHECK_FALSE(during.ok());
  if (!expect_error_ok) CHECK(during.code() == Code::kDeadlineExceeded);
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  CHECK(env.journal.List()->empty());
  // Traffic flows again (a new connection: the old one may sit in retransmit backoff).
  CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
  // A second revert is harmless.
  CHECK(RevertFault(*inj, *h, &env.journal).ok());
  CHECK(env.journal.List()->empty());
}

TEST_CASE("nic_port_flap: host NIC down stalls TCP, revert restores it", "[.root][integration]") {
  Env env(testing::kSmallRail);
  FaultSpec spec{"nic_port_flap", "h0.nic0", {}, 0, 1};
  StallCycle(env, spec);
  auto st = GetLink(env.h0, "nic0");
  REQUIRE(st.ok());
  CHECK(st->admin_up);
}

TEST_CASE("nic_port_flap: a periodic flap runs its count and stops", "[.root][integration]") {
  Env env(testing::kSmallRail);
  FaultSpec spec{
      "nic_port_flap", "h0.nic0", {{"period", "60ms"}, {"down", "20ms"}, {"count", "3"}}, 0, 7};
  auto inj = env.Make(spec.kind);
  auto h = InjectFault(*inj, spec, env.lab->lab().fabric(), &env.journal);
  REQUIRE(h.ok());
  // Three flaps take about 180 ms; afterwards the link stays up.
  bool up_for_good = WaitUntil(
      [&] {
        auto st = GetLink(env.h0, "nic0");
        return st.ok() && st->admin_up;
      },
      Deadline::After(2 * kNsPerSec));
  CHECK(up_for_good);
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
  CHECK(RevertFault(*inj, *h, &env.journal).ok());
}

TEST_CASE("tor_port_down: the host loses carrier and TCP stalls", "[.root][integration]") {
  Env env(testing::kSmallRail);
  FaultSpec spec{"tor_port_down", "tor0.h0", {}, 0, 1};
  auto pair = TcpPair::Open(env.h0, env.h1, env.h1_addr);
  REQUIRE(pair.ok());
  auto inj = env.Make(spec.kind);
  auto h = InjectFault(*inj, spec, env.lab->lab().fabric(), &env.journal);
  REQUIRE(h.ok());
  auto st = GetLink(env.h0, "nic0");
  REQUIRE(st.ok());
  CHECK(st->admin_up);       // the host did nothing...
  CHECK_FALSE(st->carrier);  // ...but lost carrier
  CHECK_FALSE((*pair)->RoundTrip(4096, 400 * kNsPerMs).ok());
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
  CHECK(RevertFault(*inj, *h, &env.journal).ok());
}

// Overlap rule (docs/injectors.md): one link-state fault per port at a time.
TEST_CASE("tor_port_down: a second fault on a port that is down is refused, naming the first",
          "[.root][integration]") {
  Env env(testing::kSmallRail);
  auto a = env.Make("tor_port_down");
  auto b = env.Make("tor_port_down");
  FaultSpec spec{"tor_port_down", "tor0.h0", {}, 0, 1};
  auto h = InjectFault(*a, spec, env.fabric(), &env.journal);
  REQUIRE(h.ok());
  auto second = InjectFault(*b, spec, env.fabric(), &env.journal);
  CHECK(second.status().code() == Code::kFailedPrecondition);
  CHECK(second.status().message().find(h->id) != std::string::npos);
  CHECK(env.journal.List()->size() == 1);
  // The host side of the same link is another port: nic_port_flap on it stacks, and each
  // revert brings up only its own end.
  auto flap = env.Make("nic_port_flap");
  auto hf = InjectFault(*flap, FaultSpec{"nic_port_flap", "h0.nic0", {}, 0, 1}, env.fabric(),
                        &env.journal);
  REQUIRE(hf.ok());
  REQUIRE(RevertFault(*flap, *hf, &env.journal).ok());
  CHECK(GetLink(env.h0, "nic0")->admin_up);
  CHECK_FALSE(GetLink(env.lab->lab().NetnsOf("tor0"), "h0")->admin_up);  // still the first's
  REQUIRE(RevertFault(*a, *h, &env.journal).ok());
  CHECK(GetLink(env.lab->lab().NetnsOf("tor0"), "h0")->admin_up);
  CHECK(env.journal.List()->empty());
}

TEST_CASE("nic_port_flap: a periodic flap holds its port even while the port is up",
          "[.root][integration]") {
  Env env(testing::kSmallRail);
  auto periodic = env.Make("nic_port_flap");
  auto once = env.Make("nic_port_flap");
  FaultSpec flap{"nic_port_flap", "h0.nic0", {{"period", "400ms"}, {"down", "50ms"}}, 0, 1};
  auto h = InjectFault(*periodic, flap, env.fabric(), &env.journal);
  REQUIRE(h.ok());
  // Wait for an up phase: the live state alone would let a second fault in now.
  REQUIRE(WaitUntil(
      [&] {
        auto st = GetLink(env.h0, "nic0");
        return st.ok() && st->admin_up;
      },
      Deadline::After(2 * kNsPerSec)));
  auto second = InjectFault(*once, FaultSpec{"nic_port_flap", "h0.nic0", {}, 0, 1}, env.fabric(),
                            &env.journal);
  CHECK(second.status().code() == Code::kFailedPrecondition);
  CHECK(second.status().message().find(h->id) != std::string::npos);
  REQUIRE(RevertFault(*periodic, *h, &env.journal).ok());
  CHECK(GetLink(env.h0, "nic0")->admin_up);
  // Free again.
  auto third = InjectFault(*once, FaultSpec{"nic_port_flap", "h0.nic0", {}, 0, 1}, env.fabric(),
                           &env.journal);
  REQUIRE(third.ok());
  REQUIRE(RevertFault(*once, *third, &env.journal).ok());
  CHECK(env.journal.List()->empty());
}

TEST_CASE("link_blackhole: traffic vanishes while carrier stays up", "[.root][integration]") {
  Env env(testing::kSmallRail);
  FaultSpec spec{"link_blackhole", "h0.nic0", {}, 0, 1};
  StallCycle(env, spec, /*expect_error_ok=*/false);
}

TEST_CASE("tor_uplink_down: traffic across the spine stalls", "[.root][integration]") {
  Env env(testing::kSmallSpine);  // h0 and h1 in different pods
  FaultSpec spec{"tor_uplink_down", "tor0p0.up0", {}, 0, 1};
  StallCycle(env, spec);
}

TEST_CASE("injectors: an unknown target is NotFound and creates nothing", "[.root][integration]") {
  Env env(testing::kSmallRail);
  auto inj = env.Make("tor_port_down");
  FaultSpec spec{"tor_port_down", "tor7.h0", {}, 0, 1};
  auto h = InjectFault(*inj, spec, env.lab->lab().fabric(), &env.journal);
  CHECK(h.status().code() == Code::kNotFound);
  CHECK(env.journal.List()->empty());
  FaultSpec up{"tor_uplink_down", "tor0.up0", {}, 0, 1};
  auto inj2 = env.Make("tor_uplink_down");
  CHECK(InjectFault(*inj2, up, env.lab->lab().fabric(), &env.journal).status().code() ==
        Code::kNotFound);  // no spine in this topology
}

}  // namespace
}  // namespace fl::injectors

namespace fl::injectors {
namespace {

TEST_CASE("injectors: a dry run resolves the target and changes nothing", "[.root][integration]") {
  Env env(testing::kSmallRail);
  for (const char* kind : {"tor_port_down", "link_blackhole", "bandwidth_throttle"}) {
    FaultSpec spec{kind, "rail0", {}, 0, 1};
    if (std::string(kind) == "bandwidth_throttle") spec.params["rate"] = "10mbit";
    auto inj = env.Make(kind);
    auto h = DryRunFault(*inj, spec, env.fabric());
    REQUIRE(h.ok());
    CHECK(h->effective_wall_ns == 0);
    CHECK(env.journal.List()->empty());
  }
  auto h = DryRunFault(*env.Make("tor_port_down"), FaultSpec{"tor_port_down", "rail0", {}, 0, 1},
                       env.fabric());
  REQUIRE(h.ok());
  CHECK(h->state["ports"].size() == 2);  // tor0.h0 and tor0.h1
  CHECK(GetLink(env.lab->lab().NetnsOf("tor0"), "h0")->admin_up);
  CHECK(GetLink(env.h0, "nic0")->carrier);
  CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
}

}  // namespace
}  // namespace fl::injectors
