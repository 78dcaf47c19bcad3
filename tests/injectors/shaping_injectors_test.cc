// Root-gated: bandwidth_throttle, packet_loss and pfc_storm on a real lab.
#include <catch2/catch.hpp>

#include "injectors/injection.h"
#include "injectors/pfc.h"
#include "injectors/tc_nft.h"
#include "tests/injectors/lab_testing.h"

namespace fl::injectors {
namespace {

using testing::TcpPair;
using testing::TcpWorks;

struct Env : testing::InjectorEnv {
  std::string tor0;
  Env() {
    REQUIRE(Init(testing::kSmallRail).ok());
    tor0 = lab->lab().NetnsOf("tor0");
  }
  std::unique_ptr<Injector> Make(const std::string& kind) {
    auto inj = InjectorEnv::Make(kind);
    REQUIRE(inj.ok());
    return std::move(*inj);
  }
};

TEST_CASE("bandwidth_throttle: a 2 MiB message no longer fits in a second",
          "[.root][integration]") {
  Env env;
  auto pair = TcpPair::Open(env.h0, env.h1, env.h1_addr);
  REQUIRE(pair.ok());
  REQUIRE((*pair)->RoundTrip(2 << 20, 3 * kNsPerSec).ok());  // 1 Gbit/s: ~20 ms
  auto inj = env.Make("bandwidth_throttle");
  FaultSpec spec{"bandwidth_throttle", "h0.nic0", {{"rate", "2mbit"}}, 0, 1};
  auto h = InjectFault(*inj, spec, env.fabric(), &env.journal);
  REQUIRE(h.ok());
  auto q = ReadRootQdisc(env.h0, "nic0");
  REQUIRE(q.ok());
  CHECK(q->rate_bps == 2000000);
  // At 2 Mbit/s with a 256 KiB burst, 2 MiB needs about 7 s.
  CHECK((*pair)->RoundTrip(2 << 20, kNsPerSec).code() == Code::kDeadlineExceeded);
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  q = ReadRootQdisc(env.h0, "nic0");
  REQUIRE(q.ok());
  CHECK(q->rate_bps == 1000000000);  // the lab's own shaping is back
  auto fresh = TcpPair::Open(env.h0, env.h1, env.h1_addr);
  REQUIRE(fresh.ok());
  CHECK((*fresh)->RoundTrip(2 << 20, 3 * kNsPerSec).ok());
  CHECK(RevertFault(*inj, *h, &env.journal).ok());
}

TEST_CASE("packet_loss: measured loss over 4000 datagrams is within tolerance",
          "[.root][integration]") {
  Env env;
  auto base = testing::UdpDelivered(env.h0, env.h1, env.h1_addr, 2000);
  REQUIRE(base.ok());
  CHECK(*base >= 1990);  // (almost) no loss without the fault: the loss below is the fault's
  auto inj = env.Make("packet_loss");
  FaultSpec spec{"packet_loss", "h0.nic0", {{"percent", "20"}}, 0, 1};
  auto h = InjectFault(*inj, spec, env.fabric(), &env.journal);
  REQUIRE(h.ok());
  const size_t n = 4000;
  auto got = testing::UdpDelivered(env.h0, env.h1, env.h1_addr, n);
  REQUIRE(got.ok());
  double loss = 1.0 - static_cast<double>(*got) / n;
  INFO("measured loss " << loss);
  // Binomial sd at p=0.2, n=4000 is 0.63 %; 4 % is beyond 6 sd.
  CHECK(loss > 0.16);
  CHECK(loss < 0.24);
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  auto after = testing::UdpDelivered(env.h0, env.h1, env.h1_addr, 2000);
  REQUIRE(after.ok());
  CHECK(*after >= 1990);
  CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
  CHECK(RevertFault(*inj, *h, &env.journal).ok());
}

TEST_CASE("pfc_storm stall: the paused port stops sending and spread stalls upstream",
          "[.root][integration]") {
  Env env;
  // h0's NIC storms: tor0 can no longer send to h0; with spread, h1's NIC is paused too.
  auto pair = TcpPair::Open(env.h1, env.h0, env.lab->Addr("h0", "nic0"));
  REQUIRE(pair.ok());
  REQUIRE((*pair)->RoundTrip(4096, 2 * kNsPerSec).ok());
  auto inj = env.Make("pfc_storm");
  FaultSpec spec{"pfc_storm", "h0.nic0", {{"spread", "true"}}, 0, 1};
  auto h = InjectFault(*inj, spec, env.fabric(), &env.journal);
  REQUIRE(h.ok());
  auto victim = ReadRootQdisc(env.tor0, "h0");
  auto upstream = ReadRootQdisc(env.h1, "nic0");
  REQUIRE(victim.ok());
  REQUIRE(upstream.ok());
  CHECK(victim->rate_bps == 8000);
  CHECK(upstream->rate_bps == 8000);
  CHECK_FALSE((*pair)->RoundTrip(64 * 1024, 400 * kNsPerMs).ok());
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  CHECK(ReadRootQdisc(env.tor0, "h0")->rate_bps == 1000000000);
  CHECK(TcpWorks(env.h1, env.h0, env.lab->Addr("h0", "nic0"), 5 * kNsPerSec).ok());
  CHECK(RevertFault(*inj, *h, &env.journal).ok());
}

TEST_CASE("pfc_storm stall: the watchdog releases the stall", "[.root][integration]") {
  Env env;
  auto inj = env.Make("pfc_storm");
  FaultSpec spec{"pfc_storm", "h0.nic0", {{"watchdog", "100ms"}}, 0, 1};
  auto h = InjectFault(*inj, spec, env.fabric(), &env.journal);
  REQUIRE(h.ok());
  CHECK(WaitUntil(
      [&] {
        auto q = ReadRootQdisc(env.tor0, "h0");
        return q.ok() && q->rate_bps == 1000000000;
      },
      Deadline::After(3 * kNsPerSec), 20 * kNsPerMs));
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  CHECK(RevertFault(*inj, *h, &env.journal).ok());
}

TEST_CASE("pfc_storm frames: the peer captures 802.1Qbb frames with the configured fields",
          "[.root][integration]") {
  Env env;
  // Capture on the switch side of h0's link (the veth peer, before the bridge drops them).
  auto cap = PfcCapture::Open(env.tor0, "h0");
  REQUIRE(cap.ok());
  auto inj = env.Make("pfc_storm");
  FaultSpec spec{"pfc_storm",
                 "h0.nic0",
                 {{"mode", "frames"}, {"priorities", "3,5"}, {"quanta", "4660"}, {"fps", "2000"}},
                 0,
                 1};
  auto h = InjectFault(*inj, spec, env.fabric(), &env.journal);
  REQUIRE(h.ok());
  auto frames = (*cap)->Collect(20, 2 * kNsPerSec);
  REQUIRE(frames.size() >= 20);
  for (const auto& f : frames) {
    CHECK(f.class_enable == ((1 << 3) | (1 << 5)));
    CHECK(f.quanta[3] == 4660);
    CHECK(f.quanta[5] == 4660);
    CHECK(f.quanta[0] == 0);
  }
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  // After the revert no more frames arrive.
  (*cap)->Collect(1000000, 100 * kNsPerMs);  // drain what was in flight
  CHECK((*cap)->Collect(1, 300 * kNsPerMs).empty());
  CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
  CHECK(RevertFault(*inj, *h, &env.journal).ok());
}

}  // namespace
}  // namespace fl::injectors
