// Logic of the iteration loop and of the workloads' verification, against a fake
// communicator that plays every rank in one process (a unit test of logic, not of a CCL).
#include <catch2/catch.hpp>
#include <cstring>

#include "tests/workloads/fake_comm.h"
#include "workloads/data.h"
#include "workloads/worker.h"
#include "workloads/workload_plugins.h"

namespace fl::workloads {
namespace {

// Pretends to be rank `rank` of `world` ranks whose data follow workloads/data.h, and computes
// the collective's result locally; can be told to corrupt or to fail.
class FakeComm : public testing::FakeCommBase {
 public:
  FakeComm(int rank, int world) : rank_(rank), world_(world) {}
  int rank() const override { return rank_; }
  int size() const override { return world_; }
  Status AllReduce(const void*, void* recv, size_t count, ccl::DataType t, ccl::ReduceOp,
                   const ccl::CollectiveOptions&) override {
    if (fail_at_ == calls_++) return UnavailableError("no path to rank 1");
    uint32_t m = ValueModulus(world_);
    for (size_t i = 0; i < count; ++i) Store(recv, i, t, ExpectedSum(world_, i, calls_ - 1, m));
    if (corrupt_at_ == calls_ - 1) Store(recv, count / 2, t, 999);
    return OkStatus();
  }
  Status AllToAll(const void*, void* recv, size_t count, ccl::DataType t,
                  const ccl::CollectiveOptions&) override {
    uint32_t m = ValueModulus(1);
    for (int src = 0; src < world_; ++src)
      for (size_t k = 0; k < count; ++k)
        Store(recv, src * count + k, t,
              Value(src, static_cast<uint64_t>(rank_) * count + k, calls_, m));
    ++calls_;
    return OkStatus();
  }

  uint64_t fail_at_ = UINT64_MAX;
  uint64_t corrupt_at_ = UINT64_MAX;

 private:
  int rank_, world_;
  uint64_t calls_ = 0;
};

class VectorSink : public TelemetrySink {
 public:
  void OnSample(const IterationSample& s) override { samples.push_back(s); }
  void OnEvent(const ccl::Event&) override {}
  void OnWorkerEvent(const std::string& kind, const std::string&) override {
    worker_events.push_back(kind);
  }
  std::vector<IterationSample> samples;
  std::vector<std::string> worker_events;
};

std::unique_ptr<Workload> Make(const std::string& name, const OptionValues& options = {}) {
  WorkloadRegistry reg("workload");
  REQUIRE(RegisterBuiltinWorkloads(reg).ok());
  auto w = reg.Create(name, options);  // options not given: the schema's defaults
  REQUIRE(w.ok());
  return std::move(*w);
}

TEST_CASE("loop: a correct run verifies every k-th iteration and reports every sample", "[unit]") {
  FakeComm comm(2, 4);
  auto w = Make("allreduce_loop");
  WorkloadConfig c;
  c.size_bytes = 4000;
  c.dtype = ccl::DataType::kBFloat16;
  REQUIRE(w->Init(&comm, c).ok());
  VectorSink sink;
  std::atomic<bool> stop{false};
  auto r = RunLoop(*w, 2, {10, 0, 3}, sink, stop);
  REQUIRE(r.ok());
  CHECK(r->iterations == 10);
  CHECK(r->verified == 4);  // 0, 3, 6, 9
  CHECK(r->mismatches == 0);
  REQUIRE(sink.samples.size() == 10);
  CHECK(sink.samples[3].verified);
  CHECK_FALSE(sink.samples[4].verified);
  CHECK(sink.samples[9].bytes == 4000);
  CHECK(sink.samples[9].rank == 2);
  CHECK(sink.samples[9].end_wall_ns >= sink.samples[9].start_wall_ns);
}

TEST_CASE("loop: a wrong element is a mismatch, not a crash, a failed collective ends the loop",
          "[unit]") {
  FakeComm comm(0, 8);
  comm.corrupt_at_ = 2;
  comm.fail_at_ = 5;
  auto compute = FindWorkloadPlugin("training_step").value()->options.Parse({{"compute", "1ms"}});
  REQUIRE(compute.ok());
  auto w = Make("training_step", *compute);
  WorkloadConfig c;
  c.size_bytes = 1024;
  REQUIRE(w->Init(&comm, c).ok());
  VectorSink sink;
  std::atomic<bool> stop{false};
  auto r = RunLoop(*w, 0, {100, 0, 1}, sink, stop);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(r.status().message().find("iteration 5") == 0);
  REQUIRE(sink.samples.size() == 5);
  CHECK(sink.samples[2].mismatch);
  CHECK_FALSE(sink.samples[1].mismatch);
  CHECK(sink.worker_events == std::vector<std::string>{"collective_failed"});
}

TEST_CASE("loop: alltoall verification knows each block's sender, stop ends the loop", "[unit]") {
  FakeComm comm(1, 4);
  auto w = Make("moe_alltoall");
  WorkloadConfig c;
  c.size_bytes = 4096;
  c.dtype = ccl::DataType::kInt64;
  REQUIRE(w->Init(&comm, c).ok());
  VectorSink sink;
  std::atomic<bool> stop{false};
  auto r = RunLoop(*w, 1, {3, 0, 1}, sink, stop);
  REQUIRE(r.ok());
  CHECK(r->mismatches == 0);
  stop = true;
  auto none = RunLoop(*w, 1, {3, 0, 1}, sink, stop);
  REQUIRE(none.ok());
  CHECK(none->iterations == 0);
  CHECK_FALSE(RunLoop(*w, 1, {0, 0, 1}, sink, stop).ok());  // neither iterations nor duration
}

TEST_CASE("workload list: every descriptor has its factory, with the descriptor's schema",
          "[unit]") {
  WorkloadRegistry reg("workload");
  REQUIRE(RegisterBuiltinWorkloads(reg).ok());
  CHECK(reg.Names() == WorkloadNames());  // both in name order, from workload_list.h
  for (const WorkloadPlugin* p : WorkloadPlugins()) {
    INFO(p->name);
    const OptionSchema* schema = reg.Schema(p->name);
    REQUIRE(schema != nullptr);
    CHECK(schema->Names() == p->options.Names());
    CHECK(reg.Create(p->name, OptionValues{}).ok());  // the schema's defaults suffice
  }
}

}  // namespace
}  // namespace fl::workloads
