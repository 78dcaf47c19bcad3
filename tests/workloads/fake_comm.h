// The base of the loop tests' fake communicators: every collective they do not play is an
// error ("unused"), Barrier and the async error are OK, Abort does nothing. A fake overrides
// what its test runs (rank, size, name and at least one collective).
#pragma once

#include "ccl_under_test/api/communicator.h"

namespace fl::workloads::testing {

class FakeCommBase : public ccl::Communicator {
 public:
  std::string name() const override { return "fake"; }
  Status AllReduce(const void*, void*, size_t, ccl::DataType, ccl::ReduceOp,
                   const ccl::CollectiveOptions&) override {
    return InternalError("unused");
  }
  Status AllGather(const void*, void*, size_t, ccl::DataType,
                   const ccl::CollectiveOptions&) override {
    return InternalError("unused");
  }
  Status ReduceScatter(const void*, void*, size_t, ccl::DataType, ccl::ReduceOp,
                       const ccl::CollectiveOptions&) override {
    return InternalError("unused");
  }
  Status Broadcast(void*, size_t, ccl::DataType, int, const ccl::CollectiveOptions&) override {
    return InternalError("unused");
  }
  Status AllToAll(const void*, void*, size_t, ccl::DataType,
                  const ccl::CollectiveOptions&) override {
    return InternalError("unused");
  }
  Status Barrier(const ccl::CollectiveOptions&) override { return OkStatus(); }
  Status GetAsyncError() override { return OkStatus(); }
  void Abort() override {}
};

}  // namespace fl::workloads::testing
