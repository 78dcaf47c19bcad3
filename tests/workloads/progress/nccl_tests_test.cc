// NcclTestsParser on fixtures in the format of NVIDIA's nccl-tests (tests/fixtures/nccl_tests/:
// all_reduce_perf on 8 H100s, -N 3, -c 0, a wrong result, a failed run, a truncated one) and on
// hand-made bad lines.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/file_util.h"
#include "tests/workloads/progress/nccl_tests_text.h"
#include "workloads/progress/progress.h"

namespace fl::workloads::progress {
namespace {

using testing::Parsed;

Parsed FeedText(const std::string& text) { return testing::ParseNcclTestsText(text); }

Parsed FeedFixture(const std::string& name) {
  auto text = ReadFile(std::string(FL_FIXTURES_DIR) + "/" + name);
  REQUIRE(text.ok());
  return FeedText(*text);
}

TEST_CASE("nccl-tests: all_reduce_perf on 8 GPUs", "[unit]") {
  Parsed r = FeedFixture("all_reduce_perf_h100.txt");
  const auto& s = r.summary;
  CHECK(s.command.rfind("nThread 1 nGpus 1 minBytes 8 maxBytes 134217728", 0) == 0);
  REQUIRE(s.devices.size() == 8);
  CHECK(s.devices[0] ==
        "Rank  0 Group  0 Pid  41230 on gpu-node-17 device  0 [0x19] NVIDIA H100 80GB HBM3");
  CHECK(s.rows == 25);  // 8 B .. 128 MiB, factor 2
  CHECK(s.malformed == 0);
  CHECK(s.errors.empty());
  REQUIRE(s.out_of_bounds.has_value());
  CHECK(*s.out_of_bounds == 0);
  REQUIRE(s.avg_busbw_gbs.has_value());
  CHECK(*s.avg_busbw_gbs == Approx(141.933).epsilon(0.01));
  REQUIRE(r.units.size() == 50);  // out-of-place and in-place per row
  CHECK(r.units[0].bytes == 8);
  CHECK(r.units[1].bytes == 8);
  CHECK(r.units[48].bytes == 134217728);
  for (size_t i = 0; i < r.units.size(); ++i) {
    CHECK(r.units[i].iteration == i);
    CHECK(r.units[i].verified_ok == std::optional<bool>(true));
    CHECK(r.units[i].duration_ns > 0);
    CHECK(r.units[i].wall_ns == 0);
  }
  // The last row's out-of-place half: 128 MiB moved at a few hundred GB/s.
  CHECK(r.units[48].busbw_gbs > 100);
  CHECK(r.units[48].busbw_gbs == Approx(r.units[48].algbw_gbs * 2 * 7 / 8).epsilon(0.01));
}

TEST_CASE("nccl-tests: -N 3 repeats the sweep", "[unit]") {
  Parsed r = FeedFixture("all_reduce_perf_N3.txt");
  CHECK(r.summary.rows == 15);
  CHECK(r.summary.malformed == 0);
  REQUIRE(r.units.size() == 30);
  CHECK(r.units[0].bytes == 1048576);
  CHECK(r.units[10].bytes == 1048576);  // the second cycle starts over
  CHECK(r.units[29].bytes == 16777216);
  CHECK(r.units[29].iteration == 29);
  CHECK(r.summary.avg_busbw_gbs.has_value());
}

TEST_CASE("nccl-tests: -c 0 leaves #wrong N/A: not checked", "[unit]") {
  Parsed r = FeedFixture("all_reduce_perf_nocheck.txt");
  CHECK(r.summary.rows == 6);
  CHECK(r.summary.malformed == 0);
  REQUIRE(r.units.size() == 12);
  for (const auto& u : r.units) CHECK_FALSE(u.verified_ok.has_value());
}

TEST_CASE("nccl-tests: a wrong result is a unit checked and wrong", "[unit]") {
  Parsed r = FeedFixture("all_reduce_perf_wrong.txt");
  REQUIRE(r.units.size() == 8);
  int wrong = 0;
  for (const auto& u : r.units) wrong += u.verified_ok == std::optional<bool>(false);
  CHECK(wrong == 1);
  CHECK(r.units[5].verified_ok == std::optional<bool>(false));  // 16 KiB, in-place
  REQUIRE(r.summary.out_of_bounds.has_value());
  CHECK(*r.summary.out_of_bounds == 1);
}

TEST_CASE("nccl-tests: a run that fails keeps its rows and names the failure", "[unit]") {
  Parsed r = FeedFixture("all_reduce_perf_nccl_failure.txt");
  CHECK(r.summary.rows == 2);
  CHECK(r.summary.malformed == 0);  // NCCL INFO/WARN lines are not rows
  CHECK_FALSE(r.summary.avg_busbw_gbs.has_value());
  CHECK_FALSE(r.summary.out_of_bounds.has_value());
  REQUIRE(r.summary.errors.size() == 3);
  CHECK(r.summary.errors[0].find("Test NCCL failure") != std::string::npos);
  CHECK(r.summary.errors[1].find("Test failure") != std::string::npos);
}

TEST_CASE("nccl-tests: output cut in the middle of a row", "[unit]") {
  Parsed r = FeedFixture("all_reduce_perf_truncated.txt");
  CHECK(r.summary.rows == 5);
  CHECK(r.summary.malformed == 1);
  CHECK(r.units.size() == 10);
  CHECK_FALSE(r.summary.avg_busbw_gbs.has_value());
}

TEST_CASE("nccl-tests: empty output", "[unit]") {
  Parsed r = FeedFixture("empty.txt");
  CHECK(r.units.empty());
  CHECK(r.summary.rows == 0);
  CHECK(r.summary.malformed == 0);
  CHECK(r.summary.command.empty());
  CHECK(r.summary.devices.empty());
}

TEST_CASE("nccl-tests: bad rows are counted, not fatal", "[unit]") {
  NcclTestsParser p;
  const char* bad[] = {
      "1048576 262144 float sum -1 13.06 80.32",                                // cut
      "1048576 262144 float sum -1 x 80.32 140.55 0 12.93 81.10 141.92 0",      // not a number
      "99999999999999999999999 2 float sum -1 1 1 1 0 1 1 1 0",                 // size > 2^64
      "8 2 float sum -1 1e999 0.00 0.00 0 10.00 0.00 0.00 0",                   // inf time
      "8 2 float sum -1 1e300 0.00 0.00 0 10.00 0.00 0.00 0",                   // absurd time
      "8 2 float sum -1 10.0 -1.0 0.00 0 10.00 0.00 0.00 0",                    // negative bw
      "8 2 float sum -1 10.0 nan 0.00 0 10.00 0.00 0.00 0",                     // nan
      "8 2 float sum -1 10.0 0.00 0.00 -3 10.00 0.00 0.00 0",                   // negative #wrong
      "8 2 float sum -1 10.0 0.00 0.00 0 10.00 0.00 0.00 0 10.00 0.00 0.00 0",  // three halves
      "8 2 3 sum -1 10.0 0.00 0.00 0 10.00 0.00 0.00 0",                        // type a number
      "8\t2\tfloat\tsum\t-1\t10.0\t0.00\t0.00\tzz\t10.00\t0.00\t0.00\t0",       // bad #wrong
  };
  for (const char* line : bad) {
    INFO(line);
    CHECK(p.Feed(line).empty());
  }
  CHECK(p.summary().malformed == std::size(bad));
  CHECK(p.summary().rows == 0);
  // Garbage that is not a row is ignored, and what follows still parses.
  CHECK(p.Feed("\x01\xff garbage \x7f").empty());
  CHECK(p.Feed("# Avg bus bandwidth : lots").empty());
  CHECK(p.summary().malformed == std::size(bad) + 1);
  auto ok = p.Feed("     8   2  float  sum  -1  10.00  0.00  0.00  0  10.00  0.00  0.00  0\r");
  REQUIRE(ok.size() == 2);
  CHECK(ok[0].iteration == 0);
  CHECK(ok[0].duration_ns == 10000);
}

TEST_CASE("nccl-tests: row variants", "[unit]") {
  NcclTestsParser p;
  // Old nccl-tests: no root column, a max-error column in %g.
  auto old = p.Feed("  1024  256  float  sum  12.1  0.08  0.15  0e+00  11.9  0.09  0.15  0e+00");
  REQUIRE(old.size() == 2);
  CHECK(old[0].verified_ok == std::optional<bool>(true));
  // One half only (a row whose in-place half never came).
  auto half = p.Feed("  1024  256  float  sum  -1  12.1  0.08  0.15  0");
  REQUIRE(half.size() == 1);
  CHECK(half[0].iteration == 2);
  // %g of a large #wrong.
  auto many = p.Feed("  1024  256  float  sum  -1  12.1  0.08  0.15  1.5e+06  1  1  1  0");
  REQUIRE(many.size() == 2);
  CHECK(many[0].verified_ok == std::optional<bool>(false));
  CHECK(many[1].verified_ok == std::optional<bool>(true));
  // mpirun --tag-output.
  auto tagged = p.Feed(
      "[1,0]<stdout>:      8   2  float  sum  -1  10.0  0.00  0.00  N/A  10.0  0.00  0.00  N/A");
  REQUIRE(tagged.size() == 2);
  CHECK_FALSE(tagged[0].verified_ok.has_value());
  CHECK(p.summary().rows == 4);
  CHECK(p.summary().malformed == 0);
}

TEST_CASE("nccl-tests: summary lines", "[unit]") {
  NcclTestsParser p;
  (void)p.Feed("# nccl-tests version 2.13.10 nccl-headers=22105 nccl-library=22105");
  CHECK(p.summary().command == "nccl-tests version 2.13.10 nccl-headers=22105 nccl-library=22105");
  (void)p.Feed("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5");
  CHECK(p.summary().command.rfind("nThread 1", 0) == 0);
  (void)p.Feed("# Out of bounds values : 7 FAILED");
  (void)p.Feed("# Avg bus bandwidth    : 1.5e+02 OK");
  REQUIRE(p.summary().out_of_bounds.has_value());
  CHECK(*p.summary().out_of_bounds == 7);
  REQUIRE(p.summary().avg_busbw_gbs.has_value());
  CHECK(*p.summary().avg_busbw_gbs == Approx(150.0));
  // Thousands of device lines: kept up to a bound.
  for (int i = 0; i < 5000; ++i) {
    (void)p.Feed("#  Rank " + std::to_string(i) + " Group  0 Pid 1 on h device  0 [0x01] cpu");
  }
  CHECK(p.summary().devices.size() <= 256);
  CHECK(p.summary().devices.size() >= 8);
  // A very long line.
  std::string huge(1 << 20, '9');
  CHECK(p.Feed(huge).empty());
  CHECK(p.summary().malformed == 1);
}

}  // namespace
}  // namespace fl::workloads::progress
