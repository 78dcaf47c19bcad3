#include "harness/agent/fingerprint.h"

#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace fl::harness {
namespace {

// NCCL's version is recorded where a libnccl loads and left out where none does: a host
// without NCCL is not an error.
TEST_CASE("fingerprint: no NCCL library, no NCCL version", "[unit]") {
  const char* old = getenv("FL_NCCL_LIBRARY");
  std::string saved = old ? old : "";
  setenv("FL_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  CHECK(NcclVersion().empty());
  CHECK(CollectFingerprint().nccl_version().empty());
  // The CUDA toolkit's NCCL, where this machine has one: "X.Y.Z", with " +shrink" when it
  // exports ncclCommShrink.
  const char* cuda_nccl = "/usr/local/cuda/lib64/libnccl.so.2";
  if (access(cuda_nccl, R_OK) == 0) {
    setenv("FL_NCCL_LIBRARY", cuda_nccl, 1);
    const std::string v = NcclVersion();
    INFO(v);
    CHECK(v.size() >= 5);
    CHECK(v[0] >= '2');
    CHECK(v.find('.') != std::string::npos);
  }
  if (old) {
    setenv("FL_NCCL_LIBRARY", saved.c_str(), 1);
  } else {
    unsetenv("FL_NCCL_LIBRARY");
  }
}

}  // namespace
}  // namespace fl::harness
