// Bootstrap: stores wait with deadlines, and two jobs sharing one FileStore on one machine
// (ports chosen by the kernel, keys prefixed by job id) run side by side without clashes.
#include <catch2/catch.hpp>

#include <filesystem>

#include "ccl_under_test/ftccl/ftccl.h"
#include "test_ranks.h"

namespace fl::ccl {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/flccl-rdv-XXXXXX";
  return mkdtemp(tmpl);
}

TEST_CASE("rendezvous: FileStore set/get and a bounded wait for a missing key", "[unit]") {
  std::string dir = TempDir();
  {
    FileStore store(dir);
    REQUIRE(store.Set("job/a", "1,2").ok());
    auto v = store.Get("job/a", Deadline::After(kNsPerSec));
    REQUIRE(v.ok());
    CHECK(*v == "1,2");
    Nanos t0 = MonoNowNs();
    auto missing = store.Get("job/b", Deadline::After(100 * kNsPerMs));
    CHECK(missing.status().code() == Code::kDeadlineExceeded);
    CHECK(MonoNowNs() - t0 < 2 * kNsPerSec);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("rendezvous: MemoryStore wakes a waiter when the key is set", "[unit]") {
  MemoryStore store;
  std::thread t([&] { store.Set("k", "v").IgnoreError(); });
  auto v = store.Get("k", Deadline::After(5 * kNsPerSec));
  t.join();
  REQUIRE(v.ok());
  CHECK(*v == "v");
}

TEST_CASE("rendezvous: two jobs share one FileStore and one machine side by side",
          "[integration]") {
  std::string dir = TempDir();
  {
    FileStore store(dir);
    const int n = 3;
    ftccl::FtcclOptions o;
    o.engine.watch_links = false;
    o.engine.dead_timeout = 5 * kNsPerSec;
    std::vector<Status> st(2 * n);
    std::vector<size_t> wrong(2 * n, 0);
    testing::RunRanks(2 * n, [&](int i) {
      const int job = i / n, r = i % n;
      // Both jobs use the same NIC addresses: only the kernel-chosen ports differ.
      auto c = ftccl::CreateFtcclCommunicator(
          testing::RankConfig(r, n, 1, &store, "job" + std::to_string(job)), o);
      if (!c.ok()) {
        st[i] = c.status();
        return;
      }
      std::vector<int32_t> v(10000, job * 100 + r + 1);
      st[i] = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kInt32, ReduceOp::kSum);
      const int32_t want = job * 100 * n + n * (n + 1) / 2;
      for (int32_t x : v) wrong[i] += x != want;
    });
    for (int i = 0; i < 2 * n; ++i) {
      INFO(st[i].ToString());
      CHECK(st[i].ok());
      CHECK(wrong[i] == 0);
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fl::ccl
