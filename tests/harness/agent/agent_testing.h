// Helpers of the agent tests: a two-host local lab with one NIC per host (torn down on
// destruction) and the number of entries in a fault journal.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <string>

#include "common/file_util.h"
#include "harness/lab/local_lab.h"
#include "injectors/journal.h"

namespace fl::testing {

// A two-host lab for the test's lifetime; prefix: the start of its name (pid appended).
class TestLab {
 public:
  explicit TestLab(const std::string& dir, const std::string& prefix = "lim") {
    std::string topo = dir + "/lab.yaml";
    REQUIRE(WriteFileAtomic(topo, "name: " + prefix + "\nhosts: 2\nnics_per_host: 1\n").ok());
    auto t = lab::LoadTopology(topo);
    REQUIRE(t.ok());
    name_ = prefix + std::to_string(getpid() % 10000000);
    auto l = lab::LocalLab::Create(*t, name_);
    REQUIRE(l.ok());
    lab_ = std::move(*l);
    REQUIRE(lab_->Provision().ok());
  }
  ~TestLab() { lab_->Teardown().IgnoreError(); }
  const std::string& name() const { return name_; }
  // h0's nic0 has carrier.
  bool NicUp() const {
    std::string cmd = "ip -n " + lab_->NetnsOf("h0") + " -o link show nic0 | grep -q 'state UP'";
    return std::system(cmd.c_str()) == 0;
  }

 private:
  std::string name_;
  std::unique_ptr<lab::LocalLab> lab_;
};

// Entries in the journal directory (FaultJournal's own reading of it).
inline size_t JournalEntries(const std::string& dir) {
  auto entries = injectors::FaultJournal(dir).List();
  REQUIRE(entries.ok());
  return entries->size();
}

}  // namespace fl::testing
