// ftccl-perf speaks nccl-tests: its sweep (both placements of every collective exact), and its
// output, from real ftccl-perf processes over loopback, parsed by NcclTestsParser (the parser
// the command job uses for nccl-tests): rows, sizes, #wrong 0, the summary; -N 2 prints two
// cycles; -N 0 runs until SIGTERM and then prints the summary; nccl-tests' exit codes.
#include <signal.h>
#include <stdlib.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ccl_under_test/tools/perf.h"
#include "common/file_util.h"
#include "tests/child_process.h"
#include "tests/workloads/progress/nccl_tests_text.h"
#include "workloads/progress/progress.h"

#ifndef FL_FTCCL_PERF_PATH
#error "FL_FTCCL_PERF_PATH must name the ftccl-perf binary"
#endif

namespace fl::ccl {
namespace {

using workloads::progress::NcclTestsParser;
using workloads::progress::Progress;

using workloads::progress::testing::Parsed;

Parsed Parse(const std::string& text) {
  return workloads::progress::testing::ParseNcclTestsText(text);
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/flperf-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

std::string Slurp(const std::string& path) {
  auto t = ReadFile(path);
  return t.ok() ? *t : std::string();
}

// Runs ftccl-perf to its end; its exit code (nullopt: still running at the deadline) and output.
std::optional<int> RunPerfBinary(std::vector<std::string> args, const std::string& out,
                                 Nanos limit = 120 * kNsPerSec) {
  args.insert(args.begin(), FL_FTCCL_PERF_PATH);
  testing::ChildProcess::Options po;
  po.out = out;
  testing::ChildProcess p(args, po);
  if (p.pid() <= 0) return std::nullopt;
  return p.Wait(Deadline::After(limit));
}

TEST_CASE("ftccl-perf: every collective is exact out of place and in place", "[integration]") {
  for (Collective coll :
       {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
        Collective::kBroadcast, Collective::kAllToAll}) {
    INFO(Name(coll));
    PerfOptions o;
    o.coll = coll;
    o.ranks = 3;
    o.min_bytes = 5;
    o.max_bytes = 50000;
    o.factor = 31;
    o.iters = 2;
    o.warmup = 1;
    o.root = 2;
    o.check_all = true;
    o.types = {DataType::kInt32, DataType::kFloat16};
    o.ops = {ReduceOp::kSum, ReduceOp::kMin};
    o.job_id = "perf-" + std::string(Name(coll));
    auto res = RunPerf(o);
    REQUIRE(res.ok());
    const bool reduces = coll == Collective::kAllReduce || coll == Collective::kReduceScatter;
    // 5, 155, 4805 bytes; per type; per op for the reductions.
    CHECK(res->rows.size() == 3u * 2u * (reduces ? 2u : 1u));
    CHECK(res->row_count == res->rows.size());
    for (const PerfRow& r : res->rows) {
      CHECK(r.out_of_place.wrong == 0);
      CHECK(r.in_place.wrong == 0);
      CHECK(r.in_place.time_us > 0);
    }
    CHECK(PerfWrongResults(*res) == 0);
    CHECK_FALSE(res->stopped);
  }
}

TEST_CASE("ftccl-perf: its table is nccl-tests' format", "[unit]") {
  PerfOptions o;
  o.min_bytes = 1024;
  o.max_bytes = 4096;
  std::string text =
      PerfHeader(o, {"#  Rank  0 Group  0 Pid    123 on       host device cpu [host] host memory"});
  PerfRow row;
  row.bytes = 4096;
  row.count = 1024;
  row.out_of_place = {12.5, 0.33, 0.5, 0};
  row.in_place = {123456.0, 0.01, 0.02, -1};
  text += FormatPerfRow(o, row);
  PerfResult res;
  res.rows = {row};
  res.row_count = 1;
  res.busbw_sum = 0.52;
  text += PerfSummary(res);
  Parsed p = Parse(text);
  CHECK(p.summary.command.rfind("nThread 1 nGpus 1 minBytes 1024 maxBytes 4096", 0) == 0);
  REQUIRE(p.summary.devices.size() == 1);
  CHECK(p.summary.rows == 1);
  CHECK(p.summary.malformed == 0);
  REQUIRE(p.units.size() == 2);
  CHECK(p.units[0].bytes == 4096);
  CHECK(p.units[0].duration_ns == 12500);
  CHECK(p.units[0].verified_ok == std::optional<bool>(true));
  CHECK_FALSE(p.units[1].verified_ok.has_value());  // N/A
  CHECK(p.units[1].duration_ns == 123456000);
  REQUIRE(p.summary.avg_busbw_gbs.has_value());
  CHECK(*p.summary.avg_busbw_gbs == Approx(0.26));
  REQUIRE(p.summary.out_of_bounds.has_value());
  CHECK(*p.summary.out_of_bounds == 0);
  CHECK(text.find("out-of-place") != std::string::npos);
  CHECK(text.find("in-place") != std::string::npos);
}

TEST_CASE("ftccl-perf: two processes over loopback, output parsed as nccl-tests'",
          "[integration]") {
  TempDir dir;
  std::vector<std::unique_ptr<testing::ChildProcess>> ranks;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "FTCCL_HOST_ID=none",
                                     FL_FTCCL_PERF_PATH,
                                     "all_reduce_perf",
                                     "--rank",
                                     std::to_string(r),
                                     "--world-size",
                                     "2",
                                     "--rendezvous",
                                     dir.path,
                                     "--job-id",
                                     "nccltests",
                                     "--nic-addrs",
                                     "127.0.0." + std::to_string(r + 1),
                                     "-b",
                                     "1K",
                                     "-e",
                                     "256K",
                                     "-f",
                                     "4",
                                     "-n",
                                     "3",
                                     "-w",
                                     "1",
                                     "-d",
                                     "float",
                                     "-o",
                                     "sum",
                                     "-T",
                                     "20"};
    testing::ChildProcess::Options po;
    po.out = dir.path + "/out." + std::to_string(r);
    po.err = dir.path + "/err." + std::to_string(r);
    ranks.push_back(std::make_unique<testing::ChildProcess>(argv, po));
    REQUIRE(ranks.back()->pid() > 0);
  }
  for (int r = 0; r < 2; ++r) {
    auto code = ranks[r]->Wait(Deadline::After(120 * kNsPerSec));
    INFO("rank " << r << " stdout:\n"
                 << Slurp(dir.path + "/out." + std::to_string(r)) << "\nstderr:\n"
                 << Slurp(dir.path + "/err." + std::to_string(r)));
    REQUIRE(code.has_value());
    CHECK(*code == 0);
  }
  Parsed p = Parse(Slurp(dir.path + "/out.0"));
  INFO(Slurp(dir.path + "/out.0"));
  CHECK(p.summary.rows == 5);  // 1, 4, 16, 64, 256 KiB
  CHECK(p.summary.malformed == 0);
  CHECK(p.summary.errors.empty());
  REQUIRE(p.summary.devices.size() == 2);
  CHECK(p.summary.devices[0].rfind("Rank  0 Group  0 Pid", 0) == 0);
  CHECK(p.summary.devices[1].rfind("Rank  1 Group  0 Pid", 0) == 0);
  CHECK(p.summary.devices[0] != p.summary.devices[1]);  // two processes: two pids
  REQUIRE(p.units.size() == 10);
  const uint64_t sizes[] = {1024, 4096, 16384, 65536, 262144};
  for (size_t i = 0; i < p.units.size(); ++i) {
    CHECK(p.units[i].bytes == sizes[i / 2]);
    CHECK(p.units[i].verified_ok == std::optional<bool>(true));
    CHECK(p.units[i].duration_ns > 0);
  }
  REQUIRE(p.summary.out_of_bounds.has_value());
  CHECK(*p.summary.out_of_bounds == 0);
  REQUIRE(p.summary.avg_busbw_gbs.has_value());
  CHECK(*p.summary.avg_busbw_gbs > 0);
  // Rank 1 prints nothing of the table.
  CHECK(Parse(Slurp(dir.path + "/out.1")).summary.rows == 0);
}

TEST_CASE("ftccl-perf: -N 2 prints two cycles of rows", "[integration]") {
  TempDir dir;
  const std::string out = dir.path + "/out";
  auto code = RunPerfBinary(
      {"--ranks", "2", "-b", "1K", "-e", "4K", "-f", "2", "-n", "2", "-w", "0", "-N", "2"}, out);
  INFO(Slurp(out));
  REQUIRE(code.has_value());
  CHECK(*code == 0);
  Parsed p = Parse(Slurp(out));
  CHECK(p.summary.rows == 6);
  CHECK(p.summary.malformed == 0);
  REQUIRE(p.units.size() == 12);
  const uint64_t sizes[] = {1024, 2048, 4096, 1024, 2048, 4096};
  for (size_t i = 0; i < p.units.size(); ++i) CHECK(p.units[i].bytes == sizes[i / 2]);
  CHECK(p.summary.avg_busbw_gbs.has_value());
}

TEST_CASE("ftccl-perf: -N 0 runs until SIGTERM, then prints the summary", "[integration]") {
  TempDir dir;
  const std::string out = dir.path + "/out";
  testing::ChildProcess::Options po;
  po.out = out;
  testing::ChildProcess p({FL_FTCCL_PERF_PATH, "--ranks", "2", "-b", "1K", "-e", "8K", "-n", "2",
                           "-w", "0", "-N", "0", "--json", dir.path + "/out.json"},
                          po);
  REQUIRE(p.pid() > 0);
  // More rows than one cycle has (4 sizes): it goes on.
  REQUIRE(WaitUntil([&] { return Parse(Slurp(out)).summary.rows >= 6; },
                    Deadline::After(60 * kNsPerSec), 10 * kNsPerMs));
  CHECK_FALSE(Parse(Slurp(out)).summary.avg_busbw_gbs.has_value());
  REQUIRE(kill(p.pid(), SIGTERM) == 0);
  auto code = p.Wait(Deadline::After(60 * kNsPerSec));
  INFO(Slurp(out));
  REQUIRE(code.has_value());
  CHECK(*code == 0);
  Parsed r = Parse(Slurp(out));
  CHECK(r.summary.rows >= 6);
  CHECK(r.summary.malformed == 0);
  REQUIRE(r.summary.out_of_bounds.has_value());
  CHECK(*r.summary.out_of_bounds == 0);
  CHECK(r.summary.avg_busbw_gbs.has_value());
  CHECK(Slurp(dir.path + "/out.json").find("\"stopped\":true") != std::string::npos);
}

TEST_CASE("ftccl-perf: a lost peer is exit 3 with nccl-tests' failure line, read as a fault",
          "[integration]") {
  TempDir dir;
  std::vector<std::unique_ptr<testing::ChildProcess>> ranks;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "FTCCL_HOST_ID=none",
                                     FL_FTCCL_PERF_PATH,
                                     "--rank",
                                     std::to_string(r),
                                     "--world-size",
                                     "2",
                                     "--rendezvous",
                                     dir.path,
                                     "--job-id",
                                     "lost",
                                     "--nic-addrs",
                                     "127.0.0." + std::to_string(r + 1),
                                     "-b",
                                     "64K",
                                     "-e",
                                     "64K",
                                     "-n",
                                     "5",
                                     "-w",
                                     "0",
                                     "-N",
                                     "0",
                                     "-T",
                                     "10",
                                     "--no-failover"};
    testing::ChildProcess::Options po;
    po.out = dir.path + "/out." + std::to_string(r);
    po.err = dir.path + "/err." + std::to_string(r);
    po.stop_signal = SIGKILL;
    ranks.push_back(std::make_unique<testing::ChildProcess>(argv, po));
    REQUIRE(ranks.back()->pid() > 0);
  }
  const std::string out0 = dir.path + "/out.0";
  REQUIRE(WaitUntil([&] { return Parse(Slurp(out0)).summary.rows >= 3; },
                    Deadline::After(60 * kNsPerSec), 10 * kNsPerMs));
  REQUIRE(kill(ranks[1]->pid(), SIGKILL) == 0);
  auto code = ranks[0]->Wait(Deadline::After(60 * kNsPerSec));
  std::string text = Slurp(out0);
  INFO(text << "\nstderr:\n" << Slurp(dir.path + "/err.0"));
  REQUIRE(code.has_value());
  CHECK(*code == 3);
  Parsed p = Parse(text);
  CHECK(p.summary.rows >= 3);
  REQUIRE(p.summary.errors.size() == 1);
  CHECK_FALSE(p.summary.avg_busbw_gbs.has_value());  // no summary after a failure
  auto e = workloads::progress::ParseCclLogLine(p.summary.errors[0]);
  REQUIRE(e.has_value());
  CHECK(e->library == "ftccl");
  CHECK(e->kind == "fault_detected");
}

TEST_CASE("ftccl-perf: nccl-tests' exit codes for what it cannot run", "[integration]") {
  TempDir dir;
  const std::string out = dir.path + "/out";
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const Case cases[] = {
      {{"-d", "double"}, "data type 'double'"},
      {{"-d", "int8"}, "data type 'int8'"},
      {{"-o", "prod"}, "reduction 'prod'"},
      {{"-o", "avg"}, "reduction 'avg'"},
      {{"sendrecv_perf"}, "no sendrecv_perf"},
      {{"--collective", "reduce_perf"}, "no reduce_perf"},
      {{"-g", "2"}, "-t/-g"},
      {{"--no-such-flag"}, "no-such-flag"},
      {{"-b", "1M", "-e", "1K"}, "-b must not exceed -e"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--ranks", "2", "-n", "1", "-w", "0"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto code = RunPerfBinary(args, out, 60 * kNsPerSec);
    std::string text = Slurp(out);
    INFO(c.args[0] << ": " << text);
    REQUIRE(code.has_value());
    CHECK(*code == 255);
    CHECK(text.find(c.says) != std::string::npos);
  }
}

std::vector<DataType> Types(std::string_view name) {
  auto t = ParsePerfTypes(name);
  return t.ok() ? std::vector<DataType>(t->begin(), t->end()) : std::vector<DataType>{};
}
size_t OpCount(std::string_view name) {
  auto o = ParsePerfOps(name);
  return o.ok() ? o->size() : 0;
}
std::optional<Collective> Coll(std::string_view name) {
  auto c = ParsePerfCollective(name);
  if (!c.ok()) return std::nullopt;
  return *c;
}

TEST_CASE("ftccl-perf: nccl-tests' names", "[unit]") {
  CHECK(Coll("all_reduce_perf") == Collective::kAllReduce);
  CHECK(Coll("all_gather_perf") == Collective::kAllGather);
  CHECK(Coll("reduce_scatter_perf") == Collective::kReduceScatter);
  CHECK(Coll("broadcast_perf") == Collective::kBroadcast);
  CHECK(Coll("alltoall_perf") == Collective::kAllToAll);
  CHECK(Coll("allreduce") == Collective::kAllReduce);
  CHECK(Coll("barrier") == Collective::kBarrier);
  CHECK_FALSE(ParsePerfCollective("gather_perf").ok());
  CHECK_FALSE(ParsePerfCollective("nonsense").ok());
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kBroadcast, Collective::kAllToAll, Collective::kBarrier})
    CHECK(Coll(PerfProgramName(c)) == c);
  CHECK(Types("float") == std::vector<DataType>{DataType::kFloat32});
  CHECK(Types("half") == std::vector<DataType>{DataType::kFloat16});
  CHECK(Types("bfloat16") == std::vector<DataType>{DataType::kBFloat16});
  CHECK(Types("float32") == std::vector<DataType>{DataType::kFloat32});
  CHECK(Types("all").size() == 5);
  for (const char* t : {"double", "int8", "uint8", "uint32", "uint64", "f8e4m3"})
    CHECK(Types(t).empty());
  CHECK(OpCount("all") == 3);
  for (const char* op : {"prod", "avg", "mulsum"}) CHECK_FALSE(ParsePerfOps(op).ok());
  for (DataType t : Types("all")) CHECK(Types(NcclTestsTypeName(t)) == std::vector<DataType>{t});
}

}  // namespace
}  // namespace fl::ccl
