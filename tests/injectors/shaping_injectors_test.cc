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

// Overlap rule (docs/injectors.md): one root-qdisc fault per interface at a time. The observed
// bug: 100 then 50 Mbit/s on one port, reverted in order, left the link at 100 Mbit/s while
// both reverts verified "gone". Now the second is refused before anything changes, and the
// revert restores exactly the rate read before the first fault.
TEST_CASE(
    "bandwidth_throttle: a second throttle on a throttled port is refused, revert restores "
    "the original rate",
    "[.root][integration]") {
  Env env;
  auto original = ReadRootQdisc(env.h0, "nic0");
  REQUIRE(original.ok());
  auto original_tor = ReadRootQdisc(env.tor0, "h0");
  REQUIRE(original_tor.ok());
  auto a = env.Make("bandwidth_throttle");
  auto b = env.Make("bandwidth_throttle");
  FaultSpec s100{"bandwidth_throttle", "h0.nic0", {{"rate", "100mbit"}}, 0, 1};
  FaultSpec s50{"bandwidth_throttle", "h0.nic0", {{"rate", "50mbit"}}, 0, 1};
  auto h100 = InjectFault(*a, s100, env.fabric(), &env.journal);
  REQUIRE(h100.ok());
  auto h50 = InjectFault(*b, s50, env.fabric(), &env.journal);
  REQUIRE(h50.status().code() == Code::kFailedPrecondition);
  CHECK(h50.status().message().find(h100->id) != std::string::npos);
  CHECK(env.journal.List()->size() == 1);
  // Nothing of the refused fault was applied.
  CHECK(ReadRootQdisc(env.h0, "nic0")->rate_bps == 100000000);
  CHECK(ReadRootQdisc(env.tor0, "h0")->rate_bps == 100000000);
  REQUIRE(RevertFault(*a, *h100, &env.journal).ok());
  auto after = ReadRootQdisc(env.h0, "nic0");
  REQUIRE(after.ok());
  CHECK(after->kind == original->kind);
  CHECK(after->rate_bps == original->rate_bps);
  CHECK(ReadRootQdisc(env.tor0, "h0")->rate_bps == original_tor->rate_bps);
  // Once the first is reverted the port is free again, and its revert restores the original.
  h50 = InjectFault(*b, s50, env.fabric(), &env.journal);
  REQUIRE(h50.ok());
  CHECK(ReadRootQdisc(env.h0, "nic0")->rate_bps == 50000000);
  REQUIRE(RevertFault(*b, *h50, &env.journal).ok());
  CHECK(ReadRootQdisc(env.h0, "nic0")->rate_bps == original->rate_bps);
  CHECK(env.journal.List()->empty());
}

TEST_CASE("bandwidth_throttle: Verify(gone) compares with the rate before the fault",
          "[.root][integration]") {
  Env env;
  auto original = ReadRootQdisc(env.h0, "nic0");
  REQUIRE(original.ok());
  auto inj = env.Make("bandwidth_throttle");
  FaultSpec spec{"bandwidth_throttle", "h0.nic0", {{"rate", "100mbit"}}, 0, 1};
  auto h = InjectFault(*inj, spec, env.fabric(), &env.journal);
  REQUIRE(h.ok());
  REQUIRE(inj->Revert(*h).ok());
  CHECK(inj->Verify(*h, Expect::kGone).ok());
  // Someone leaves a different tbf behind: that is not "gone", though a tbf is there as before.
  REQUIRE(SetTbf(env.h0, "nic0", 300000000, 256 * 1024).ok());
  CHECK(inj->Verify(*h, Expect::kGone).code() == Code::kInternal);
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  CHECK(ReadRootQdisc(env.h0, "nic0")->rate_bps == original->rate_bps);
}

TEST_CASE("pfc_storm stall and bandwidth_throttle on one port: the second is refused",
          "[.root][integration]") {
  Env env;
  auto storm = env.Make("pfc_storm");
  auto throttle = env.Make("bandwidth_throttle");
  auto h =
      InjectFault(*storm, FaultSpec{"pfc_storm", "h0.nic0", {}, 0, 1}, env.fabric(), &env.journal);
  REQUIRE(h.ok());
  FaultSpec t{
      "bandwidth_throttle", "h0.nic0", {{"rate", "10mbit"}, {"direction", "to_host"}}, 0, 1};
  auto refused = InjectFault(*throttle, t, env.fabric(), &env.journal);
  CHECK(refused.status().code() == Code::kFailedPrecondition);
  CHECK(refused.status().message().find(h->id) != std::string::npos);
  CHECK(ReadRootQdisc(env.tor0, "h0")->rate_bps == 8000);  // the storm's stall is untouched
  // A throttle on the other end of the link (the host's NIC) is another qdisc: it stacks.
  FaultSpec other{
      "bandwidth_throttle", "h0.nic0", {{"rate", "10mbit"}, {"direction", "from_host"}}, 0, 1};
  auto h2 = InjectFault(*throttle, other, env.fabric(), &env.journal);
  REQUIRE(h2.ok());
  REQUIRE(RevertFault(*storm, *h, &env.journal).ok());
  CHECK(ReadRootQdisc(env.tor0, "h0")->rate_bps == 1000000000);
  CHECK(ReadRootQdisc(env.h0, "nic0")->rate_bps == 10000000);  // the other stays
  REQUIRE(RevertFault(*throttle, *h2, &env.journal).ok());
  CHECK(ReadRootQdisc(env.h0, "nic0")->rate_bps == 1000000000);
  CHECK(env.journal.List()->empty());
}

TEST_CASE("packet_loss and link_blackhole stack on one port: a revert removes only its own",
          "[.root][integration]") {
  Env env;
  // Resolve h0 <-> h1 (the ToR bridges them) once, then keep the entries: the faults below drop
  // ARP too, and this test is about the loss, not about how ARP retries through it.
  REQUIRE(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
  REQUIRE(testing::PinNeighbours(env.h0).ok());
  REQUIRE(testing::PinNeighbours(env.h1).ok());
  auto loss = env.Make("packet_loss");
  auto hole = env.Make("link_blackhole");
  auto hl = InjectFault(*loss, FaultSpec{"packet_loss", "h0.nic0", {{"percent", "50"}}, 0, 1},
                        env.fabric(), &env.journal);
  REQUIRE(hl.ok());
  auto hb = InjectFault(*hole, FaultSpec{"link_blackhole", "h0.nic0", {}, 0, 1}, env.fabric(),
                        &env.journal);
  REQUIRE(hb.ok());
  CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 300 * kNsPerMs).code() != Code::kOk);
  REQUIRE(RevertFault(*hole, *hb, &env.journal).ok());
  // The loss fault is still there, exactly as before the blackhole.
  CHECK(loss->Verify(*hl, Expect::kPresent).ok());
  auto got = testing::UdpDelivered(env.h0, env.h1, env.h1_addr, 1000);
  REQUIRE(got.ok());
  CHECK(*got > 300);
  CHECK(*got < 700);
  REQUIRE(RevertFault(*loss, *hl, &env.journal).ok());
  CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
  CHECK(env.journal.List()->empty());
}

TEST_CASE("pfc_storm frames: two generators on one NIC stack, a revert stops only its own",
          "[.root][integration]") {
  Env env;
  auto inj = env.Make("pfc_storm");
  FaultSpec spec{"pfc_storm", "h0.nic0", {{"mode", "frames"}, {"fps", "500"}}, 0, 1};
  auto a = InjectFault(*inj, spec, env.fabric(), &env.journal);
  REQUIRE(a.ok());
  auto b = InjectFault(*inj, spec, env.fabric(), &env.journal);
  REQUIRE(b.ok());
  REQUIRE(RevertFault(*inj, *a, &env.journal).ok());
  CHECK(inj->Verify(*b, Expect::kPresent).ok());
  auto cap = PfcCapture::Open(env.tor0, "h0");
  REQUIRE(cap.ok());
  CHECK((*cap)->Collect(5, 2 * kNsPerSec).size() >= 5);
  REQUIRE(RevertFault(*inj, *b, &env.journal).ok());
  CHECK(env.journal.List()->empty());
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
