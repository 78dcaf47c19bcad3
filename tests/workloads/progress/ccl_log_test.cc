// ParseCclLogLine: NCCL_DEBUG=WARN lines that name a network error, ftccl's path-fault
// warnings (common/log.h format), and lines that must not count as a fault.
#include <catch2/catch.hpp>

#include "workloads/progress/progress.h"

namespace fl::workloads::progress {
namespace {

TEST_CASE("ccl log: NCCL network errors are fault_detected", "[unit]") {
  const char* lines[] = {
      // NET/IB completion errors, old and new wording.
      "gpu-node-3:41230:41301 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
      "from peer 10.10.2.18<48211> with error 12, opcode 0, len 0, vendor err 129 (Recv)",
      "gpu-node-3:41230:41301 [5] NCCL WARN NET/IB: Got completion from peer 10.1.1.2<53436> "
      "with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) reqSize=0 vendor_err=129",
      // Sockets.
      "node2:22555:22601 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by "
      "remote peer node0<42830>",
      "node2:22555:22601 [0] misc/socket.cc:518 NCCL WARN Net : Call to recv from "
      "10.200.84.247<58355> failed : Broken pipe",
      "node2:22555:22601 [0] NCCL WARN NET/Socket : socket progress error : Connection reset by "
      "peer",
      "node2:22555:22601 [0] NCCL WARN socketProgressOpt: Call to recv from 172.16.0.4<33759> "
      "failed : Connection reset by peer",
      // IB async events and verbs calls.
      "node2:22555:22700 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port error",
      "node2:22555:22700 [0] NCCL WARN Call to ibv_modify_qp failed with error Connection timed "
      "out",
      // A timestamp first (NCCL_DEBUG_TIMESTAMP_FORMAT).
      "[2026-12-01 20:01:02] node2:22555:22700 [0] NCCL WARN NET/IB : Got async event : "
      "GID table change",
      // What NCCL's callers print of ncclRemoteError.
      "RuntimeError: NCCL error: remote process exited or there was a network error, NCCL "
      "version 2.21.5",
      "gpu-node-17: Test NCCL failure common.cu:1030 'remote process exited or there was a "
      "network error / '",
  };
  for (const char* line : lines) {
    INFO(line);
    auto e = ParseCclLogLine(line);
    REQUIRE(e.has_value());
    CHECK(e->library == "nccl");
    CHECK(e->kind == "fault_detected");
    CHECK_FALSE(e->detail.empty());
    CHECK(e->detail.size() <= 512);
  }
  auto e = ParseCclLogLine(lines[0]);
  REQUIRE(e.has_value());
  CHECK(e->detail.rfind("NET/IB : Got completion from peer 10.10.2.18<48211>", 0) == 0);
}

TEST_CASE("ccl log: other NCCL failures are ccl_error", "[unit]") {
  auto e = ParseCclLogLine("h:1:2 [0] enqueue.cc:120 NCCL WARN Cuda failure 'out of memory'");
  REQUIRE(e.has_value());
  CHECK(e->kind == "ccl_error");
  auto t = ParseCclLogLine("gpu-node-17: Test NCCL failure common.cu:900 'unhandled cuda error'");
  REQUIRE(t.has_value());
  CHECK(t->kind == "ccl_error");
}

TEST_CASE("ccl log: ftccl's path faults", "[unit]") {
  struct Case {
    const char* line;
    const char* kind;
    const char* detail;
  };
  const Case cases[] = {
      {"2026-11-30T01:02:03.456Z W ftccl [run=r1 host=h0 rank=3] path to rank 1 ch 0 "
       "10.0.1.1->10.0.1.2 failed (link_down): eth1 went down; 4 chunk(s) requeued  "
       "(engine.cc:927)",
       "fault_detected",
       "path to rank 1 ch 0 10.0.1.1->10.0.1.2 failed (link_down): eth1 went down; 4 chunk(s) "
       "requeued"},
      {"2026-11-30T01:02:03.456Z W ftccl link down on NIC eth1  (engine.cc:1627)", "fault_detected",
       "link down on NIC eth1"},
      {"2026-11-30T01:02:04.000Z E ftccl [rank=0] no healthy path to rank 2; what each channel "
       "waits for:",
       "fault_detected", "no healthy path to rank 2; what each channel waits for:"},
      {"2026-11-30T01:02:04.000Z E ftccl collective 17 timed out; what each channel waits for:",
       "ccl_error", "collective 17 timed out; what each channel waits for:"},
      {"ftccl-perf: Unavailable: rank 0: ftccl: no healthy path to rank 1 for 2.0s",
       "fault_detected", "Unavailable: rank 0: ftccl: no healthy path to rank 1 for 2.0s"},
      {"ftccl-perf: DeadlineExceeded: ftccl: collective 3 timed out after 10s", "ccl_error",
       "DeadlineExceeded: ftccl: collective 3 timed out after 10s"},
      {"vm: Test CCL failure ftccl-perf 'Unavailable: rank 0: ftccl (fail-stop): path to rank 1 "
       "failed'",
       "fault_detected", "Unavailable: rank 0: ftccl (fail-stop): path to rank 1 failed"},
  };
  for (const Case& c : cases) {
    INFO(c.line);
    auto e = ParseCclLogLine(c.line);
    REQUIRE(e.has_value());
    CHECK(e->library == "ftccl");
    CHECK(e->kind == c.kind);
    CHECK(e->detail == c.detail);
  }
}

TEST_CASE("ccl log: lines that name no fault", "[unit]") {
  const char* lines[] = {
      "",
      "   ",
      "hello world",
      "gpu-node-3:41230:41301 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.3<0>",
      "gpu-node-3:41230:41301 [0] NCCL INFO [Service thread] Connection closed by localRank 0",
      "gpu-node-3:41230:41301 [0] NCCL INFO transport/net.cc:1302 -> 6",
      "gpu-node-3:41230:41301 [0] NCCL WARN NET/Plugin : dlerror=libnccl-net.so: cannot open",
      "gpu-node-3:41230:41301 [0] NCCL WARN NCCL_SOCKET_IFNAME set by environment to eth9",
      "gpu-node-3:41230:41301 [0] NCCL WARN",
      "2026-11-30T01:02:03.456Z I ftccl path restored to rank 1 ch 0 eth1  (engine.cc:880)",
      "2026-11-30T01:02:03.456Z W ftccl rtnetlink unavailable: link-down detection by timeouts "
      "only  (engine.cc:552)",
      "2026-11-30T01:02:03.456Z W lab path to rank 1 ch 0 eth1 failed (x): y  (lab.cc:1)",
      "ftccl-perf: InvalidArgument: -b must not exceed -e",
      "vm: Test CCL failure ftccl-perf 'InvalidArgument: bad'",
      "     8   2  float  sum  -1  10.00  0.00  0.00  0  10.00  0.00  0.00  0",
  };
  for (const char* line : lines) {
    INFO(line);
    CHECK_FALSE(ParseCclLogLine(line).has_value());
  }
}

TEST_CASE("ccl log: details are bounded", "[unit]") {
  std::string line = "h:1:2 [0] NCCL WARN NET/IB : " + std::string(100000, 'x');
  auto e = ParseCclLogLine(line);
  REQUIRE(e.has_value());
  CHECK(e->detail.size() <= 512);
  // Not cut inside a UTF-8 sequence.
  std::string utf = "h:1:2 [0] NCCL WARN NET/IB : ";
  for (int i = 0; i < 400; ++i) utf += "\xc3\xa9";
  auto u = ParseCclLogLine(utf);
  REQUIRE(u.has_value());
  CHECK(u->detail.size() <= 512);
  CHECK((static_cast<unsigned char>(u->detail.back()) & 0xC0) == 0x80);  // ends on é's tail
}

}  // namespace
}  // namespace fl::workloads::progress
