#include "common/log.h"

#include <catch2/catch.hpp>
#include <vector>

namespace fl::log {
namespace {

struct Capture {
  std::vector<Record> records;
  Capture() {
    SetCaptureSink([this](const Record& r) { records.push_back(r); });
  }
  ~Capture() {
    SetCaptureSink(nullptr);
    Configure("info").IgnoreError();
    SetContext({});
  }
};

TEST_CASE("log: per-subsystem levels select what is emitted", "[unit]") {
  Capture cap;
  REQUIRE(Configure("warn,lab=debug").ok());
  FL_LOG(kInfo, "ftccl") << "hidden";
  FL_LOG(kWarn, "ftccl") << "shown " << 1;
  FL_LOG(kDebug, "lab") << "shown " << 2;
  FL_LOG(kTrace, "lab") << "hidden";
  REQUIRE(cap.records.size() == 2);
  CHECK(cap.records[0].subsystem == "ftccl");
  CHECK(cap.records[0].message == "shown 1");
  CHECK(cap.records[0].level == Level::kWarn);
  CHECK(cap.records[1].subsystem == "lab");
  CHECK(cap.records[1].file == "log_test.cc");
}

TEST_CASE("log: context is attached to every record", "[unit]") {
  Capture cap;
  REQUIRE(Configure("info").ok());
  SetContext({"r1", "h0", 3});
  FL_LOG(kInfo, "agent") << "hello";
  REQUIRE(cap.records.size() == 1);
  CHECK(cap.records[0].context.run == "r1");
  CHECK(cap.records[0].context.host == "h0");
  CHECK(cap.records[0].context.rank == 3);
}

TEST_CASE("log: a bad spec is rejected and leaves the configuration unchanged", "[unit]") {
  Capture cap;
  REQUIRE(Configure("error").ok());
  Status s = Configure("info,lab=loud");
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message().find("loud") != std::string::npos);
  FL_LOG(kWarn, "lab") << "still filtered";
  CHECK(cap.records.empty());
  CHECK(Enabled("lab", Level::kError));
}

}  // namespace
}  // namespace fl::log
