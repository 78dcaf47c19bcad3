// The NIC counter sampler's parts: the netlink statistics parse (a message recorded from a
// veth), the choice of ethtool counters, the RDMA port counters in a fake sysfs tree, the
// data NICs of a host, the sampler's rounds with a fake source ([unit]); and the kernel
// source reading loopback, which any user may do ([integration]).
#include "harness/agent/nic_counters.h"

#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <mutex>

#include "common/file_util.h"
#include "harness/proto/nic_sample.h"
#include "injectors/switch/switch_driver.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// The kernel's answer (Linux 6.18) to RTM_GETLINK for one end of a veth pair (vr0, in a
// namespace of its own) after 25 UDP datagrams of 1000 bytes went out and 7 of 300 came in,
// as recv(2) returned it. `ip -s -s -j link show vr0` said then: rx 20 packets 6492 bytes,
// tx 38 packets 28828 bytes, no errors or drops (the kernel's own ARP, IPv6 neighbour and
// router solicitations included).
const std::string kVethNewLink =
    "dc05000010000000070000005232000000000100020000004310010000000000080003007672300008000d00e80300"
    "00"
    "05001000060000000500110000000000050043000000000008000400dc050000080032004400000008003300ffff00"
    "00"
    "08001b000000000008001e000000000008003d000000000008001f000200000008002800ffff000008002900000001"
    "00"
    "08003a000000010008003f0000000100080040000000010008003b00f8ff070008003c00ffff000008004200000000"
    "00"
    "08002000020000000500210001000000080023000200000008002f0001000000080030000100000006004400000000"
    "00"
    "060045000000000005002700000000000a000100c6b708049ffe00000a000200ffffffffffff0000cc001700140000"
    "00"
    "0000000026000000000000005c190000000000009c7000000000000000000000000000000000000000000000000000"
    "00"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00"
    "000000006400070014000000260000005c1900009c7000000000000000000000000000000000000000000000000000"
    "00"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00"
    "00000000000000000c002b000500020000000000100012000900010076657468000000000800250000000000080005"
    "00"
    "020000000c0006006e6f71756575650030031a008c0002008800010000000000000000000000000001000000010000"
    "00"
    "0100000001000000000000000100000000000000000000000000000000000000000000000000000000000000000000"
    "00"
    "00000000000000000000000000000000000000000000000000000000000000000000000010270000e8030000000000"
    "00"
    "00000000000000000000000001000000a0020a00080001001000008014000500ffff00001cdd6800047c0000e80300"
    "00"
    "f40002000000000040000000dc05000001000000010000000100000001000000ffffffffa00f0000e8030000000000"
    "00"
    "803a0900805101000300000058020000100000000000000001000000010000000100000060ea000000000000000000"
    "00"
    "0000000000000000000000000000000001000000000000000000000010270000e80300000100000000000000000000"
    "00"
    "010000000000000000000000010000000000000000000000000000000000000080ee36000000000000000000010000"
    "00"
    "00000000000000000000000000000000000000000004000000000000ffff0000ffffffff0100000000000000000000"
    "00"
    "000000003401030026000000000000000600000000000000b001000000000000000000000000000006000000000000"
    "00"
    "00000000000000000000000000000000000000000000000006000000000000000600000000000000b0010000000000"
    "00"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000006000000000000"
    "00"
    "060000000000000000000000000000000000000000000000b001000000000000b00100000000000000000000000000"
    "00"
    "0000000000000000000000000000000000000000000000003c00060007000000000000000000000000000000000000"
    "00"
    "0000000006000000000000000000000000000000000000000000000000000000000000001400070000000000000000"
    "00"
    "0000000000000000050008000000000024000e00000000000000000000000000000000000000000000000000000000"
    "00"
    "0000000004003e8004004180";

TEST_CASE("nic counters: the link statistics of a recorded RTM_NEWLINK", "[unit]") {
  auto c = ParseLinkStats(FromHex(kVethNewLink));
  REQUIRE(c.ok());
  CHECK(c->rx_packets == 20);
  CHECK(c->rx_bytes == 6492);
  CHECK(c->tx_packets == 38);
  CHECK(c->tx_bytes == 28828);
  CHECK(c->rx_errors == 0);
  CHECK(c->tx_errors == 0);
  CHECK(c->rx_dropped == 0);
  CHECK(c->tx_dropped == 0);
  CHECK_FALSE(c->rx_pause.has_value());  // netlink has no pause counts; ethtool may
  // IFLA_CARRIER_CHANGES: the ledger's kernel layer reads it (reports/metrics/ledger.h).
  CHECK(c->extra == std::map<std::string, uint64_t>{{"carrier_changes", 2}});
}

// A message built here: header, ifinfomsg, then the given attributes.
struct Msg {
  std::vector<uint8_t> bytes;
  explicit Msg(uint16_t type = RTM_NEWLINK) {
    bytes.resize(NLMSG_ALIGN(sizeof(nlmsghdr)) + NLMSG_ALIGN(sizeof(ifinfomsg)));
    nlmsghdr h{};
    h.nlmsg_type = type;
    std::memcpy(bytes.data(), &h, sizeof h);
    Fix();
  }
  Msg& Attr(uint16_t type, const void* data, size_t len) {
    rtattr a{};
    a.rta_type = type;
    a.rta_len = static_cast<unsigned short>(RTA_LENGTH(len));
    const size_t at = bytes.size();
    bytes.resize(at + RTA_SPACE(len));
    std::memcpy(bytes.data() + at, &a, sizeof a);
    std::memcpy(bytes.data() + at + RTA_LENGTH(0), data, len);
    Fix();
    return *this;
  }
  void Fix() {
    const uint32_t len = static_cast<uint32_t>(bytes.size());
    std::memcpy(bytes.data(), &len, sizeof len);  // nlmsg_len is the first field
  }
};

TEST_CASE("nic counters: 32-bit IFLA_STATS when there is no IFLA_STATS64, and what is refused",
          "[unit]") {
  rtnl_link_stats s32{};
  s32.rx_packets = 1;
  s32.tx_packets = 2;
  s32.rx_bytes = 3;
  s32.tx_bytes = 4;
  s32.rx_errors = 5;
  s32.tx_errors = 6;
  s32.rx_dropped = 7;
  s32.tx_dropped = 8;
  const char name[] = "eth9";
  Msg m;
  m.Attr(IFLA_IFNAME, name, sizeof name).Attr(IFLA_STATS, &s32, sizeof s32);
  auto c = ParseLinkStats(m.bytes);
  REQUIRE(c.ok());
  CHECK(NicCounters{3, 4, 1, 2, 7, 8, 5, 6, std::nullopt, std::nullopt, {}} == *c);

  // IFLA_STATS64 wins, and an older kernel's shorter struct is fine (the rest stays zero).
  rtnl_link_stats64 s64{};
  s64.rx_bytes = 1ULL << 40;
  s64.tx_dropped = 9;
  m.Attr(IFLA_STATS64, &s64, 8 * sizeof(uint64_t));
  c = ParseLinkStats(m.bytes);
  REQUIRE(c.ok());
  CHECK(c->rx_bytes == (1ULL << 40));
  CHECK(c->tx_dropped == 9);
  CHECK(c->rx_packets == 0);

  CHECK(ParseLinkStats({}).status().code() == Code::kDataLoss);
  auto cut = m.bytes;
  cut.resize(cut.size() - 4);  // nlmsg_len now exceeds the bytes
  CHECK(ParseLinkStats(cut).status().code() == Code::kDataLoss);
  Msg no_stats;
  no_stats.Attr(IFLA_IFNAME, name, sizeof name);
  CHECK(ParseLinkStats(no_stats.bytes).status().code() == Code::kDataLoss);
  Msg other(RTM_NEWADDR);
  CHECK(ParseLinkStats(other.bytes).status().code() == Code::kDataLoss);
  // An attribute claiming more bytes than the message has.
  Msg overrun;
  overrun.Attr(IFLA_STATS64, &s64, sizeof s64);
  overrun.bytes[NLMSG_ALIGN(sizeof(nlmsghdr)) + NLMSG_ALIGN(sizeof(ifinfomsg))] = 0xff;
  overrun.bytes[NLMSG_ALIGN(sizeof(nlmsghdr)) + NLMSG_ALIGN(sizeof(ifinfomsg)) + 1] = 0x7f;
  CHECK(ParseLinkStats(overrun.bytes).status().code() == Code::kDataLoss);

  // The kernel's error answer (no such device) is Unavailable with its errno.
  std::vector<uint8_t> err(NLMSG_ALIGN(sizeof(nlmsghdr)) + sizeof(nlmsgerr));
  nlmsghdr h{};
  h.nlmsg_len = static_cast<uint32_t>(err.size());
  h.nlmsg_type = NLMSG_ERROR;
  nlmsgerr e{};
  e.error = -ENODEV;
  std::memcpy(err.data(), &h, sizeof h);
  std::memcpy(err.data() + NLMSG_ALIGN(sizeof(nlmsghdr)), &e, sizeof e);
  auto gone = ParseLinkStats(err);
  CHECK(gone.status().code() == Code::kUnavailable);
  CHECK(gone.status().message().find("No such device") != std::string::npos);
}

// What veth's driver reports (ethtool -S on Linux 6.18), here with two queues.
const std::vector<std::string> kVethStats = {
    "peer_ifindex",        "rx_queue_0_xdp_packets",    "rx_queue_0_xdp_bytes",
    "rx_queue_0_drops",    "rx_queue_0_xdp_redirect",   "rx_queue_0_xdp_drops",
    "rx_queue_0_xdp_tx",   "rx_queue_0_xdp_tx_errors",  "rx_queue_1_drops",
    "tx_queue_0_xdp_xmit", "tx_queue_0_xdp_xmit_errors"};

TEST_CASE("nic counters: veth's ethtool statistics give a few summed extras and no pause",
          "[unit]") {
  EthtoolPlan plan = PlanEthtoolCounters(kVethStats);
  CHECK(plan.n_stats == kVethStats.size());
  CHECK_FALSE(plan.has_rx_pause);
  CHECK_FALSE(plan.has_tx_pause);
  std::vector<uint64_t> values(kVethStats.size());
  for (size_t i = 0; i < values.size(); ++i) values[i] = 100 + i;
  NicCounters c;
  ApplyEthtoolPlan(plan, values, c);
  CHECK_FALSE(c.rx_pause.has_value());
  CHECK_FALSE(c.tx_pause.has_value());
  const std::map<std::string, uint64_t> want = {
      {"rx_queue_drops", 103 + 108},  // both queues' drops under one name
      {"rx_queue_xdp_drops", 105},
      {"rx_queue_xdp_tx_errors", 107},
      {"tx_queue_xdp_xmit_errors", 110}};
  CHECK(c.extra == want);
  // A shorter answer (the driver changed under us) adds only what it has.
  NicCounters partial;
  ApplyEthtoolPlan(plan, std::span<const uint64_t>(values).first(6), partial);
  CHECK(partial.extra ==
        std::map<std::string, uint64_t>{{"rx_queue_drops", 103}, {"rx_queue_xdp_drops", 105}});
}

TEST_CASE("nic counters: pause frames of a RoCE NIC add up by direction, their durations do not",
          "[unit]") {
  // Names of the kind mlx5 and i40e report, mixed.
  const std::vector<std::string> names = {
      "rx_packets",                   // 0: not kept (netlink has it)
      "rx_pause_ctrl_phy",            // 1: rx pause (802.3x)
      "tx_pause_ctrl_phy",            // 2: tx pause
      "rx_prio0_pause",               // 3: rx PFC, priority 0
      "rx_prio3_pause",               // 4: rx PFC, priority 3
      "tx_prio3_pause",               // 5: tx PFC
      "rx_pause_duration_phy",        // 6: a duration: not a frame count
      "rx_prio3_pause_transition",    // 7: transitions: not frames
      "tx_pause_storm_error_events",  // 8: storm events: an extra, not pause frames
      "rx_discards_phy",              // 9: extra
      "rx0_xdp_drop",                 // 10: per-queue ...
      "rx1_xdp_drop",                 // 11: ... summed as rx_xdp_drop
      "port.link_xoff_rx",            // 12: i40e's link pause received
      "np_cnp_sent",                  // 13: extra (RoCE congestion)
      "rx_bytes_phy",                 // 14: not kept
  };
  EthtoolPlan plan = PlanEthtoolCounters(names);
  CHECK(plan.has_rx_pause);
  CHECK(plan.has_tx_pause);
  std::vector<uint64_t> v(names.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1ULL << i;
  NicCounters c;
  ApplyEthtoolPlan(plan, v, c);
  CHECK(c.rx_pause == (v[1] + v[3] + v[4] + v[12]));
  CHECK(c.tx_pause == (v[2] + v[5]));
  CHECK(c.extra.count("rx_packets") == 0);
  CHECK(c.extra.count("rx_bytes_phy") == 0);
  CHECK(c.extra.count("rx_pause_duration_phy") == 0);
  CHECK(c.extra.count("rx_prio3_pause_transition") == 0);
  CHECK(c.extra.at("rx_prio3_pause") == v[4]);  // each pause counter is kept as well
  CHECK(c.extra.at("tx_pause_storm_error_events") == v[8]);
  CHECK(c.extra.at("rx_discards_phy") == v[9]);
  CHECK(c.extra.at("rx_xdp_drop") == v[10] + v[11]);
  CHECK(c.extra.at("port.link_xoff_rx") == v[12]);
  CHECK(c.extra.at("np_cnp_sent") == v[13]);
}

TEST_CASE("nic counters: at most 32 driver extras, pause ones first, names made safe", "[unit]") {
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) names.push_back("port_err_" + std::to_string(i) + "_count");
  names.push_back("rx pause(frames)");
  names.push_back(std::string(200, 'x') + "_drop");
  EthtoolPlan plan = PlanEthtoolCounters(names);
  std::vector<uint64_t> v(names.size(), 1);
  NicCounters c;
  ApplyEthtoolPlan(plan, v, c);
  CHECK(c.extra.size() == kMaxEthtoolExtras);
  static_assert(kMaxExtraCounters <= kMaxNicExtraCounters);  // all of them reach the store
  CHECK(c.extra.count("rx_pause_frames_") == 1);             // kept before the 100 error counters
  CHECK(c.rx_pause == 1);
  CHECK(c.extra.count("port_err_0_count") == 1);
  CHECK(c.extra.count("port_err_99_count") == 0);
  for (const auto& [name, value] : c.extra) {
    INFO(name);
    CHECK(IsValidNicCounterName(name));  // what the coordinator takes
  }
  CHECK_FALSE(IsValidNicCounterName(""));
  CHECK_FALSE(IsValidNicCounterName("rx pause"));
  CHECK_FALSE(IsValidNicCounterName(std::string(65, 'x')));
  CHECK(IsValidNicCounterName("rdma_port_rcv_data"));
  CHECK(PlanEthtoolCounters({}).uses.empty());
}

void Write(const std::string& path, const std::string& text) {
  const size_t slash = path.rfind('/');
  REQUIRE(MakeDirs(path.substr(0, slash)).ok());
  REQUIRE(WriteFileAtomic(path, text).ok());
}

TEST_CASE("nic counters: RDMA port counters from a fake sysfs tree", "[unit]") {
  testing::TempDir dir("fl_nic_sysfs");
  REQUIRE_FALSE(dir.path().empty());
  const std::string ib = dir.path() + "/infiniband";
  // mlx5_0: RoCE, two ports, the second on ens1f1 (its GID table names it).
  Write(ib + "/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens1f0\n");
  Write(ib + "/mlx5_0/ports/2/gid_attrs/ndevs/0", "ens1f1\n");
  Write(ib + "/mlx5_0/ports/2/gid_attrs/ndevs/1", "ens1f1\n");
  Write(ib + "/mlx5_0/ports/2/counters/port_rcv_data", "123456789012\n");
  Write(ib + "/mlx5_0/ports/2/counters/port_xmit_data", "42\n");
  Write(ib + "/mlx5_0/ports/2/counters/port_rcv_errors", "N/A\n");  // not a count: left out
  Write(ib + "/mlx5_0/ports/2/counters/port_xmit_discards", "99999999999999999999999\n");
  Write(ib + "/mlx5_0/ports/2/counters/unlisted_counter", "7\n");  // not on the short list
  Write(ib + "/mlx5_0/ports/2/hw_counters/np_cnp_sent", "5\n");
  Write(ib + "/mlx5_0/ports/2/hw_counters/out_of_buffer", "0\n");
  // mlx5_1: one port, no GID names; its PCI device holds the netdev ib0.
  Write(ib + "/mlx5_1/ports/1/counters/port_xmit_packets", "8\n");
  Write(ib + "/mlx5_1/device/net/ib0/ifindex", "5\n");

  CHECK(FindRdmaPort(ib, "ens1f1") == ib + "/mlx5_0/ports/2");
  CHECK(FindRdmaPort(ib, "ens1f0") == ib + "/mlx5_0/ports/1");
  CHECK(FindRdmaPort(ib, "ib0") == ib + "/mlx5_1/ports/1");
  CHECK(FindRdmaPort(ib, "veth7").empty());
  CHECK(FindRdmaPort(ib, "").empty());
  CHECK(FindRdmaPort(dir.path() + "/no_such_dir", "ens1f0").empty());  // no RDMA here

  NicCounters c;
  ReadRdmaCounters(FindRdmaPort(ib, "ens1f1"), c);
  const std::map<std::string, uint64_t> want = {{"rdma_port_rcv_data", 123456789012ULL},
                                                {"rdma_port_xmit_data", 42},
                                                {"rdma_np_cnp_sent", 5},
                                                {"rdma_out_of_buffer", 0}};
  CHECK(c.extra == want);
}

TEST_CASE("nic counters: a host's data NICs are its kernel ports, by lab name", "[unit]") {
  std::vector<injectors::Port> ports(4);
  ports[0].name = "h1.nic0";
  ports[0].netns = "fl-x-h1";
  ports[0].ifname = "nic0";
  ports[1].name = "h1.nic1";
  ports[1].ifname = "ens1f1";
  ports[2] = ports[0];  // listed twice (a host and a rail target overlap): once
  ports[3].name = "h1.nic2";
  ports[3].ifname = "Ethernet12";
  ports[3].sw = std::make_shared<injectors::SwitchConn>();  // a switch's port
  const std::vector<NicTarget> want = {{"nic0", "fl-x-h1", "nic0"}, {"nic1", "", "ens1f1"}};
  CHECK(NicTargetsOf("h1", ports) == want);
  CHECK(NicTargetsOf("h1", {}).empty());
}

TEST_CASE("nic counters: ticks keep to their grid and skip the ones missed", "[unit]") {
  CHECK(NextTick(1000, 100, 500) == 1000);
  CHECK(NextTick(1000, 100, 1000) == 1100);
  CHECK(NextTick(1000, 100, 1099) == 1100);
  CHECK(NextTick(1000, 100, 1100) == 1200);
  CHECK(NextTick(1000, 100, 1550) == 1600);  // four rounds late: the next one, not four
}

// Counters that grow by 10 bytes a read; NICs named "bad..." cannot be read.
class FakeSource : public NicCounterSource {
 public:
  StatusOr<NicCounters> Read(const NicTarget& nic) override {
    reads++;
    if (nic.nic.rfind("bad", 0) == 0) return UnavailableError("no such NIC " + nic.ifname);
    NicCounters c;
    c.tx_bytes = 10 * ++count_[nic.nic];
    return c;
  }
  std::atomic<int> reads{0};

 private:
  std::map<std::string, uint64_t> count_;
};

struct Rounds {
  std::mutex mu;
  std::vector<std::vector<NicSample>> all;
  size_t size() {
    std::lock_guard lock(mu);
    return all.size();
  }
};

TEST_CASE("nic sampler: a round at once, then every interval, a last one at Stop", "[unit]") {
  auto source = std::make_unique<FakeSource>();
  FakeSource* src = source.get();
  Rounds rounds;
  NicSampler sampler(
      std::move(source),
      [&](std::vector<NicSample>&& r) {
        std::lock_guard lock(rounds.mu);
        rounds.all.push_back(std::move(r));
      },
      10 * kNsPerMs);
  CHECK_FALSE(sampler.running());
  const std::vector<NicTarget> nics = {{"nic0", "", "a"}, {"bad1", "", "b"}, {"nic1", "", "c"}};
  sampler.Start(nics);
  CHECK(sampler.running());
  REQUIRE(WaitUntil([&] { return rounds.size() >= 3; }, Deadline::After(10 * kNsPerSec), kNsPerMs));
  sampler.Start(nics);  // running: nothing changes
  sampler.Stop();
  CHECK_FALSE(sampler.running());
  const size_t n = rounds.size();
  const int reads = src->reads;
  {
    std::lock_guard lock(rounds.mu);
    Nanos last = 0;
    for (size_t i = 0; i < rounds.all.size(); ++i) {
      const auto& r = rounds.all[i];
      REQUIRE(r.size() == 2);  // the NIC that cannot be read is left out, the others go on
      CHECK(r[0].nic == "nic0");
      CHECK(r[1].nic == "nic1");
      CHECK(r[0].counters.tx_bytes == 10 * (i + 1));
      CHECK(r[0].wall_ns >= last);
      last = r[1].wall_ns;
    }
  }
  CHECK(reads == static_cast<int>(3 * n));
  // Stopped: no more rounds (a bounded wait for one that must not come).
  CHECK_FALSE(
      WaitUntil([&] { return src->reads != reads; }, Deadline::After(50 * kNsPerMs), kNsPerMs));
  sampler.Stop();  // idempotent

  // Started again with another list: only those NICs.
  sampler.Start({{"nic7", "", "d"}});
  REQUIRE(
      WaitUntil([&] { return rounds.size() >= n + 2; }, Deadline::After(10 * kNsPerSec), kNsPerMs));
  sampler.Start({});  // an empty list stops
  CHECK_FALSE(sampler.running());
  std::lock_guard lock(rounds.mu);
  for (size_t i = n; i < rounds.all.size(); ++i) {
    REQUIRE(rounds.all[i].size() == 1);
    CHECK(rounds.all[i][0].nic == "nic7");
  }
}

// The real source on loopback, in this process's namespace: no root needed.
TEST_CASE("nic counters: the kernel's counters of lo grow with traffic over it", "[integration]") {
  KernelNicCounters kernel("/nonexistent");
  const NicTarget lo{"lo", "", "lo"};
  auto before = kernel.Read(lo);
  REQUIRE(before.ok());
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);  // discard: nobody listens, the datagrams still cross lo
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string payload(1000, 'x');
  for (int i = 0; i < 20; ++i)
    sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  close(fd);
  auto after = kernel.Read(lo);
  REQUIRE(after.ok());
  CHECK(after->tx_packets >= before->tx_packets + 20);
  CHECK(after->tx_bytes >= before->tx_bytes + 20 * 1000);
  CHECK(after->rx_bytes >= before->rx_bytes + 20 * 1000);  // lo receives what it sends
  CHECK_FALSE(after->rx_pause.has_value());                // lo has no driver statistics

  // An RDMA port whose GID table names lo (a fake sysfs tree): its counters come along.
  testing::TempDir dir("fl_nic_lo");
  REQUIRE_FALSE(dir.path().empty());
  Write(dir.path() + "/ib/rxe0/ports/1/gid_attrs/ndevs/0", "lo\n");
  Write(dir.path() + "/ib/rxe0/ports/1/counters/port_xmit_data", "77\n");
  KernelNicCounters with_rdma(dir.path() + "/ib");
  auto rdma = with_rdma.Read(lo);
  REQUIRE(rdma.ok());
  CHECK(rdma->extra.at("rdma_port_xmit_data") == 77);
  CHECK(rdma->extra.size() == 1 + rdma->extra.count("carrier_changes"));
  CHECK(rdma->tx_bytes >= after->tx_bytes);

  auto missing = kernel.Read({"nic9", "", "fl-no-such9"});
  CHECK(missing.status().code() == Code::kUnavailable);
  CHECK(kernel.Read({"nic9", "", ""}).status().code() == Code::kInvalidArgument);
}

TEST_CASE("nic sample: every counter goes into the control plane's sample and back", "[unit]") {
  reports::NicCounters c;
  c.rx_bytes = 1;
  c.tx_bytes = 2;
  c.rx_packets = 3;
  c.tx_packets = 4;
  c.rx_dropped = 5;
  c.tx_dropped = 6;
  c.rx_errors = 7;
  c.tx_errors = 8;
  c.rx_pause = 9;
  c.tx_pause = 10;
  c.extra = {{"rx_prio3_pause", 11}};
  faultline::v1::NicSample n;
  SetNicCounters(c, &n);
  // Every field but the two the caller fills (nic, wall_ns) is written: a field added to the
  // protocol and not to the conversion shows here.
  const auto* d = n.GetDescriptor();
  const auto* r = n.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    if (f->name() == "nic" || f->name() == "wall_ns") continue;
    INFO(f->name());
    if (f->is_repeated())
      CHECK(r->FieldSize(n, f) == 1);
    else
      CHECK(r->HasField(n, f));
  }
  CHECK(NicCountersOf(n) == c);

  c.rx_pause.reset();
  faultline::v1::NicSample no_pause;
  SetNicCounters(c, &no_pause);
  CHECK_FALSE(no_pause.has_rx_pause());
  CHECK_FALSE(NicCountersOf(no_pause).rx_pause.has_value());
  CHECK(NicCountersOf(no_pause) == c);
}

}  // namespace
}  // namespace fl::harness
