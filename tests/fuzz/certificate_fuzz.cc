// Fuzzes the certificate reader (harness/control/certs.h): ReadCertificate on one PEM, then
// the host-name check on what it read.
// Seeds: tests/fuzz/corpus/certificate/ (a lab CA's and an agent's certificate).
#include "harness/control/certs.h"
#include "tests/fuzz/fuzz_util.h"

using namespace fl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto id = harness::ReadCertificate(fuzz::AsText(data, size));
  if (!id.ok()) {
    FL_FUZZ_CHECK(id.status().code() == Code::kInvalidArgument);
    return 0;
  }
  (void)harness::CertNamesHost(*id, "h0");
  return 0;
}
