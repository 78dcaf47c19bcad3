// The loop's on_rank_loss: shrink, without a real CCL: ranks are threads over FakeGroup, an
// in-process group whose AllReduce really sums the ranks' buffers, whose collectives fail with
// Unavailable once a member is gone (as a lost peer's would), and which can Shrink. The
// survivors agree over a MemoryStore, go on with the smaller world (the results are checked
// against the new world size), and report the loss and the recovery as CCL events.
#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <thread>

#include "ccl_under_test/api/rendezvous.h"
#include "tests/workloads/fake_comm.h"
#include "workloads/data.h"
#include "workloads/worker.h"

namespace fl::workloads {
namespace {

class FakeGroup : public std::enable_shared_from_this<FakeGroup> {
 public:
  explicit FakeGroup(int n) : n_(n) {}
  int n() const { return n_; }

  // Collective number `seq` of every rank: sums count elements of type t over the ranks.
  Status AllReduce(uint64_t seq, const void* send, void* recv, size_t count, ccl::DataType t,
                   Nanos timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    Round& round = rounds_[seq];
    if (round.sum.empty()) round.sum.assign(count, 0);
    for (size_t i = 0; i < count; ++i) round.sum[i] += Load(send, i, t);
    if (++round.arrived == n_) cv_.notify_all();
    const bool done = cv_.wait_for(lock, std::chrono::nanoseconds(timeout),
                                   [&] { return round.arrived == n_ || !dead_.empty(); });
    if (round.arrived != n_) {
      if (!done) return DeadlineExceededError("fake: collective timed out");
      return UnavailableError("fake: rank " + std::to_string(*dead_.begin()) + " is gone");
    }
    for (size_t i = 0; i < count; ++i) Store(recv, i, t, static_cast<uint32_t>(round.sum[i]));
    if (++round.left == n_) rounds_.erase(seq);
    return OkStatus();
  }

  // The rank is gone: its peers' collectives fail from now on.
  void Kill(int rank) {
    std::lock_guard<std::mutex> lock(mu_);
    dead_.insert(rank);
    cv_.notify_all();
  }

  // The survivors' group for this exclude list (the first caller makes it).
  std::shared_ptr<FakeGroup> Child(std::span<const int> exclude) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int> key(exclude.begin(), exclude.end());
    std::sort(key.begin(), key.end());
    auto& child = children_[key];
    if (!child) child = std::make_shared<FakeGroup>(n_ - static_cast<int>(key.size()));
    return child;
  }

 private:
  struct Round {
    std::vector<double> sum;
    int arrived = 0;
    int left = 0;
  };
  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Round> rounds_;
  std::set<int> dead_;
  std::map<std::vector<int>, std::shared_ptr<FakeGroup>> children_;
};

class FakeComm : public testing::FakeCommBase {
 public:
  FakeComm(std::shared_ptr<FakeGroup> group, int rank, bool can_shrink = true)
      : group_(std::move(group)), rank_(rank), can_shrink_(can_shrink) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->n(); }
  Status AllReduce(const void* send, void* recv, size_t count, ccl::DataType t, ccl::ReduceOp,
                   const ccl::CollectiveOptions& o) override {
    if (!error_.ok()) return error_;
    if (fail_at_ == seq_) {
      ++seq_;
      return error_ = UnavailableError("fake: injected failure");
    }
    Status st = group_->AllReduce(seq_++, send, recv, count, t, o.timeout);
    if (!st.ok()) error_ = st;
    return st;
  }
  Status GetAsyncError() override { return error_; }

  Status ShrinkSupport() const override {
    if (!can_shrink_) return FailedPreconditionError("fake: this one cannot shrink");
    return OkStatus();
  }
  StatusOr<std::unique_ptr<ccl::Communicator>> Shrink(std::span<const int> exclude,
                                                      Nanos) override {
    FL_RETURN_IF_ERROR(ShrinkSupport());
    FL_RETURN_IF_ERROR(ccl::CheckExcludeList(exclude, rank_, size()));
    int below = 0;
    for (int r : exclude) below += r < rank_;
    ++shrinks_;
    return std::unique_ptr<ccl::Communicator>(
        std::make_unique<FakeComm>(group_->Child(exclude), rank_ - below));
  }

  uint64_t fail_at_ = UINT64_MAX;
  int shrinks_ = 0;

 private:
  std::shared_ptr<FakeGroup> group_;
  int rank_;
  bool can_shrink_;
  uint64_t seq_ = 0;
  Status error_;
};

class RecordingSink : public TelemetrySink {
 public:
  void OnSample(const IterationSample& s) override {
    std::lock_guard<std::mutex> lock(mu);
    samples.push_back(s);
  }
  void OnEvent(const ccl::Event& e) override {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(e);
  }
  void OnWorkerEvent(const std::string& kind, const std::string& detail) override {
    std::lock_guard<std::mutex> lock(mu);
    worker_events.push_back(kind);
    worker_details.push_back(detail);
  }
  std::mutex mu;
  std::vector<IterationSample> samples;
  std::vector<ccl::Event> events;
  std::vector<std::string> worker_events, worker_details;
};

std::unique_ptr<Workload> Make(const std::string& name) {
  WorkloadRegistry reg("workload");
  REQUIRE(RegisterBuiltinWorkloads(reg).ok());
  auto w = reg.Create(name, OptionValues{});
  REQUIRE(w.ok());
  return std::move(*w);
}

WorkloadConfig SmallConfig() {
  WorkloadConfig c;
  c.size_bytes = 1024;
  c.dtype = ccl::DataType::kInt32;
  c.collective_timeout = 20 * kNsPerSec;
  return c;
}

LoopOptions ShrinkLoop(ccl::Communicator* comm, ccl::Store* store,
                       std::unique_ptr<ccl::Communicator>* shrunk) {
  LoopOptions lo;
  lo.iterations = 20;
  lo.check_every = 1;
  lo.comm = comm;
  lo.agree_every = 4;
  lo.on_rank_loss = OnRankLoss::kShrink;
  lo.shrink.store = store;
  lo.shrink.key_prefix = "shrink/test";
  lo.shrink.grace = 300 * kNsPerMs;
  lo.shrink.timeout = 10 * kNsPerSec;
  lo.shrink.workload = SmallConfig();
  lo.shrink.shrunk = shrunk;
  return lo;
}

TEST_CASE("loop: on a rank loss with shrink, the survivors go on with the smaller world",
          "[unit]") {
  constexpr int kWorld = 3;
  constexpr int kLost = 1;  // dies after its iteration 5
  constexpr uint64_t kDiesAfter = 6;
  auto group = std::make_shared<FakeGroup>(kWorld);
  ccl::MemoryStore store;
  std::vector<RecordingSink> sinks(kWorld);
  std::vector<StatusOr<LoopResult>> results;
  for (int r = 0; r < kWorld; ++r) results.emplace_back(InternalError("not run"));
  std::vector<std::unique_ptr<FakeComm>> comms;
  std::vector<std::unique_ptr<Workload>> workloads;
  for (int r = 0; r < kWorld; ++r) {
    comms.push_back(std::make_unique<FakeComm>(group, r));
    workloads.push_back(Make("allreduce_loop"));
    REQUIRE(workloads[r]->Init(comms[r].get(), SmallConfig()).ok());
  }
  std::vector<std::unique_ptr<ccl::Communicator>> shrunk(kWorld);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      FakeComm& comm = *comms[r];
      Workload* w = workloads[r].get();
      LoopOptions lo = ShrinkLoop(&comm, &store, &shrunk[r]);
      std::atomic<bool> stop{false};
      if (r == kLost) {
        lo.iterations = kDiesAfter;  // its last iteration is 5, then it is gone
        results[r] = RunLoop(*w, r, lo, sinks[r], stop);
        group->Kill(r);
        return;
      }
      results[r] = RunLoop(*w, r, lo, sinks[r], stop);
    });
  }
  for (auto& t : threads) t.join();

  REQUIRE(results[kLost].ok());
  for (int r : {0, 2}) {
    INFO("rank " << r);
    REQUIRE(results[r].ok());
    CHECK(results[r]->shrinks == 1);
    CHECK(results[r]->world_size == 2);
    CHECK(results[r]->mismatches == 0);  // checked against the 2-rank sums after the shrink
    // Iterations 0..19, each once: the failed iteration 6 was redone on the new group.
    const auto& samples = sinks[r].samples;
    REQUIRE(samples.size() == 20);
    for (size_t i = 0; i < samples.size(); ++i) {
      CHECK(samples[i].iteration == i);
      CHECK(samples[i].verified);
      CHECK(samples[i].rank == r);  // the job rank, also after the shrink
    }
    // Detection and recovery, as CCL events the analysis reads (fault_detected,
    // failover_done), in that order, with times.
    const auto& ev = sinks[r].events;
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].type == ccl::EventType::kFaultDetected);
    CHECK(ev[0].cause == "rank_lost");
    CHECK(ev[1].type == ccl::EventType::kFailoverDone);
    CHECK(ev[1].cause == "shrunk");
    CHECK(ev[1].peer == kLost);
    CHECK(ev[1].detail.find("world 3 -> 2") != std::string::npos);
    CHECK(ev[0].wall_ns > 0);
    CHECK(ev[1].wall_ns >= ev[0].wall_ns);
    CHECK(ev[1].mono_ns - ev[0].mono_ns >= 300 * kNsPerMs);  // the grace time
    CHECK(ev[0].wall_ns >= samples[5].end_wall_ns);
    CHECK(ev[1].wall_ns <= samples[6].start_wall_ns);
    CHECK(sinks[r].worker_events ==
          std::vector<std::string>{"collective_failed", "rank_lost", "shrunk"});
    CHECK(sinks[r].worker_details[2].find("\"lost\":[1]") != std::string::npos);
    CHECK(sinks[r].worker_details[2].find("\"world\":2") != std::string::npos);
  }
}

TEST_CASE("loop: shrink with a CCL that cannot shrink is an error before the first iteration",
          "[unit]") {
  FakeComm comm(std::make_shared<FakeGroup>(1), 0, /*can_shrink=*/false);
  auto w = Make("allreduce_loop");
  REQUIRE(w->Init(&comm, SmallConfig()).ok());
  ccl::MemoryStore store;
  std::unique_ptr<ccl::Communicator> shrunk;
  RecordingSink sink;
  std::atomic<bool> stop{false};
  auto r = RunLoop(*w, 0, ShrinkLoop(&comm, &store, &shrunk), sink, stop);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kFailedPrecondition);
  CHECK(r.status().message().find("cannot shrink") != std::string::npos);
  CHECK(sink.samples.empty());
  LoopOptions no_store = ShrinkLoop(&comm, nullptr, &shrunk);
  CHECK(RunLoop(*w, 0, no_store, sink, stop).status().code() == Code::kInvalidArgument);
}

TEST_CASE("loop: with shrink, a failure when nobody is lost still ends the loop", "[unit]") {
  // One rank alone: its collective fails, every rank (itself) reports in, nothing to exclude.
  FakeComm comm(std::make_shared<FakeGroup>(1), 0);
  comm.fail_at_ = 3;
  auto w = Make("allreduce_loop");
  REQUIRE(w->Init(&comm, SmallConfig()).ok());
  ccl::MemoryStore store;
  std::unique_ptr<ccl::Communicator> shrunk;
  RecordingSink sink;
  std::atomic<bool> stop{false};
  auto r = RunLoop(*w, 0, ShrinkLoop(&comm, &store, &shrunk), sink, stop);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(r.status().message().find("nothing to shrink") != std::string::npos);
  CHECK(comm.shrinks_ == 0);
  CHECK_FALSE(shrunk);
}

TEST_CASE("loop: abort (the default) ends the loop at the rank loss, bad on_rank_loss text",
          "[unit]") {
  auto group = std::make_shared<FakeGroup>(2);
  group->Kill(1);
  FakeComm comm(group, 0);
  auto w = Make("allreduce_loop");
  REQUIRE(w->Init(&comm, SmallConfig()).ok());
  RecordingSink sink;
  std::atomic<bool> stop{false};
  LoopOptions lo;
  lo.iterations = 5;
  auto r = RunLoop(*w, 0, lo, sink, stop);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(sink.events.empty());
  CHECK(ParseOnRankLoss("abort").value() == OnRankLoss::kAbort);
  CHECK(ParseOnRankLoss("shrink").value() == OnRankLoss::kShrink);
  CHECK(ParseOnRankLoss("restart").status().code() == Code::kInvalidArgument);
}

}  // namespace
}  // namespace fl::workloads
