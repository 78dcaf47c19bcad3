#include "common/status.h"

#include <catch2/catch.hpp>
#include <cerrno>

namespace fl {
namespace {

Status Fails() { return UnavailableError("link down"); }
Status Propagates() {
  FL_RETURN_IF_ERROR(Fails());
  return OkStatus();
}
Status PropagatesTwice() {
  FL_RETURN_IF_ERROR(Propagates());
  return OkStatus();
}
StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}
StatusOr<int> Quarter(int x) {
  FL_ASSIGN_OR_RETURN(int h, Half(x));
  FL_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST_CASE("status: default is OK and codes are named", "[unit]") {
  Status s;
  CHECK(s.ok());
  CHECK(s.ToString() == "OK");
  CHECK(CodeName(Code::kDeadlineExceeded) == "DeadlineExceeded");
  CHECK(DataLossError("x").code() == Code::kDataLoss);
  CHECK_FALSE(CancelledError("x").ok());
}

TEST_CASE("status: FL_RETURN_IF_ERROR leaves a trail of propagation sites", "[unit]") {
  Status s = PropagatesTwice();
  REQUIRE(s.code() == Code::kUnavailable);
  CHECK(s.message() == "link down");
  REQUIRE(s.trail().size() == 2);
  CHECK(s.trail()[0].rfind("tests/common/status_test.cc:", 0) == 0);
  CHECK(s.ToString().find("Unavailable: link down [at tests/common/status_test.cc:") == 0);
  CHECK(s.ToString().find(" <- ") != std::string::npos);
}

TEST_CASE("status: StatusOr carries a value or an error through FL_ASSIGN_OR_RETURN", "[unit]") {
  auto ok = Quarter(8);
  REQUIRE(ok.ok());
  CHECK(*ok == 2);
  auto bad = Quarter(6);  // 6 -> 3 -> odd
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == Code::kInvalidArgument);
  CHECK(bad.status().message() == "odd: 3");
  CHECK(bad.status().trail().size() == 1);
  CHECK(bad.value_or(-1) == -1);
}

TEST_CASE("status: errno maps onto the taxonomy", "[unit]") {
  CHECK(ErrnoStatus(ENETDOWN, "send").code() == Code::kUnavailable);
  CHECK(ErrnoStatus(ECONNRESET, "recv").code() == Code::kUnavailable);
  CHECK(ErrnoStatus(ETIMEDOUT, "connect").code() == Code::kDeadlineExceeded);
  CHECK(ErrnoStatus(EPERM, "netlink").code() == Code::kFailedPrecondition);
  CHECK(ErrnoStatus(ENODEV, "ifindex").code() == Code::kNotFound);
  Status s = ErrnoStatus(EINVAL, "setsockopt");
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message().find("setsockopt: ") == 0);
  CHECK(s.message().find("(errno 22)") != std::string::npos);
}

TEST_CASE("status: Prepend adds context only to errors", "[unit]") {
  Status e = NotFoundError("no such lab");
  e.Prepend("lab down");
  CHECK(e.message() == "lab down: no such lab");
  Status ok;
  ok.Prepend("ignored");
  CHECK(ok.message().empty());
}

}  // namespace
}  // namespace fl
