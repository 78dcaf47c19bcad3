// A temporary directory removed with everything in it when the test ends, also when a
// REQUIRE fails (Catch2 unwinds through destructors).
#pragma once

#include <filesystem>
#include <string>

#include <stdlib.h>
#include <catch2/catch.hpp>

namespace fl::reports::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "fl_reports_XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace fl::reports::testing
