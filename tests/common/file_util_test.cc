#include "common/file_util.h"

#include <unistd.h>
#include <catch2/catch.hpp>
#include <cstdlib>

namespace fl {
namespace {

TEST_CASE("file_util: atomic write replaces content and leaves no temp file", "[unit]") {
  char tmpl[] = "/tmp/fl_file_test_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  std::string path = dir + "/a/b/journal.json";
  REQUIRE(MakeDirs(dir + "/a/b").ok());
  REQUIRE(WriteFileAtomic(path, "one").ok());
  REQUIRE(WriteFileAtomic(path, "two").ok());
  CHECK(*ReadFile(path) == "two");
  CHECK(access((path + ".tmp").c_str(), F_OK) != 0);
  CHECK(ReadFile(dir + "/missing").status().code() == Code::kNotFound);
  CHECK(MakeDirs(path).code() == Code::kFailedPrecondition);  // a file is in the way
  unlink(path.c_str());
  rmdir((dir + "/a/b").c_str());
  rmdir((dir + "/a").c_str());
  rmdir(dir.c_str());
}

TEST_CASE("file_util: line and column of a byte offset", "[unit]") {
  CHECK(LineColOf("abc\ndef", 0) == std::make_pair(1, 1));
  CHECK(LineColOf("abc\ndef", 5) == std::make_pair(2, 2));
  CHECK(LineColOf("", 10) == std::make_pair(1, 1));
}

}  // namespace
}  // namespace fl
