#include "common/file_util.h"

#include <sys/stat.h>
#include <unistd.h>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <thread>

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

// Two labs share <cgroup2>/faultline and the last one down removes it: a lab making its own
// directory below it while another removes it must still get its directory.
TEST_CASE("file_util: MakeDirs while another thread keeps removing the parent and making it again",
          "[unit]") {
  char tmpl[] = "/tmp/fl_file_test_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string parent = std::string(tmpl) + "/shared";
  std::atomic<bool> stop{false};
  std::atomic<int> removed{0};
  std::thread remover([&] {
    // As a lab going down does: one removal, then the other lab is alone for a while. Every
    // other time a third lab coming up makes the parent again at once, so that it is back
    // before MakeDirs looks at why its mkdir failed.
    while (!stop.load())
      if (rmdir(parent.c_str()) == 0) {
        if (removed.fetch_add(1) % 2 == 1) mkdir(parent.c_str(), 0755);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
  });
  int failures = 0;
  std::string first_error;
  for (int i = 0; i < 1000; ++i) {
    const std::string leaf = parent + "/lab" + std::to_string(i % 7) + "/leaf";
    Status st = MakeDirs(leaf);
    if (!st.ok()) {
      if (failures++ == 0) first_error = st.ToString();
      continue;
    }
    rmdir(leaf.c_str());
    rmdir(leaf.substr(0, leaf.rfind('/')).c_str());
  }
  stop = true;
  remover.join();
  INFO(first_error);
  CHECK(failures == 0);
  CHECK(removed.load() > 0);  // the race was there to be lost
  rmdir(parent.c_str());
  rmdir(tmpl);
}

TEST_CASE("file_util: MakeDirs below a dangling symlink fails at once, naming the path", "[unit]") {
  char tmpl[] = "/tmp/fl_file_test_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string link = std::string(tmpl) + "/gone";
  REQUIRE(symlink("/nonexistent-faultline-target", link.c_str()) == 0);
  const auto start = std::chrono::steady_clock::now();
  Status st = MakeDirs(link + "/x");
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK_FALSE(st.ok());
  CHECK(st.ToString().find(link + "/x") != std::string::npos);
  CHECK(took < std::chrono::seconds(1));  // the race deadline is 1 s: it was not waited out
  unlink(link.c_str());
  rmdir(tmpl);
}

TEST_CASE("file_util: ListMounts reads this process's mounts", "[unit]") {
  const auto mounts = ListMounts();
  bool root = false, proc = false;
  for (const auto& m : mounts) {
    root = root || m.mountpoint == "/";
    proc = proc || (m.mountpoint == "/proc" && m.fstype == "proc");
  }
  CHECK(root);
  CHECK(proc);
}

TEST_CASE("file_util: line and column of a byte offset", "[unit]") {
  CHECK(LineColOf("abc\ndef", 0) == std::make_pair(1, 1));
  CHECK(LineColOf("abc\ndef", 5) == std::make_pair(2, 2));
  CHECK(LineColOf("", 10) == std::make_pair(1, 1));
}

}  // namespace
}  // namespace fl
