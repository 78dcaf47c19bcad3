// Survivor agreement for a shrink (ccl_under_test/api/shrink_agreement.h), ranks as threads
// over the real TCP store (a TcpStoreServer on loopback, one TcpStore client per rank): with a
// rank missing every survivor gets the same exclude list; a slow rank within the grace time
// is kept; a rank that comes after the decision is left out; the decision's text round-trips
// and bad text is refused.
#include <catch2/catch.hpp>

#include <map>
#include <mutex>

#include "ccl_under_test/api/shrink_agreement.h"
#include "ccl_under_test/api/tcp_store.h"
#include "test_ranks.h"

namespace fl::ccl {
namespace {

constexpr const char* kToken = "shrink-agreement-test-token";

struct StoreFixture {
  StoreFixture() {
    auto s = TcpStoreServer::Start("127.0.0.1:0", kToken);
    REQUIRE(s.ok());
    server = std::move(*s);
  }
  std::unique_ptr<TcpStore> Client() {
    return std::make_unique<TcpStore>(server->address(), kToken);
  }
  std::unique_ptr<TcpStoreServer> server;
};

ShrinkAgreementOptions Opts(int rank, int world, Nanos grace, uint64_t resume = 10) {
  ShrinkAgreementOptions o;
  o.prefix = "shrink/test";
  o.rank = rank;
  o.world_size = world;
  o.grace = grace;
  o.decision_timeout = 5 * kNsPerSec;
  o.resume_iteration = resume;
  return o;
}

// Runs AgreeOnSurvivors for `ranks` (each on its own thread and store client) and returns
// their answers by rank; before(rank) runs on the rank's thread first.
std::map<int, StatusOr<ShrinkDecision>> Agree(
    StoreFixture& fx, const std::vector<int>& ranks, int world, Nanos grace,
    const std::function<void(int, Store&)>& before = [](int, Store&) {}) {
  std::map<int, StatusOr<ShrinkDecision>> out;
  std::mutex mu;
  testing::RunRanks(static_cast<int>(ranks.size()), [&](int i) {
    const int r = ranks[static_cast<size_t>(i)];
    auto store = fx.Client();
    before(r, *store);
    auto d = AgreeOnSurvivors(*store, Opts(r, world, grace, 10 + static_cast<uint64_t>(r)));
    std::lock_guard<std::mutex> lock(mu);
    out.emplace(r, std::move(d));
  });
  return out;
}

TEST_CASE("shrink agreement: every survivor gets the same exclude list", "[unit]") {
  StoreFixture fx;
  auto got = Agree(fx, {0, 1, 3}, 4, 300 * kNsPerMs);
  REQUIRE(got.size() == 3);
  for (auto& [r, d] : got) {
    INFO("rank " << r);
    REQUIRE(d.ok());
    CHECK(d->leader == 0);
    CHECK(d->survivors == std::vector<int>{0, 1, 3});
    CHECK(d->excluded == std::vector<int>{2});
    CHECK(d->resume_iteration == 10);  // the smallest resume iteration (rank 0's)
    CHECK(d->new_size == 3);
  }
  CHECK(got.at(0)->new_rank == 0);
  CHECK(got.at(1)->new_rank == 1);
  CHECK(got.at(3)->new_rank == 2);
}

TEST_CASE("shrink agreement: with rank 0 lost, the lowest survivor leads", "[unit]") {
  StoreFixture fx;
  auto got = Agree(fx, {1, 2}, 3, 300 * kNsPerMs);
  for (auto& [r, d] : got) {
    INFO("rank " << r);
    REQUIRE(d.ok());
    CHECK(d->leader == 1);
    CHECK(d->excluded == std::vector<int>{0});
    CHECK(d->resume_iteration == 11);
    CHECK(d->new_rank == r - 1);
  }
}

TEST_CASE("shrink agreement: a slow rank within the grace time is kept", "[unit]") {
  StoreFixture fx;
  // Rank 1 reports in only once ranks 0 and 2 have: after them, within their 3 s grace.
  auto got = Agree(fx, {0, 1, 2}, 4, 3 * kNsPerSec, [](int r, Store& store) {
    if (r != 1) return;
    // No Catch2 assertions off the main thread: a wait that fails shows in the answers.
    for (int q : {0, 2})
      (void)store.Get("shrink/test/0/alive/" + std::to_string(q), Deadline::After(10 * kNsPerSec));
  });
  for (auto& [r, d] : got) {
    INFO("rank " << r);
    REQUIRE(d.ok());
    CHECK(d->survivors == std::vector<int>{0, 1, 2});
    CHECK(d->excluded == std::vector<int>{3});
    CHECK(d->new_rank == r);
  }
}

TEST_CASE("shrink agreement: a rank that comes after the decision is left out", "[unit]") {
  StoreFixture fx;
  // Ranks 1 and 2 decide without rank 0, which then comes (the lowest rank, so it would lead
  // had it come in time): it follows the decision and finds itself excluded.
  auto first = Agree(fx, {1, 2}, 3, 200 * kNsPerMs);
  for (auto& [r, d] : first) REQUIRE(d.ok());
  auto late = Agree(fx, {0}, 3, 200 * kNsPerMs);
  REQUIRE(late.at(0).ok());
  CHECK(late.at(0)->new_rank == -1);
  CHECK(late.at(0)->leader == 1);
  CHECK(late.at(0)->survivors == first.at(1)->survivors);
  CHECK(late.at(0)->excluded == std::vector<int>{0});
}

TEST_CASE("shrink agreement: generations do not mix", "[unit]") {
  StoreFixture fx;
  auto g0 = Agree(fx, {0, 1}, 3, 200 * kNsPerMs);
  for (auto& [r, d] : g0) REQUIRE(d.ok());
  // The 2-rank group of generation 1 loses its rank 1: rank 0 decides alone.
  auto store = fx.Client();
  ShrinkAgreementOptions o = Opts(0, 2, 200 * kNsPerMs);
  o.generation = 1;
  auto d = AgreeOnSurvivors(*store, o);
  REQUIRE(d.ok());
  CHECK(d->survivors == std::vector<int>{0});
  CHECK(d->excluded == std::vector<int>{1});
  CHECK(d->new_size == 1);
}

TEST_CASE("shrink agreement: decision text round-trips, bad text is DataLoss", "[unit]") {
  const std::string t = EncodeShrinkDecision(1, 42, {1, 2, 4});
  CHECK(t == "1;42;1,2,4");
  auto d = DecodeShrinkDecision(t, 4, 5);
  REQUIRE(d.ok());
  CHECK(d->excluded == std::vector<int>{0, 3});
  CHECK(d->new_rank == 2);
  CHECK(d->resume_iteration == 42);
  for (const char* bad : {"", "1;2", "x;1;1", "1;1;", "1;1;2,1", "1;1;1,9", "0;1;1,2", "1;-1;1"}) {
    INFO(bad);
    CHECK(DecodeShrinkDecision(bad, 0, 5).status().code() == Code::kDataLoss);
  }
  ShrinkAgreementOptions o = Opts(3, 3, 0);
  MemoryStore store;
  CHECK(AgreeOnSurvivors(store, o).status().code() == Code::kInvalidArgument);
}

}  // namespace
}  // namespace fl::ccl
