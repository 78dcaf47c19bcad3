#include "ccl_under_test/ftccl/reliable_window.h"

namespace fl::ccl::ftccl {

bool RecvWindow::Apply(uint64_t seq) {
  if (Applied(seq)) return false;
  above_.insert(seq);
  // Slide the low mark over the run that is now contiguous: memory stays bounded by how far
  // arrivals run ahead of the first gap.
  while (!above_.empty() && *above_.begin() == low_) {
    above_.erase(above_.begin());
    ++low_;
  }
  return true;
}

}  // namespace fl::ccl::ftccl
