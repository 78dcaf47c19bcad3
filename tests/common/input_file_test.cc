#include "common/input_file.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>

#include "common/file_util.h"
#include "tests/test_util.h"

namespace fl {
namespace {

using testing::TempDir;

TEST_CASE("input file: a regular file is read whole", "[unit]") {
  TempDir d("fl_input_test");
  REQUIRE(WriteFileAtomic(d.path() + "/ok.yaml", "name: x\n").ok());
  auto text = ReadInputFile(d.path() + "/ok.yaml", InputKind::kScenario);
  REQUIRE(text.ok());
  CHECK(*text == "name: x\n");
  CHECK(ReadInputFile(d.path() + "/missing", InputKind::kScenario).status().code() ==
        Code::kNotFound);
}

TEST_CASE("input file: devices, FIFOs, sockets and directories are refused, naming them",
          "[unit]") {
  TempDir d("fl_input_test");
  auto refused = [](const std::string& path, std::string_view what) {
    auto r = ReadInputFile(path, InputKind::kTopology);
    INFO(path << ": " << (r.ok() ? std::string("read") : r.status().ToString()));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    CHECK(r.status().message().find(path) != std::string::npos);
    CHECK(r.status().message().find(what) != std::string::npos);
    CHECK(r.status().message().find("topology") != std::string::npos);
  };
  refused("/dev/zero", "character device");
  refused("/dev/urandom", "character device");
  refused(d.path(), "directory");
  // A FIFO with no writer: refused at once, not waited on.
  REQUIRE(mkfifo((d.path() + "/fifo").c_str(), 0600) == 0);
  refused(d.path() + "/fifo", "FIFO");
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(s >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = d.path() + "/sock";
  std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  // A socket file cannot be opened; the error still names it.
  auto r = ReadInputFile(sock, InputKind::kTopology);
  CHECK_FALSE(r.ok());
  CHECK(r.status().message().find(sock) != std::string::npos);
  close(s);
}

TEST_CASE("input file: a file over its kind's cap is refused with the sizes", "[unit]") {
  TempDir d("fl_input_test");
  const std::string big = d.path() + "/big.yaml";
  REQUIRE(WriteFileAtomic(big, std::string(InputCap(InputKind::kPolicy) + 1, '#')).ok());
  auto r = ReadInputFile(big, InputKind::kPolicy);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK(r.status().message().find("more than a policy may be (1 MiB)") != std::string::npos);
  // The same file is within a scenario's cap.
  CHECK(ReadInputFile(big, InputKind::kScenario).ok());
}

TEST_CASE("input file: every kind has a name and a cap", "[unit]") {
  for (InputKind k :
       {InputKind::kScenario, InputKind::kTopology, InputKind::kLabFile, InputKind::kInventory,
        InputKind::kSuite, InputKind::kPolicy, InputKind::kSwitchPreset, InputKind::kJournal,
        InputKind::kLabState, InputKind::kCertificate, InputKind::kToken, InputKind::kJobOutput}) {
    CHECK(InputCap(k) >= 64 * 1024);
    CHECK(InputKindName(k) != "file");
  }
}

}  // namespace
}  // namespace fl
