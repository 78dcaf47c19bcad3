// libftccl.so's own entry: which build of ftccl a program loaded. Everything else in the
// library is ftccl itself (ftccl.h); see cmake/FaultlinePackage.cmake.
#include <string>

#include "common/build_info.h"

extern "C" const char* ftccl_version() {
  static const std::string v = std::string(fl::BuildVersion()) +
                               (fl::BuildGitRevision().empty() ? "" : "+") +
                               std::string(fl::BuildGitRevision());
  return v.c_str();
}
